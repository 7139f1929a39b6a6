import { randomBytes } from 'node:crypto';
import { inject, injectable } from 'inversify';
import { PostgresAdapter, sql, type Kysely, type Selectable } from 'kysely';
import type { DeploySession, DeploySessions, DeploySessionSummary, NewDeploySession, HoldingChange, SessionLimits } from '../../application/ports/deploy-sessions.js';
import { holdsBase, type HeldManifest } from '../../domain/deploy-session.js';
import { DeploySessionChanged, SessionUploadedAlready } from '../../domain/errors.js';
import type { Digest } from '../../domain/manifest.js';
import { PackedManifest } from '../../domain/packed-manifest.js';
import type { PreviewName } from '../../domain/preview.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { ReleaseId } from '../../domain/release-id.js';
import { assertUploadsFit } from '../../domain/storage-quota.js';
import type { Username } from '../../domain/username.js';
import { advisoryKey } from './advisory-key.js';
import { DATABASE } from './kysely-token-store.js';
import { packDigests, unpackDigests } from './session-digests.js';
import type { DeploySessionsTable, Schema } from './schema.js';

const summaryOf = (row: Selectable<DeploySessionsTable>): DeploySessionSummary => ({
  id: row.id,
  user: row.username as Username,
  project: row.project as ProjectName,
  preview: (row.preview ?? undefined) as PreviewName | undefined,
  keyId: row.key_id ?? undefined,
  uploadBytes: Number(row.upload_bytes),
  createdAt: new Date(row.created_at),
  expiresAt: new Date(row.expires_at),
});

/** The signer has DEPLOY_SESSIONS_MAX open: the open's transaction is rolled back whole. */
class SignerAtLimit extends Error {}

const baseOf = (held: HeldManifest) => (holdsBase(held) ? held : undefined);

/**
 * Deploy sessions in SQLite or PostgreSQL; a manifest held packed (packed-manifest.ts) is
 * a row of its own, a base held by name the session's base columns (schema.ts).
 */
@injectable()
export class KyselyDeploySessions implements DeploySessions {
  constructor(@inject(DATABASE) private readonly db: Kysely<Schema>) {}

  async open(session: NewDeploySession, limits: SessionLimits, now: Date, superseding: readonly string[] = []): Promise<string | undefined> {
    return this.db
      .transaction()
      .execute(async (trx) => {
        await judgedOneAtATime(trx, session.user);
        if (superseding.length > 0) await trx.deleteFrom('deploy_sessions').where('id', 'in', superseding).where('username', '=', session.user).execute();
        assertUploadsFit(await uploadsHeld(trx, session.user), session.uploadBytes, limits.userMaxBytes);
        const id = await this.openRow(trx, session, limits.maxPerSigner, now);
        // Thrown, so that the sessions it would have superseded are not closed either.
        if (id === undefined) throw new SignerAtLimit();
        await this.keepManifest(trx, id, session.manifest, session.unconfirmed);
        return id;
      })
      .catch((error: unknown) => {
        if (error instanceof SignerAtLimit) return undefined;
        throw error;
      });
  }

  private async openRow(db: Kysely<Schema>, session: NewDeploySession, max: number, now: Date): Promise<string | undefined> {
    const id = randomBytes(16).toString('hex');
    const base = baseOf(session.manifest);
    // One statement, the count and the insert. The signer (domain sameSigner): the user's own token, or that one key.
    const result = await db
      .insertInto('deploy_sessions')
      .columns(['id', 'username', 'project', 'preview', 'key_id', 'base_release', 'base_digest', 'upload_bytes', 'created_at', 'expires_at'])
      .expression(
        db
          .selectNoFrom([
            sql<string>`${id}`.as('id'),
            sql<string>`${session.user}`.as('username'),
            sql<string>`${session.project}`.as('project'),
            sql<string | null>`${session.preview ?? null}`.as('preview'),
            sql<string | null>`${session.keyId ?? null}`.as('key_id'),
            sql<string | null>`${base?.release ?? null}`.as('base_release'),
            sql<string | null>`${base?.digest ?? null}`.as('base_digest'),
            sql<number>`${session.uploadBytes}`.as('upload_bytes'),
            sql<string>`${session.createdAt.toISOString()}`.as('created_at'),
            sql<string>`${session.expiresAt.toISOString()}`.as('expires_at'),
          ])
          .where((eb) =>
            eb(
              eb
                .selectFrom('deploy_sessions')
                .select(eb.fn.countAll().as('n'))
                .where('username', '=', session.user)
                .where('key_id', session.keyId === undefined ? 'is' : '=', session.keyId ?? null)
                .where('expires_at', '>', now.toISOString()),
              '<',
              max,
            ),
          ),
      )
      .executeTakeFirst();
    return result.numInsertedOrUpdatedRows === 1n ? id : undefined;
  }

  /**
   * A manifest held packed goes in a row of its own, with its unconfirmed objects; a base
   * is named in the session's row already, and its objects are its files.
   */
  private async keepManifest(db: Kysely<Schema>, id: string, manifest: HeldManifest, unconfirmed: readonly Digest[] | undefined): Promise<void> {
    if (holdsBase(manifest)) return;
    const digests = unconfirmed === undefined ? null : packDigests(unconfirmed);
    await db
      .insertInto('deploy_session_manifests')
      .values({ id, manifest: sql<Uint8Array>`${manifest.packed}`, unconfirmed: sql<Uint8Array | null>`${digests}` })
      .execute();
  }

  async find(id: string): Promise<DeploySession | undefined> {
    const row = await this.db
      .selectFrom('deploy_sessions as s')
      .leftJoin('deploy_session_manifests as m', 'm.id', 's.id')
      .selectAll('s')
      .select(['m.manifest', 'm.unconfirmed'])
      .where('s.id', '=', id)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    if (row.manifest !== null) {
      const unconfirmed = row.unconfirmed === null ? undefined : unpackDigests(row.unconfirmed);
      return { ...summaryOf(row), manifest: PackedManifest.from(row.manifest), unconfirmed, version: row.holding_version };
    }
    if (row.base_release === null || row.base_digest === null) throw new Error(`deploy session ${id} holds no manifest`);
    return { ...summaryOf(row), manifest: { release: row.base_release as ReleaseId, digest: row.base_digest as Digest }, unconfirmed: [], version: row.holding_version };
  }

  async listUser(user: Username): Promise<DeploySessionSummary[]> {
    const rows = await this.db.selectFrom('deploy_sessions').selectAll().where('username', '=', user).orderBy('created_at').orderBy('id').execute();
    return rows.map(summaryOf);
  }

  async closeOpenedByKeys(user: Username, project: ProjectName, keyId?: string): Promise<string[]> {
    let closing = this.db.deleteFrom('deploy_sessions').where('username', '=', user).where('project', '=', project);
    closing = keyId === undefined ? closing.where('key_id', 'is not', null) : closing.where('key_id', '=', keyId);
    const rows = await closing.returning('id').execute();
    return rows.map((r) => r.id);
  }

  async replaceManifest(id: string, { holding, from, expiresAt, now, userMaxBytes }: HoldingChange): Promise<boolean> {
    const base = baseOf(holding.manifest);
    return this.db.transaction().execute(async (trx) => {
      // Not an expired one the sweep has not reached yet: its uploads may be going already.
      const found = await trx.selectFrom('deploy_sessions').select('username').where('id', '=', id).where('expires_at', '>', now.toISOString()).executeTakeFirst();
      if (found === undefined) return false;
      await judgedOneAtATime(trx, found.username as Username);
      assertUploadsFit(await uploadsHeld(trx, found.username as Username, id), holding.uploadBytes, userMaxBytes);
      // One statement with its conditions: PostgreSQL judges them again after a batch's
      // beginUploads on the same row commits, which no lock of the user's holds back.
      let replacing = trx
        .updateTable('deploy_sessions')
        .set({ base_release: base?.release ?? null, base_digest: base?.digest ?? null, upload_bytes: holding.uploadBytes, holding_version: from.version + 1, expires_at: expiresAt.toISOString() })
        .where('id', '=', id)
        .where('holding_version', '=', from.version);
      if (from.beforeUploads) replacing = replacing.where('uploads_begun', '=', 0);
      if ((await replacing.executeTakeFirst()).numUpdatedRows === 0n) {
        const current = await trx.selectFrom('deploy_sessions').select(['holding_version', 'uploads_begun']).where('id', '=', id).executeTakeFirst();
        // Closed meanwhile (a cancel between the look and the update): as not open.
        if (current === undefined) return false;
        throw from.beforeUploads && current.uploads_begun !== 0 ? new SessionUploadedAlready() : new DeploySessionChanged();
      }
      await trx.deleteFrom('deploy_session_manifests').where('id', '=', id).execute();
      await this.keepManifest(trx, id, holding.manifest, holding.unconfirmed);
      return true;
    });
  }

  async beginUploads(id: string): Promise<number | undefined> {
    const row = await this.db.updateTable('deploy_sessions').set({ uploads_begun: 1 }).where('id', '=', id).returning('holding_version').executeTakeFirst();
    return row?.holding_version;
  }

  async extend(id: string, expiresAt: Date, ifStill?: Date): Promise<void> {
    let moving = this.db.updateTable('deploy_sessions').set({ expires_at: expiresAt.toISOString() }).where('id', '=', id);
    if (ifStill !== undefined) moving = moving.where('expires_at', '=', ifStill.toISOString());
    await moving.execute();
  }

  async close(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('deploy_sessions').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async expired(now: Date): Promise<string[]> {
    const rows = await this.db.selectFrom('deploy_sessions').select('id').where('expires_at', '<=', now.toISOString()).execute();
    return rows.map((r) => r.id);
  }

  async openedBy(keyId: string, now: Date): Promise<string[]> {
    const rows = await this.db.selectFrom('deploy_sessions').select('id').where('key_id', '=', keyId).where('expires_at', '>', now.toISOString()).execute();
    return rows.map((r) => r.id);
  }

  async stillOpen(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db.selectFrom('deploy_sessions').select('id').where('id', 'in', ids).execute();
    return new Set(rows.map((r) => r.id));
  }

  async removeUser(user: Username): Promise<void> {
    await this.db.deleteFrom('deploy_sessions').where('username', '=', user).execute();
  }
}

/**
 * The user's sessions are judged (their count, their uploads) one transaction at a time,
 * on every replica: PostgreSQL's READ COMMITTED would let two see the same total and both
 * go in. SQLite runs one transaction at a time already.
 */
async function judgedOneAtATime(trx: Kysely<Schema>, user: Username): Promise<void> {
  if (trx.getExecutor().adapter instanceof PostgresAdapter) await sql`select pg_advisory_xact_lock(${advisoryKey(`sessions:${user}`)}::bigint)`.execute(trx);
}

/** What the user's sessions (but `except`) may upload between them: expired ones too, until the sweep takes their uploads. */
async function uploadsHeld(trx: Kysely<Schema>, user: Username, except?: string): Promise<number> {
  let sessions = trx.selectFrom('deploy_sessions').select((eb) => eb.fn.sum<string | number | null>('upload_bytes').as('held')).where('username', '=', user);
  if (except !== undefined) sessions = sessions.where('id', '<>', except);
  const { held } = await sessions.executeTakeFirstOrThrow();
  return Number(held ?? 0);
}
