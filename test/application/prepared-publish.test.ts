import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CancelDeploySession } from '../../src/application/cancel-deploy-session.js';
import { DeploySessionAccess } from '../../src/application/deploy-session-access.js';
import { ExpireDeploySessions } from '../../src/application/expire-deploy-sessions.js';
import { OpenDeploySession } from '../../src/application/open-deploy-session.js';
import { PruneReleases } from '../../src/application/prune-releases.js';
import { PublishDeploySession } from '../../src/application/publish-deploy-session.js';
import { PublishRelease } from '../../src/application/publish-release.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { readParsedManifest, type Digest, type ManifestFile } from '../../src/domain/manifest.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import { FixedClock, InMemoryDeployKeyStore, InMemoryDeployRecords, InMemoryDeploys, InMemoryDeploySessions, InMemoryPreviewLinks, InMemoryTokenStore } from './fakes.js';

const alice = 'alice' as Username;
const TOKEN = 'A'.repeat(32);
const sha256 = (content: string) => createHash('sha256').update(content).digest('hex') as Digest;
const fileOf = (path: string, content: string): ManifestFile => ({ path, size: Buffer.byteLength(content), digest: sha256(content) });

async function world() {
  const tokens = new InMemoryTokenStore();
  await tokens.save(alice, TOKEN as Token);
  const disk = new InMemoryDeploys();
  for (const content of ['one', 'two', 'three']) disk.storeOf(alice).set(sha256(content), content);
  const clock = new FixedClock();
  const settings = { releasesKeep: 3, archiveLimits: { maxFiles: 10, maxBytes: 1000 }, sessions: { maxPerUser: 3, ttlSeconds: 60 } };
  const previews = new InMemoryPreviewLinks(clock);
  const publisher = new PublishRelease(tokens, disk.store, disk.staging, new InProcessDeployLock(), clock, settings, new PruneReleases(disk.store, settings, previews, clock), new InMemoryDeployRecords(), new InMemoryDeployKeyStore(), previews);
  const sessions = new InMemoryDeploySessions();
  const access = new DeploySessionAccess(sessions, disk.objects, publisher, clock, settings);
  return {
    disk,
    clock,
    sessions,
    open: (files: ManifestFile[]) => {
      const open = new OpenDeploySession(sessions, disk.objects, disk.store, publisher, clock, settings, disk.staging);
      return open.execute({ user: alice, token: TOKEN, project: 'docs', preview: undefined, manifest: readParsedManifest(open.reader(), files) });
    },
    publish: (id: string) => new PublishDeploySession(access, sessions, disk.staging, disk.objects, publisher, clock).execute({ user: alice, token: TOKEN, id }),
    cancel: (id: string) => new CancelDeploySession(access, sessions, disk.objects, disk.staging).execute({ user: alice, token: TOKEN, id }),
    sweep: () => new ExpireDeploySessions(sessions, disk.objects, clock, disk.staging).execute(),
  };
}

describe('a publish prepared while objects upload (Staging.prepare)', () => {
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
    w.clock.current = new Date(w.clock.current.getTime() + 61_000);
    await w.sweep();
    expect(w.disk.staging.preparedSessions()).toEqual([]);
  });
});
