import { describe, expect, it } from 'vitest';
import { CancelDeploySession } from '../../src/application/cancel-deploy-session.js';
import { CreateDeployKey } from '../../src/application/create-deploy-key.js';
import { DeleteProject } from '../../src/application/delete-project.js';
import { DeploySessionAccess } from '../../src/application/deploy-session-access.js';
import { ExpireDeploySessions } from '../../src/application/expire-deploy-sessions.js';
import { OpenDeploySession } from '../../src/application/open-deploy-session.js';
import { PruneReleases } from '../../src/application/prune-releases.js';
import { PublishDeploySession } from '../../src/application/publish-deploy-session.js';
import { PublishRelease } from '../../src/application/publish-release.js';
import { RevokeDeployKey } from '../../src/application/revoke-deploy-key.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { SUPERSEDE_AFTER_IDLE_SECONDS } from '../../src/domain/deploy-session.js';
import { DeploySessionNotFound, ManifestRejected, Unauthorized } from '../../src/domain/errors.js';
import { readParsedManifest, type ManifestFile } from '../../src/domain/manifest.js';
import type { Token } from '../../src/domain/token.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { FixedClock, InMemoryDeployKeyStore, InMemoryDeployRecords, InMemoryDeploys, InMemoryDeploySessions, InMemoryPreviewLinks, InMemoryTokenStore, SequenceTokenGenerator, InMemoryWebServer, QueuedPrecompression } from '../support/fakes.js';
import { sha256 } from '../support/sha256.js';
import { InMemoryDomainLinks, InMemoryDomainStore } from '../support/domain-fakes.js';

const alice = 'alice' as Username;
const TOKEN = 'A'.repeat(32);
const fileOf = (path: string, content: string): ManifestFile => ({ path, size: Buffer.byteLength(content), digest: sha256(content) });

async function world() {
  const tokens = new InMemoryTokenStore();
  await tokens.save(alice, TOKEN as Token);
  const disk = new InMemoryDeploys();
  for (const content of ['one', 'two', 'three']) disk.storeOf(alice).set(sha256(content), content);
  // The project's own release holds them too: a deploy key's session draws on that alone.
  disk.tree.set('alice/docs', new Map([['20261123T120000' as ReleaseId, ['one', 'two', 'three'].map((content) => ({ path: `${content}.txt`, content }))]]));
  const clock = new FixedClock();
  const settings = { releasesKeep: 3, archiveLimits: { maxFiles: 10, maxBytes: 1000 }, sessions: { maxPerSigner: 3, ttlSeconds: 600 } };
  const previews = new InMemoryPreviewLinks(clock);
  const keys = new InMemoryDeployKeyStore();
  const lock = new InProcessDeployLock();
  const records = new InMemoryDeployRecords();
  const publisher = new PublishRelease(tokens, disk.store, disk.staging, lock, clock, settings, new PruneReleases(disk.store, settings, previews, clock, records), records, keys, previews, disk.rules, new InMemoryWebServer(), new QueuedPrecompression());
  const sessions = new InMemoryDeploySessions();
  const access = new DeploySessionAccess(sessions, disk.objects, tokens, keys, clock, settings, disk.store);
  const opener = new OpenDeploySession(sessions, disk.objects, disk.store, tokens, keys, clock, settings, disk.staging);
  const createKey = new CreateDeployKey(keys, new SequenceTokenGenerator(), clock);
  return {
    disk,
    clock,
    sessions,
    open: (files: ManifestFile[], as: { token: string; keyId?: string } = { token: TOKEN }, preview?: string) =>
      opener.execute({ user: alice, ...as, project: 'docs', preview, manifest: readParsedManifest(opener.reader(), files) }),
    key: async (project: string) => {
      const { id, token } = await createKey.execute(alice, project, { name: 'ci', scope: 'deploy' });
      return { keyId: id, token: token as string };
    },
    revoke: new RevokeDeployKey(keys, lock, sessions, disk.objects, disk.staging),
    deleteProject: new DeleteProject(disk.store, lock, keys, previews, sessions, disk.objects, disk.staging, new InMemoryWebServer(), new InMemoryDomainStore(), new InMemoryDomainLinks()),
    /** Moves the clock on: every session opened so far goes unused that long. */
    idle: (seconds: number) => (clock.current = new Date(clock.current.getTime() + seconds * 1000)),
    publish: (id: string) => new PublishDeploySession(access, sessions, disk.staging, disk.objects, publisher, clock).execute({ user: alice, token: TOKEN, id }),
    cancel: (id: string) => new CancelDeploySession(access, sessions, disk.objects, disk.staging).execute({ user: alice, token: TOKEN, id }),
    sweep: () => new ExpireDeploySessions(sessions, disk.objects, clock, disk.staging).execute(),
  };
}

describe('a publish prepared while objects upload (ReleasePreparation.prepare)', () => {
  it('a redeploy, most of it stored, is prepared at the open and assembled at the publish', async () => {
    const w = await world();
    const opened = await w.open([fileOf('a', 'one'), fileOf('b', 'two'), fileOf('c', 'new')]);
    expect(w.disk.staging.preparedSessions()).toEqual([opened.session.id]);
    expect(w.disk.staging.prepared.get(opened.session.id)).toBe(alice);
    w.disk.uploads.set(opened.session.id, new Map([[sha256('new'), 'new']]));
    await w.publish(opened.session.id);
    expect(w.disk.staging.preparedSessions()).toEqual([]);
  });

  it('a first deploy, most of it missing (the client may send an archive instead), is not prepared', async () => {
    const w = await world();
    await w.open([fileOf('a', 'one'), fileOf('b', 'new'), fileOf('c', 'newer')]);
    expect(w.disk.staging.preparedSessions()).toEqual([]);
  });

  it('a cancelled session forgets what was prepared', async () => {
    const w = await world();
    const opened = await w.open([fileOf('a', 'one'), fileOf('b', 'two')]);
    await w.cancel(opened.session.id);
    expect(w.disk.staging.preparedSessions()).toEqual([]);
  });

  it('the sweep forgets what was prepared for sessions ended elsewhere or expired, and keeps what open ones have', async () => {
    const w = await world();
    const endedElsewhere = await w.open([fileOf('a', 'one')]);
    const open = await w.open([fileOf('a', 'one'), fileOf('b', 'two')]);
    await w.sessions.close(endedElsewhere.session.id);
    await w.sweep();
    expect(w.disk.staging.preparedSessions()).toEqual([open.session.id]);
    w.idle(601);
    await w.sweep();
    expect(w.disk.staging.preparedSessions()).toEqual([]);
  });
});

describe("sessions closed by others: superseded, their key revoked, their key's project deleted", () => {
  const redeploy = [fileOf('a', 'one'), fileOf('b', 'two'), fileOf('c', 'new')];

  it('an idle session superseded by a new one of the same signer and target is closed, its uploads and what was prepared forgotten', async () => {
    const w = await world();
    const cutOff = await w.open(redeploy);
    w.disk.uploads.set(cutOff.session.id, new Map([[sha256('new'), 'new']]));
    const preview = await w.open(redeploy, undefined, 'pr-1');
    w.idle(SUPERSEDE_AFTER_IDLE_SECONDS - 1);
    const early = await w.open(redeploy);
    expect(await w.sessions.stillOpen([cutOff.session.id])).toEqual(new Set([cutOff.session.id]));
    w.idle(1);
    const next = await w.open(redeploy);
    expect(await w.sessions.stillOpen([cutOff.session.id, preview.session.id, early.session.id, next.session.id])).toEqual(new Set([preview.session.id, early.session.id, next.session.id]));
    expect(w.disk.uploads.has(cutOff.session.id)).toBe(false);
    expect(w.disk.staging.preparedSessions()).not.toContain(cutOff.session.id);
  });

  it("a key's idle session superseded by its next one hands over what it uploaded: the new one need not send it again", async () => {
    const w = await world();
    const key = await w.key('docs');
    const cutOff = await w.open(redeploy, key);
    expect(cutOff.missing).toEqual([sha256('new')]);
    w.disk.uploads.set(cutOff.session.id, new Map([[sha256('new'), 'new']]));
    w.idle(61);
    const next = await w.open(redeploy, key);
    expect(await w.sessions.stillOpen([cutOff.session.id, next.session.id])).toEqual(new Set([next.session.id]));
    expect(w.disk.uploads.has(cutOff.session.id)).toBe(false);
    expect(next.missing).toEqual([]);
    await w.publish(next.session.id);
  });

  it("revoking a key closes its sessions and forgets their uploads and what was prepared; its owner's and another key's stay", async () => {
    const w = await world();
    const key = await w.key('docs');
    const other = await w.key('docs');
    const keyed = await w.open(redeploy, key);
    w.disk.uploads.set(keyed.session.id, new Map([[sha256('new'), 'new']]));
    expect(w.disk.staging.preparedSessions()).toEqual([keyed.session.id]);
    const own = await w.open(redeploy);
    const others = await w.open(redeploy, other);
    await w.revoke.execute(alice, 'docs', key.keyId);
    expect(await w.sessions.stillOpen([keyed.session.id, own.session.id, others.session.id])).toEqual(new Set([own.session.id, others.session.id]));
    expect(w.disk.uploads.has(keyed.session.id)).toBe(false);
    expect(w.disk.staging.preparedSessions()).not.toContain(keyed.session.id);
  });

  it('a key revoked while its session opens leaves no session open: 401, and the key holds nothing', async () => {
    const w = await world();
    const key = await w.key('docs');
    const open = w.sessions.open.bind(w.sessions);
    // The revoke runs between the open's first check of the key and its insert.
    w.sessions.open = async (...args) => {
      await w.revoke.execute(alice, 'docs', key.keyId);
      return open(...args);
    };
    await expect(w.open(redeploy, key)).rejects.toBeInstanceOf(Unauthorized);
    expect(w.sessions.sessions.size).toBe(0);
    expect(w.disk.staging.preparedSessions()).toEqual([]);
  });

  it("deleting a project closes its keys' sessions and forgets what was prepared; its owner's own stay", async () => {
    const w = await world();
    await w.publish((await w.open([fileOf('a', 'one')])).session.id);
    const keyed = await w.open(redeploy, await w.key('docs'));
    const own = await w.open(redeploy);
    await w.deleteProject.execute(alice, 'docs');
    expect(await w.sessions.stillOpen([keyed.session.id, own.session.id])).toEqual(new Set([own.session.id]));
    expect(w.disk.staging.preparedSessions()).not.toContain(keyed.session.id);
  });
});

describe('the publish judges what came since the manifest was checked', () => {
  it('an object missing at the open, stored since at another size than the manifest says, is a lie: refused, nothing published', async () => {
    const w = await world();
    const opened = await w.open([fileOf('a', 'one'), { path: 'b', size: 1, digest: sha256('arrives later') }]);
    expect(opened.missing).toEqual([sha256('arrives later')]);
    w.disk.storeOf(alice).set(sha256('arrives later'), 'arrives later');
    await expect(w.publish(opened.session.id)).rejects.toThrow(ManifestRejected);
    expect(await w.sessions.stillOpen([opened.session.id])).toEqual(new Set([opened.session.id]));
  });

  it('a session cancelled while it publishes, its uploads gone with it, is not found rather than short of objects', async () => {
    const w = await world();
    const opened = await w.open([fileOf('a', 'one'), fileOf('b', 'uploaded')]);
    const id = opened.session.id;
    w.disk.uploads.set(id, new Map([[sha256('uploaded'), 'uploaded']]));
    const missing = w.disk.objects.missing.bind(w.disk.objects);
    w.disk.objects.missing = async (...args) => {
      await w.cancel(id);
      return missing(...args);
    };
    await expect(w.publish(id)).rejects.toThrow(DeploySessionNotFound);
  });
});
