import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, sql, SqliteDialect } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { KyselyDeploySessions } from '../../src/adapters/db/kysely-deploy-sessions.js';
import { migrateToLatest, MIGRATIONS } from '../../src/adapters/db/migrations.js';
import type { Schema } from '../../src/adapters/db/schema.js';
import type { DeploySessions, NewDeploySession, SessionHolding, SessionLimits } from '../../src/application/ports/deploy-sessions.js';
import type { HeldManifest } from '../../src/domain/deploy-session.js';
import { manifestOf, type Digest, type ManifestFile } from '../../src/domain/manifest.js';
import { DeploySessionChanged, SessionUploadedAlready, UploadsOverQuota } from '../../src/domain/errors.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import type { PreviewName } from '../../src/domain/preview.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { InMemoryDeploySessions } from '../support/fakes.js';
import { postgresDatabase, sqliteDatabase } from '../support/databases.js';
import { freshPostgresDatabase, PG_URL } from '../support/postgres.js';

/** A held manifest's files, whichever way it is held: a base by its name. */
const filesOf = (held: HeldManifest | undefined) => (held instanceof PackedManifest ? held.manifest() : held);
const BASE = { release: '20261208T115900' as ReleaseId, digest: 'd'.repeat(64) as Digest };
const at = (minute: number) => new Date(Date.UTC(2026, 11, 8, 12, minute));
const session = (over: Partial<NewDeploySession> = {}): NewDeploySession => ({
  user: 'alice' as Username,
  project: 'docs' as ProjectName,
  preview: undefined,
  keyId: undefined,
  manifest: PackedManifest.pack(
    manifestOf([
      { path: 'index.html', size: 12, digest: 'a'.repeat(64) as Digest },
      { path: 'ünï/cödé "quoted".html', size: 0, digest: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' as Digest },
    ]),
  ),
  unconfirmed: ['a'.repeat(64) as Digest],
  uploadBytes: 12,
  createdAt: at(0),
  expiresAt: at(60),
  ...over,
});
const UNCONFIRMED = ['b'.repeat(64) as Digest, 'c'.repeat(64) as Digest];
/** DEPLOY_SESSIONS_MAX alone, with no quota. */
const limit = (maxPerSigner: number): SessionLimits => ({ maxPerSigner, userMaxBytes: undefined });
/** A revision of what session `id` holds now. */
const revise = async (sessions: DeploySessions, id: string, held: SessionHolding, expiresAt: Date, now: Date, userMaxBytes: number | undefined) =>
  sessions.replaceManifest(id, { holding: held, from: { version: (await sessions.find(id))?.version ?? 0, beforeUploads: true }, expiresAt, now, userMaxBytes });
const holding = (manifest: HeldManifest, unconfirmed: readonly Digest[], uploadBytes = 0): SessionHolding => ({ manifest, unconfirmed, uploadBytes });

/** What every DeploySessions must do: the two real databases and the unit tests' fake. */
function deploySessionsContract(name: string, open: () => Promise<{ sessions: DeploySessions; close(): Promise<void> }>): void {
  describe(`DeploySessions contract: ${name}`, () => {
    const withSessions = (test: (sessions: DeploySessions) => Promise<void>) => async () => {
      const { sessions, close } = await open();
      try {
        await test(sessions);
      } finally {
        await close();
      }
    };

    it('keeps a session whole, manifest and all, until it is closed', withSessions(async (sessions) => {
      const made = session({ preview: 'pr-1' as PreviewName, keyId: '6f1c2d3e-0000-4000-8000-000000000001' });
      const id = (await sessions.open(made, limit(8), at(1)))!;
      expect(id).toMatch(/^[0-9a-f]{32}$/);
      const { manifest, ...found } = (await sessions.find(id))!;
      const { manifest: given, ...rest } = made;
      expect(found).toEqual({ id, ...rest, version: 0 });
      expect(filesOf(manifest)).toEqual(filesOf(given));
      expect(await sessions.close(id)).toBe(true);
      expect(await sessions.find(id)).toBeUndefined();
      expect(await sessions.close(id)).toBe(false);
    }));

    it('replaces an open session\'s manifest and expiry, and only its own; an expired or closed one is not', withSessions(async (sessions) => {
      const id = (await sessions.open(session(), limit(8), at(1)))!;
      const other = (await sessions.open(session(), limit(8), at(1)))!;
      const changed = PackedManifest.pack(manifestOf([{ path: 'a/b.html', size: 7, digest: 'b'.repeat(64) as Digest }]));
      expect(await revise(sessions, id, holding(changed, UNCONFIRMED), at(30), at(2), undefined)).toBe(true);
      const found = (await sessions.find(id))!;
      expect(filesOf(found.manifest)).toEqual(changed.manifest());
      expect(found.unconfirmed).toEqual(UNCONFIRMED);
      expect(found.expiresAt).toEqual(at(30));
      expect(await revise(sessions, id, holding(changed, []), at(30), at(2), undefined)).toBe(true);
      expect((await sessions.find(id))!.unconfirmed).toEqual([]);
      expect(filesOf((await sessions.find(other))!.manifest)).toEqual(filesOf(session().manifest));
      expect((await sessions.find(other))!.unconfirmed).toEqual(session().unconfirmed);
      // Expired (not yet swept): not given a manifest, nor kept alive.
      expect(await revise(sessions, other, holding(changed, UNCONFIRMED), at(90), at(61), undefined)).toBe(false);
      expect((await sessions.find(other))!.expiresAt).toEqual(at(60));
      expect((await sessions.find(other))!.unconfirmed).toEqual(session().unconfirmed);
      await sessions.close(id);
      expect(await revise(sessions, id, holding(changed, UNCONFIRMED), at(40), at(2), undefined)).toBe(false);
      expect(await sessions.find(id)).toBeUndefined();
    }));

    it('keeps unconfirmed objects not known as not known, and a manifest with none as none', withSessions(async (sessions) => {
      const unknown = (await sessions.open(session({ unconfirmed: undefined }), limit(8), at(1)))!;
      const none = (await sessions.open(session({ unconfirmed: [] }), limit(8), at(1)))!;
      expect((await sessions.find(unknown))!.unconfirmed).toBeUndefined();
      expect((await sessions.find(none))!.unconfirmed).toEqual([]);
    }));

    it("keeps a session opened on its base as the base's name, and moves it between that and a manifest of its own", withSessions(async (sessions) => {
      const id = (await sessions.open(session({ manifest: BASE }), limit(8), at(1)))!;
      const other = (await sessions.open(session(), limit(8), at(1)))!;
      // A base's objects are its files: none unconfirmed, whatever the caller says.
      expect((await sessions.find(id))!.manifest).toEqual(BASE);
      expect((await sessions.find(id))!.unconfirmed).toEqual([]);
      const changed = PackedManifest.pack(manifestOf([{ path: 'a/b.html', size: 7, digest: 'b'.repeat(64) as Digest }]));
      expect(await revise(sessions, id, holding(changed, UNCONFIRMED), at(30), at(2), undefined)).toBe(true);
      expect(filesOf((await sessions.find(id))!.manifest)).toEqual(changed.manifest());
      expect((await sessions.find(id))!.unconfirmed).toEqual(UNCONFIRMED);
      const later = { release: '20261208T120100' as ReleaseId, digest: 'e'.repeat(64) as Digest };
      expect(await revise(sessions, id, holding(later, UNCONFIRMED), at(31), at(2), undefined)).toBe(true);
      expect((await sessions.find(id))!.manifest).toEqual(later);
      expect((await sessions.find(id))!.unconfirmed).toEqual([]);
      // Each session's own: the other's manifest is as it opened.
      expect(filesOf((await sessions.find(other))!.manifest)).toEqual(filesOf(session().manifest));
      await sessions.extend(other, at(45));
      expect(filesOf((await sessions.find(other))!.manifest)).toEqual(filesOf(session().manifest));
    }));

    it('opens at most `max` unexpired sessions per user; expired ones and other users do not count', withSessions(async (sessions) => {
      expect(await sessions.open(session({ expiresAt: at(5) }), limit(2), at(1))).toBeDefined();
      expect(await sessions.open(session(), limit(2), at(1))).toBeDefined();
      expect(await sessions.open(session(), limit(2), at(1))).toBeUndefined();
      expect(await sessions.open(session({ user: 'bob' as Username }), limit(2), at(1))).toBeDefined();
      // At minute 10 the first has expired: a place is free.
      expect(await sessions.open(session(), limit(2), at(10))).toBeDefined();
    }));

    it("counts each signer apart: the user's own token, and each deploy key, has `max` of its own", withSessions(async (sessions) => {
      const key = (n: number) => `6f1c2d3e-0000-4000-8000-00000000000${n}`;
      expect(await sessions.open(session({ keyId: key(1), preview: 'pr-1' as PreviewName }), limit(2), at(1))).toBeDefined();
      expect(await sessions.open(session({ keyId: key(1), project: 'blog' as ProjectName }), limit(2), at(1))).toBeDefined();
      expect(await sessions.open(session({ keyId: key(1) }), limit(2), at(1))).toBeUndefined();
      // The key at its limit stops neither its owner nor another key.
      expect(await sessions.open(session(), limit(2), at(1))).toBeDefined();
      expect(await sessions.open(session({ keyId: key(2) }), limit(2), at(1))).toBeDefined();
      expect(await sessions.open(session({ project: 'blog' as ProjectName }), limit(2), at(1))).toBeDefined();
      expect(await sessions.open(session(), limit(2), at(1))).toBeUndefined();
      expect(await sessions.open(session({ keyId: key(2) }), limit(2), at(1))).toBeDefined();
      expect(await sessions.open(session({ keyId: key(2) }), limit(2), at(1))).toBeUndefined();
    }));

    it("lists a user's sessions, oldest first, without their manifests; another user's are not among them", withSessions(async (sessions) => {
      const key = '6f1c2d3e-0000-4000-8000-000000000003';
      const a = (await sessions.open(session({ createdAt: at(2) }), limit(8), at(2)))!;
      const b = (await sessions.open(session({ createdAt: at(1), keyId: key, preview: 'pr-1' as PreviewName, project: 'blog' as ProjectName }), limit(8), at(2)))!;
      await sessions.open(session({ user: 'bob' as Username }), limit(8), at(2));
      const listed = await sessions.listUser('alice' as Username);
      expect(listed).toEqual([
        { id: b, user: 'alice', project: 'blog', preview: 'pr-1', keyId: key, uploadBytes: 12, createdAt: at(1), expiresAt: at(60) },
        { id: a, user: 'alice', project: 'docs', preview: undefined, keyId: undefined, uploadBytes: 12, createdAt: at(2), expiresAt: at(60) },
      ]);
      expect(await sessions.listUser('carol' as Username)).toEqual([]);
    }));

    it("closes a project's key sessions, or one key's, and returns their ids; the owner's own and other projects' stay", withSessions(async (sessions) => {
      const key = (n: number) => `6f1c2d3e-0000-4000-8000-00000000001${n}`;
      const open = async (over: Partial<NewDeploySession>) => (await sessions.open(session(over), limit(8), at(1)))!;
      const k1 = await open({ keyId: key(1) });
      const k1b = await open({ keyId: key(1), preview: 'pr-1' as PreviewName });
      const k2 = await open({ keyId: key(2) });
      const own = await open({});
      const blog = await open({ project: 'blog' as ProjectName, keyId: key(3) });
      const bobs = await open({ user: 'bob' as Username, keyId: key(4) });
      expect((await sessions.closeOpenedByKeys('alice' as Username, 'docs' as ProjectName, key(1))).sort()).toEqual([k1, k1b].sort());
      expect(await sessions.stillOpen([k1, k1b, k2, own, blog, bobs])).toEqual(new Set([k2, own, blog, bobs]));
      expect(await sessions.closeOpenedByKeys('alice' as Username, 'docs' as ProjectName, key(1))).toEqual([]);
      expect(await sessions.closeOpenedByKeys('alice' as Username, 'docs' as ProjectName)).toEqual([k2]);
      expect(await sessions.stillOpen([own, blog, bobs])).toEqual(new Set([own, blog, bobs]));
      // Another user's key of a project of that name is not this user's.
      expect(await sessions.closeOpenedByKeys('alice' as Username, 'docs' as ProjectName, key(4))).toEqual([]);
    }));

    it('moves an expiry, lists the expired, says which ids are still open, and removes a user', withSessions(async (sessions) => {
      const a = (await sessions.open(session({ expiresAt: at(5) }), limit(8), at(1)))!;
      const b = (await sessions.open(session({ expiresAt: at(5) }), limit(8), at(1)))!;
      const c = (await sessions.open(session({ user: 'bob' as Username, expiresAt: at(50) }), limit(8), at(1)))!;
      await sessions.extend(b, at(40));
      expect((await sessions.find(b))?.expiresAt).toEqual(at(40));
      expect(await sessions.expired(at(10))).toEqual([a]);
      expect(await sessions.stillOpen([a, c, 'f'.repeat(32)])).toEqual(new Set([a, c]));
      expect(await sessions.stillOpen([])).toEqual(new Set());
      await sessions.removeUser('alice' as Username);
      expect(await sessions.stillOpen([a, b, c])).toEqual(new Set([c]));
    }));

    it('puts an expiry back only while no other use has moved it since', withSessions(async (sessions) => {
      const id = (await sessions.open(session({ expiresAt: at(60) }), limit(8), at(1)))!;
      await sessions.extend(id, at(70));
      await sessions.extend(id, at(60), at(65));
      expect((await sessions.find(id))?.expiresAt).toEqual(at(70));
      await sessions.extend(id, at(60), at(70));
      expect((await sessions.find(id))?.expiresAt).toEqual(at(60));
    }));

    it("lists a key's unexpired sessions: not its expired ones, nor another key's, nor the user's own", withSessions(async (sessions) => {
      const KEY = '6f1c2d3e-0000-4000-8000-000000000001';
      const first = (await sessions.open(session({ keyId: KEY, expiresAt: at(50) }), limit(8), at(1)))!;
      await sessions.open(session({ keyId: KEY, expiresAt: at(5) }), limit(8), at(1));
      await sessions.open(session({ keyId: '6f1c2d3e-0000-4000-8000-000000000002' }), limit(8), at(1));
      await sessions.open(session(), limit(8), at(1));
      const second = (await sessions.open(session({ keyId: KEY, preview: 'pr-1' as PreviewName }), limit(8), at(1)))!;
      expect((await sessions.openedBy(KEY, at(10))).sort()).toEqual([first, second].sort());
      await sessions.close(first);
      expect(await sessions.openedBy(KEY, at(10))).toEqual([second]);
      expect(await sessions.openedBy('6f1c2d3e-0000-4000-8000-000000000003', at(10))).toEqual([]);
    }));

    it("holds what the user's sessions may upload to the quota at the open: every signer's and unswept expired ones count, another user's do not", withSessions(async (sessions) => {
      const quota = (userMaxBytes: number): SessionLimits => ({ maxPerSigner: 8, userMaxBytes });
      const KEY = '6f1c2d3e-0000-4000-8000-000000000001';
      const own = (await sessions.open(session({ uploadBytes: 40 }), quota(100), at(1)))!;
      await sessions.open(session({ keyId: KEY, uploadBytes: 30, expiresAt: at(2) }), quota(100), at(1));
      await sessions.open(session({ user: 'bob' as Username, uploadBytes: 100 }), quota(100), at(1));
      // Exactly at the quota fits; a byte over is refused, with the total it would come to.
      const refused = sessions.open(session({ uploadBytes: 31 }), quota(100), at(10));
      await expect(refused).rejects.toThrow(UploadsOverQuota);
      await expect(refused).rejects.toMatchObject({ wouldHold: 101, limit: 100 });
      expect((await sessions.listUser('alice' as Username)).length).toBe(2);
      const fits = (await sessions.open(session({ keyId: KEY, uploadBytes: 30 }), quota(100), at(10)))!;
      expect((await sessions.find(fits))?.uploadBytes).toBe(30);
      expect((await sessions.listUser('alice' as Username)).map((s) => s.uploadBytes).sort()).toEqual([30, 30, 40]);
      // A session that may upload nothing (its store holds every object) opens at the quota too.
      await sessions.open(session({ uploadBytes: 0 }), quota(100), at(10));
      // Closing one frees what it may upload; without a quota nothing is refused.
      await sessions.close(own);
      await sessions.open(session({ uploadBytes: 40 }), quota(100), at(10));
      await sessions.open(session({ uploadBytes: 1_000 }), limit(8), at(10));
    }));

    it("judges a session's new holding against the user's other sessions, not its own old one; refused, it stays as it was", withSessions(async (sessions) => {
      const id = (await sessions.open(session({ uploadBytes: 60 }), limit(8), at(1)))!;
      await sessions.open(session({ keyId: '6f1c2d3e-0000-4000-8000-000000000001', uploadBytes: 30 }), limit(8), at(1));
      await sessions.open(session({ user: 'bob' as Username, uploadBytes: 90 }), limit(8), at(1));
      const changed = PackedManifest.pack(manifestOf([{ path: 'b.html', size: 70, digest: 'b'.repeat(64) as Digest }]));
      expect(await revise(sessions, id, holding(changed, ['b'.repeat(64) as Digest], 70), at(30), at(2), 100)).toBe(true);
      expect((await sessions.find(id))?.uploadBytes).toBe(70);
      const refused = revise(sessions, id, holding(session().manifest, UNCONFIRMED, 71), at(40), at(3), 100);
      await expect(refused).rejects.toMatchObject({ wouldHold: 101, limit: 100 });
      const kept = await sessions.find(id);
      expect(kept).toMatchObject({ uploadBytes: 70, unconfirmed: ['b'.repeat(64)], expiresAt: at(30) });
      expect(filesOf(kept?.manifest)).toEqual(changed.manifest());
    }));

    it('replaces only the holding a request read, and no manifest once a batch has begun; refused, nothing changes', withSessions(async (sessions) => {
      const id = (await sessions.open(session(), limit(8), at(1)))!;
      expect((await sessions.find(id))?.version).toBe(0);
      const changed = PackedManifest.pack(manifestOf([{ path: 'b.html', size: 3, digest: 'b'.repeat(64) as Digest }]));
      expect(await sessions.replaceManifest(id, { holding: holding(changed, [], 3), from: { version: 0, beforeUploads: true }, expiresAt: at(30), now: at(2), userMaxBytes: undefined })).toBe(true);
      expect((await sessions.find(id))?.version).toBe(1);
      // A second request that read the first holding: it would undo the replacement.
      await expect(sessions.replaceManifest(id, { holding: holding(session().manifest, [], 9), from: { version: 0, beforeUploads: false }, expiresAt: at(40), now: at(2), userMaxBytes: undefined })).rejects.toThrow(DeploySessionChanged);
      expect(await sessions.beginUploads(id)).toBe(1);
      await expect(sessions.replaceManifest(id, { holding: holding(session().manifest, [], 9), from: { version: 1, beforeUploads: true }, expiresAt: at(40), now: at(2), userMaxBytes: undefined })).rejects.toThrow(SessionUploadedAlready);
      expect(await sessions.find(id)).toMatchObject({ version: 1, uploadBytes: 3, expiresAt: at(30) });
      expect(filesOf((await sessions.find(id))?.manifest)).toEqual(changed.manifest());
      // Objects found missing since join what it may upload, batches or not.
      expect(await sessions.replaceManifest(id, { holding: holding(changed, ['b'.repeat(64) as Digest], 3), from: { version: 1, beforeUploads: false }, expiresAt: at(50), now: at(2), userMaxBytes: undefined })).toBe(true);
      expect(await sessions.beginUploads(id)).toBe(2);
      await sessions.close(id);
      expect(await sessions.beginUploads(id)).toBeUndefined();
    }));

    it('closes the sessions an open supersedes only if it opens: a refused open leaves them', withSessions(async (sessions) => {
      const quota = (userMaxBytes: number): SessionLimits => ({ maxPerSigner: 1, userMaxBytes });
      const idle = (await sessions.open(session({ uploadBytes: 60 }), quota(100), at(1)))!;
      const bobs = (await sessions.open(session({ user: 'bob' as Username, uploadBytes: 60 }), quota(100), at(1)))!;
      await expect(sessions.open(session({ uploadBytes: 101 }), quota(100), at(2), [idle])).rejects.toThrow(UploadsOverQuota);
      // Another user's is not the signer's to close.
      expect(await sessions.open(session({ user: 'carol' as Username }), quota(100), at(2), [bobs])).toBeDefined();
      expect(await sessions.stillOpen([idle, bobs])).toEqual(new Set([idle, bobs]));
      // In its place, its bytes and its place among the signer's free for the new one.
      const next = await sessions.open(session({ uploadBytes: 100 }), quota(100), at(2), [idle]);
      expect(next).toBeDefined();
      expect(await sessions.stillOpen([idle, next!])).toEqual(new Set([next]));
      // Refused at DEPLOYS_SESSIONS_MAX (an expired one counts for nothing there): nothing closed either.
      const dave = (over: Partial<NewDeploySession>) => session({ user: 'dave' as Username, ...over });
      const expired = (await sessions.open(dave({ expiresAt: at(1) }), quota(100), at(0)))!;
      const live = (await sessions.open(dave({ project: 'blog' as ProjectName }), quota(100), at(2)))!;
      expect(await sessions.open(dave({}), quota(100), at(2), [expired])).toBeUndefined();
      expect(await sessions.stillOpen([expired, live])).toEqual(new Set([expired, live]));
    }));

    it('lets one of three opens at the same instant fit under the quota, never two', withSessions(async (sessions) => {
      const quota = { maxPerSigner: 8, userMaxBytes: 100 };
      // A connection each, made beforehand: the first open would otherwise be done before the others connect.
      await Promise.all([1, 2, 3].map(() => sessions.listUser('carol' as Username)));
      const opens = await Promise.allSettled([1, 2, 3].map(() => sessions.open(session({ uploadBytes: 60 }), quota, at(1))));
      expect(opens.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      expect((await sessions.listUser('alice' as Username)).length).toBe(1);
    }));
  });
}

deploySessionsContract('in-memory fake', async () => ({ sessions: new InMemoryDeploySessions(), close: async () => {} }));

deploySessionsContract('sqlite file', async () => {
  const { db, close } = await sqliteDatabase();
  return { sessions: new KyselyDeploySessions(db), close };
});

if (PG_URL) {
  deploySessionsContract('postgresql server', async () => {
    const { db, close } = await postgresDatabase();
    return { sessions: new KyselyDeploySessions(db), close };
  });

  /**
   * A batch's mark and a revision on two replicas: the revision's update waits on the row
   * the batch's uncommitted mark holds, and must be judged on the committed mark, not on
   * what its transaction read before. A revision that read the mark and then updated
   * without it as a condition would land here, over uploads already under way.
   */
  it('postgresql server: a revision waiting on a batch\'s uncommitted mark is refused once the mark commits', async () => {
    const { db, close } = await postgresDatabase();
    try {
      const sessions = new KyselyDeploySessions(db);
      const id = (await sessions.open(session(), limit(8), at(1)))!;
      const changed = PackedManifest.pack(manifestOf([{ path: 'b.html', size: 3, digest: 'b'.repeat(64) as Digest }]));
      await db.connection().execute(async (batch) => {
        await sql`begin`.execute(batch);
        await sql`update deploy_sessions set uploads_begun = 1 where id = ${id}`.execute(batch);
        const revision = sessions.replaceManifest(id, { holding: holding(changed, [], 3), from: { version: 0, beforeUploads: true }, expiresAt: at(30), now: at(2), userMaxBytes: undefined });
        const outcome = revision.then(() => 'replaced', (error: unknown) => error);
        const waiting = async () => Number((await sql<{ n: string }>`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(db)).rows[0]!.n);
        for (let tries = 0; (await waiting()) === 0; tries++) {
          if (tries > 500) throw new Error('the revision never waited on the row');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        await sql`commit`.execute(batch);
        expect(await outcome).toBeInstanceOf(SessionUploadedAlready);
      });
      expect(await sessions.find(id)).toMatchObject({ version: 0, uploadBytes: 12, expiresAt: at(60) });
      expect(filesOf((await sessions.find(id))?.manifest)).toEqual(filesOf(session().manifest));
    } finally {
      await close();
    }
  });
}

/**
 * Where the databases keep a session's manifest (a row of its own, or none for a base):
 * every way a session ends takes its manifest with it.
 */
function manifestRowsTest(name: string, open: () => Promise<{ db: Kysely<Schema>; close(): Promise<void> }>): void {
  it(`${name}: a session's manifest is a row of its own, none for a base, and goes with the session however it ends`, async () => {
    const { db, close } = await open();
    try {
      const sessions = new KyselyDeploySessions(db);
      const rows = async () => (await db.selectFrom('deploy_session_manifests').select('id').orderBy('id').execute()).map((r) => r.id);
      const key = '6f1c2d3e-0000-4000-8000-000000000001';
      const closed = (await sessions.open(session(), limit(8), at(1)))!;
      const keyed = (await sessions.open(session({ keyId: key }), limit(8), at(1)))!;
      const bobs = (await sessions.open(session({ user: 'bob' as Username }), limit(8), at(1)))!;
      const based = (await sessions.open(session({ manifest: BASE }), limit(8), at(1)))!;
      const rebased = (await sessions.open(session(), limit(8), at(1)))!;
      expect(await rows()).toEqual([closed, keyed, bobs, rebased].sort());
      await revise(sessions, rebased, holding(BASE, []), at(30), at(2), undefined);
      await revise(sessions, based, holding(session().manifest, []), at(30), at(2), undefined);
      expect(await rows()).toEqual([closed, keyed, bobs, based].sort());
      await sessions.close(closed);
      await sessions.closeOpenedByKeys('alice' as Username, 'docs' as ProjectName, key);
      expect(await rows()).toEqual([bobs, based].sort());
      await sessions.removeUser('bob' as Username);
      await sessions.removeUser('alice' as Username);
      expect(await rows()).toEqual([]);
      expect(await sessions.stillOpen([closed, keyed, bobs, based, rebased])).toEqual(new Set());
    } finally {
      await close();
    }
  });
}

describe('deploy session manifests in the databases', () => {
  manifestRowsTest('sqlite file', sqliteDatabase);
  if (PG_URL) manifestRowsTest('postgresql server', postgresDatabase);
});

/**
 * The upgrade that packed sessions' manifests: a session a client opened before it is
 * read back whole after it, on both databases.
 */
function upgradeTest(name: string, open: () => Promise<{ db: Kysely<unknown>; close(): Promise<void> }>): void {
  it(`${name}: a session opened before manifests were packed carries on after the upgrade`, async () => {
    const { db, close } = await open();
    try {
      const before = Object.fromEntries(Object.entries(MIGRATIONS).filter(([migration]) => migration < '2026-12-09'));
      const { error } = await new Migrator({ db, provider: { getMigrations: async () => before } }).migrateToLatest();
      expect(error).toBeUndefined();
      const files = [
        ['index.html', 12, 'a'.repeat(64)],
        ['ünï/cödé "quoted".html', 0, 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
        ['b.html', 3, 'b'.repeat(64)],
      ];
      const old = { id: 'c'.repeat(32), username: 'alice', project: 'docs', preview: null, files: JSON.stringify(files), created_at: at(0).toISOString(), expires_at: at(60).toISOString() };
      await (db as Kysely<{ deploy_sessions: typeof old }>).insertInto('deploy_sessions').values(old).execute();

      await migrateToLatest(db);
      const found = await new KyselyDeploySessions(db as Kysely<Schema>).find(old.id);
      expect(filesOf(found?.manifest)).toEqual(manifestOf(files.map(([path, size, digest]) => ({ path, size, digest }) as ManifestFile)));
      expect((found?.manifest as PackedManifest).sizeOf('b'.repeat(64))).toBe(3);
      // Which objects it lacked is not known: it may upload every one, and counts them all.
      expect(found?.uploadBytes).toBe(15);
    } finally {
      await close();
    }
  });
}

/**
 * The upgrade that began counting what sessions may upload (010): each session open at it
 * counts from what it holds, so the first open after it is judged against them.
 */
function uploadBytesUpgradeTest(name: string, open: () => Promise<{ db: Kysely<unknown>; close(): Promise<void> }>): void {
  it(`${name}: sessions open at the upgrade that counts uploads count what they may upload`, async () => {
    const { db, close } = await open();
    try {
      const before = Object.fromEntries(Object.entries(MIGRATIONS).filter(([migration]) => migration < '2026-12-23'));
      expect((await new Migrator({ db, provider: { getMigrations: async () => before } }).migrateToLatest()).error).toBeUndefined();
      const packed = PackedManifest.pack(
        manifestOf([
          { path: 'a.html', size: 12, digest: 'a'.repeat(64) as Digest },
          { path: 'b.html', size: 3, digest: 'b'.repeat(64) as Digest },
        ]),
      ).packed;
      const row = (id: string, base: string | null) => ({ id, username: 'alice', project: 'docs', preview: null, key_id: null, base_release: base, base_digest: base && 'd'.repeat(64), created_at: at(0).toISOString(), expires_at: at(60).toISOString() });
      const old = db as Kysely<{ deploy_sessions: ReturnType<typeof row>; deploy_session_manifests: { id: string; manifest: Uint8Array; unconfirmed: Uint8Array | null } }>;
      await old.insertInto('deploy_sessions').values([row('a'.repeat(32), null), row('b'.repeat(32), null), row('c'.repeat(32), BASE.release)]).execute();
      await old
        .insertInto('deploy_session_manifests')
        .values([
          { id: 'a'.repeat(32), manifest: packed, unconfirmed: null },
          { id: 'b'.repeat(32), manifest: packed, unconfirmed: Buffer.from('b'.repeat(64), 'hex') },
        ])
        .execute();
      const record = { username: 'alice', project: 'docs', release: BASE.release, bytes: 7, files: 1, created_at: at(0).toISOString(), preview: null };
      await (db as Kysely<{ deploys: typeof record }>).insertInto('deploys').values(record).execute();

      await migrateToLatest(db);
      const sessions = new KyselyDeploySessions(db as Kysely<Schema>);
      // Before it a batch could bring any object of the manifest, whatever was missing: each
      // counts them all; one holding its base, that release's recorded bytes.
      expect((await sessions.listUser('alice' as Username)).map((s) => [s.id[0], s.uploadBytes])).toEqual([['a', 15], ['b', 15], ['c', 7]]);
      await expect(sessions.open(session({ uploadBytes: 64 }), { maxPerSigner: 8, userMaxBytes: 100 }, at(1))).rejects.toThrow(UploadsOverQuota);
      expect(await sessions.open(session({ uploadBytes: 63 }), { maxPerSigner: 8, userMaxBytes: 100 }, at(1))).toBeDefined();
      expect((await sessions.find('a'.repeat(32)))?.version).toBe(0);
    } finally {
      await close();
    }
  });
}

/** An upgrade that fails part-way (here: a row it cannot read) leaves the table as it was, and the next start finishes it. */
function failedUpgradeTest(name: string, open: () => Promise<{ db: Kysely<unknown>; close(): Promise<void> }>): void {
  it(`${name}: an upgrade cut short changes nothing, and the next one completes`, async () => {
    const { db, close } = await open();
    try {
      const before = Object.fromEntries(Object.entries(MIGRATIONS).filter(([migration]) => migration < '2026-12-09'));
      expect((await new Migrator({ db, provider: { getMigrations: async () => before } }).migrateToLatest()).error).toBeUndefined();
      const row = (id: string, files: string) => ({ id, username: 'alice', project: 'docs', preview: null, files, created_at: at(0).toISOString(), expires_at: at(60).toISOString() });
      const table = (db as Kysely<{ deploy_sessions: ReturnType<typeof row> }>).insertInto('deploy_sessions');
      await table.values([row('a'.repeat(32), JSON.stringify([['a.html', 1, 'a'.repeat(64)]])), row('b'.repeat(32), '[["cut short')]).execute();

      await expect(migrateToLatest(db)).rejects.toThrow(/migration 2026-12-09-005-packed-session-manifests failed/);
      const columns = async () => (await db.introspection.getTables()).find((t) => t.name === 'deploy_sessions')!.columns.map((c) => c.name).sort();
      expect(await columns()).toContain('files');
      expect(await columns()).not.toContain('manifest');

      await (db as Kysely<{ deploy_sessions: { id: string } }>).deleteFrom('deploy_sessions').where('id', '=', 'b'.repeat(32)).execute();
      await migrateToLatest(db);
      expect(await columns()).not.toContain('files');
      const found = await new KyselyDeploySessions(db as Kysely<Schema>).find('a'.repeat(32));
      expect((found?.manifest as PackedManifest).sizeOf('a'.repeat(64))).toBe(1);
    } finally {
      await close();
    }
  });
}

/** The upgrade that moved manifests apart (008) fails whole on a row it cannot move, and the next start completes it. */
function failedSeparationTest(name: string, open: () => Promise<{ db: Kysely<unknown>; close(): Promise<void> }>): void {
  it(`${name}: moving manifests apart, cut short, changes nothing, and the next start completes it`, async () => {
    const { db, close } = await open();
    try {
      const before = Object.fromEntries(Object.entries(MIGRATIONS).filter(([migration]) => migration < '2026-12-21'));
      expect((await new Migrator({ db, provider: { getMigrations: async () => before } }).migrateToLatest()).error).toBeUndefined();
      const packed = PackedManifest.pack(manifestOf([{ path: 'a.html', size: 1, digest: 'a'.repeat(64) as Digest }])).packed;
      const row = (id: string, manifest: Uint8Array | null) => ({ id, username: 'alice', project: 'docs', preview: null, key_id: null, manifest, created_at: at(0).toISOString(), expires_at: at(60).toISOString() });
      // A row without a manifest: no version wrote one, but one the move cannot take.
      await (db as Kysely<{ deploy_sessions: ReturnType<typeof row> }>).insertInto('deploy_sessions').values([row('a'.repeat(32), packed), row('b'.repeat(32), null)]).execute();

      await expect(migrateToLatest(db)).rejects.toThrow(/migration 2026-12-21-008-session-manifests-apart failed/);
      const tables = async () => Object.fromEntries((await db.introspection.getTables()).map((t) => [t.name, t.columns.map((c) => c.name).sort()]));
      expect((await tables()).deploy_sessions).toContain('manifest');
      expect((await tables()).deploy_sessions).not.toContain('base_release');
      expect(await tables()).not.toHaveProperty('deploy_session_manifests');

      await (db as Kysely<{ deploy_sessions: { id: string } }>).deleteFrom('deploy_sessions').where('id', '=', 'b'.repeat(32)).execute();
      await migrateToLatest(db);
      expect((await tables()).deploy_sessions).not.toContain('manifest');
      const found = await new KyselyDeploySessions(db as Kysely<Schema>).find('a'.repeat(32));
      expect((found?.manifest as PackedManifest).sizeOf('a'.repeat(64))).toBe(1);
      // Which of its objects no probe found was not kept then: not known, so the publish confirms them all.
      expect(found?.unconfirmed).toBeUndefined();
    } finally {
      await close();
    }
  });
}

describe('deploy sessions across the upgrades of their manifests', () => {
  const sqlite = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sitedrop-db-'));
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SQLite(join(dir, 'sitedrop.db')) }) });
    return { db, close: async () => (await db.destroy(), await rm(dir, { recursive: true, force: true })) };
  };
  const postgres = async () => {
    const database = await freshPostgresDatabase();
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url }) }) });
    return { db, close: async () => (await db.destroy(), await database.drop()) };
  };
  upgradeTest('sqlite file', sqlite);
  uploadBytesUpgradeTest('sqlite file', sqlite);
  failedUpgradeTest('sqlite file', sqlite);
  failedSeparationTest('sqlite file', sqlite);
  if (PG_URL) {
    upgradeTest('postgresql server', postgres);
    uploadBytesUpgradeTest('postgresql server', postgres);
    failedUpgradeTest('postgresql server', postgres);
    failedSeparationTest('postgresql server', postgres);
  }
});
