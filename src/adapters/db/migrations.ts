import { type Kysely, type Migration, Migrator, PostgresAdapter, sql } from 'kysely';
import { manifestOf, type Digest } from '../../domain/manifest.js';
import { PackedManifest } from '../../domain/packed-manifest.js';
import type { Schema } from './schema.js';

/** Kept in code, not files, so the build carries them and both backends run the same ones. */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '2026-11-23-001-users': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('users')
        .addColumn('username', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('token_hash', 'char(64)', (c) => c.notNull().unique())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
    },
  },
  '2026-11-23-002-deploys': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('deploys')
        .addColumn('username', 'varchar(64)', (c) => c.notNull())
        .addColumn('project', 'varchar(64)', (c) => c.notNull())
        .addColumn('release', 'varchar(15)', (c) => c.notNull())
        .addColumn('bytes', 'bigint', (c) => c.notNull())
        .addColumn('files', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('deploys_pk', ['username', 'project', 'release'])
        .execute();
    },
  },
  '2026-12-01-003-deploy-keys': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('deploy_keys')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('username', 'varchar(64)', (c) => c.notNull())
        .addColumn('project', 'varchar(64)', (c) => c.notNull())
        .addColumn('name', 'varchar(64)', (c) => c.notNull())
        .addColumn('scope', 'varchar(16)', (c) => c.notNull())
        .addColumn('token_hash', 'char(64)', (c) => c.notNull().unique())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('expires_at', 'varchar(32)')
        .addColumn('last_used_at', 'varchar(32)')
        .execute();
      await db.schema.createIndex('deploy_keys_project').on('deploy_keys').columns(['username', 'project']).execute();
    },
  },
  '2026-12-08-004-deploy-sessions': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('deploy_sessions')
        .addColumn('id', 'char(32)', (c) => c.primaryKey())
        .addColumn('username', 'varchar(64)', (c) => c.notNull())
        .addColumn('project', 'varchar(64)', (c) => c.notNull())
        .addColumn('preview', 'varchar(64)')
        // JSON: [[path, size, digest], ...]; tens of thousands of files are a few MB.
        .addColumn('files', 'text', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('deploy_sessions_user').on('deploy_sessions').columns(['username', 'expires_at']).execute();
      await db.schema.createIndex('deploy_sessions_expiry').on('deploy_sessions').column('expires_at').execute();
    },
  },
  // The manifest packed, not JSON: each of a session's requests read and parsed a few MB
  // of JSON into 40,000 objects, which the heap kept long after (docs/performance.md).
  // Sessions open at the upgrade are converted, one at a time, so their clients carry on.
  // All or nothing, on SQLite too (kysely runs SQLite's migrations outside a transaction):
  // a conversion cut short must not leave a column behind that the next start trips on.
  // Replicas upgrade together (README): an older one cannot read the new column.
  '2026-12-09-005-packed-session-manifests': {
    up: (db: Kysely<unknown>) => (db.isTransaction ? packSessionManifests(db) : db.transaction().execute(packSessionManifests)),
  },
  // Which releases were deployed for a preview (a plain rollback never goes back to one),
  // and which key opened a session (a key's sessions are its own, closed when it goes).
  // Both null for what came before: older releases count as live history.
  '2026-12-10-006-preview-releases-and-session-keys': {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('deploys').addColumn('preview', 'varchar(64)').execute();
      await db.schema.alterTable('deploy_sessions').addColumn('key_id', 'varchar(36)').execute();
    },
  },
  // Custom domains: a claim per (user, project, domain); the partial unique index lets
  // any number of projects claim a domain and at most one have it verified, even when two race.
  '2026-12-20-007-domains': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('domains')
        .addColumn('username', 'varchar(64)', (c) => c.notNull())
        .addColumn('project', 'varchar(64)', (c) => c.notNull())
        .addColumn('domain', 'varchar(253)', (c) => c.notNull())
        .addColumn('challenge', 'varchar(64)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('verified_at', 'varchar(32)')
        .addPrimaryKeyConstraint('domains_pk', ['username', 'project', 'domain'])
        .execute();
      await db.schema.createIndex('domains_domain').on('domains').column('domain').execute();
      await db.schema.createIndex('domains_verified').on('domains').column('domain').unique().where(sql.ref('verified_at'), 'is not', null).execute();
    },
  },
  // A session's manifest in a table of its own, none while the session holds its base by
  // name (domain HeldManifest; schema.ts says why). All or nothing, as 005 is.
  '2026-12-21-008-session-manifests-apart': {
    up: (db: Kysely<unknown>) => (db.isTransaction ? separateSessionManifests(db) : db.transaction().execute(separateSessionManifests)),
  },
  // The objects a session's manifest named and no probe found (schema.ts). Null for the
  // sessions open at the upgrade: not known, so their publish confirms every object.
  '2026-12-22-009-unconfirmed-session-objects': {
    async up(db: Kysely<unknown>) {
      const binary = binaryType(db);
      await db.schema.alterTable('deploy_session_manifests').addColumn('unconfirmed', binary).execute();
    },
  },
  // What each session may upload, which USER_MAX_BYTES holds the user's open sessions to,
  // which holding it is, and whether a batch has begun (schema.ts). The sessions open at
  // the upgrade count what a batch could bring them before it: any object of their
  // manifest (for one holding its base by name, that release's recorded bytes). All or
  // nothing, as 005 is.
  '2026-12-23-010-session-upload-bytes': {
    up: (db: Kysely<unknown>) => (db.isTransaction ? countSessionUploads(db) : db.transaction().execute(countSessionUploads)),
  },
};

async function countSessionUploads(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('deploy_sessions').addColumn('upload_bytes', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('deploy_sessions').addColumn('holding_version', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('deploy_sessions').addColumn('uploads_begun', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  const sessions = db as Kysely<Pick<Schema, 'deploy_sessions' | 'deploy_session_manifests' | 'deploys'>>;
  for (const { id } of await sessions.selectFrom('deploy_session_manifests').select('id').execute()) {
    const { manifest } = await sessions.selectFrom('deploy_session_manifests').select('manifest').where('id', '=', id).executeTakeFirstOrThrow();
    await sessions.updateTable('deploy_sessions').set({ upload_bytes: PackedManifest.from(manifest).objectBytes() }).where('id', '=', id).execute();
  }
  const based = await sessions.selectFrom('deploy_sessions').select(['id', 'username', 'project', 'base_release']).where('base_release', 'is not', null).execute();
  for (const { id, username, project, base_release } of based) {
    const recorded = await sessions.selectFrom('deploys').select('bytes').where('username', '=', username).where('project', '=', project).where('release', '=', base_release!).executeTakeFirst();
    if (recorded !== undefined) await sessions.updateTable('deploy_sessions').set({ upload_bytes: Number(recorded.bytes) }).where('id', '=', id).execute();
  }
}

async function separateSessionManifests(db: Kysely<unknown>): Promise<void> {
  const binary = binaryType(db);
  await db.schema
    .createTable('deploy_session_manifests')
    .addColumn('id', 'char(32)', (c) => c.primaryKey().references('deploy_sessions.id').onDelete('cascade'))
    .addColumn('manifest', binary, (c) => c.notNull())
    .execute();
  await sql`insert into deploy_session_manifests (id, manifest) select id, manifest from deploy_sessions`.execute(db);
  await db.schema.alterTable('deploy_sessions').dropColumn('manifest').execute();
  await db.schema.alterTable('deploy_sessions').addColumn('base_release', 'varchar(15)').execute();
  await db.schema.alterTable('deploy_sessions').addColumn('base_digest', 'char(64)').execute();
}

async function packSessionManifests(db: Kysely<unknown>): Promise<void> {
  const binary = binaryType(db);
  await db.schema.alterTable('deploy_sessions').addColumn('manifest', binary).execute();
  const sessions = db as Kysely<{ deploy_sessions: { id: string; files: string; manifest: Uint8Array | null } }>;
  for (const { id } of await sessions.selectFrom('deploy_sessions').select('id').execute()) {
    const { files } = await sessions.selectFrom('deploy_sessions').select('files').where('id', '=', id).executeTakeFirstOrThrow();
    const entries = (JSON.parse(files) as [string, number, Digest][]).map(([path, size, digest]) => ({ path, size, digest }));
    await sessions.updateTable('deploy_sessions').set({ manifest: PackedManifest.pack(manifestOf(entries)).packed }).where('id', '=', id).execute();
  }
  await db.schema.alterTable('deploy_sessions').dropColumn('files').execute();
}

export async function migrateToLatest(db: Kysely<unknown>): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: () => Promise.resolve(MIGRATIONS) } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    const message = (error as Error).message ?? String(error);
    throw new Error(failed ? `migration ${failed} failed: ${message}` : message, { cause: error });
  }
}

/** A column of bytes: PostgreSQL's bytea, SQLite's blob. */
function binaryType(db: Kysely<unknown>): 'bytea' | 'blob' {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'bytea' : 'blob';
}
