import { describe, expect, it } from 'vitest';
import { DeletePreview } from '../../src/application/delete-preview.js';
import { DeployRelease } from '../../src/application/deploy-release.js';
import { PublishRelease } from '../../src/application/publish-release.js';
import { ExpirePreviews } from '../../src/application/expire-previews.js';
import { ListPreviews } from '../../src/application/list-previews.js';
import { PromotePreview } from '../../src/application/promote-preview.js';
import { PruneReleases } from '../../src/application/prune-releases.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { PreviewNotFound, StorageQuotaExceeded, TooManyPreviews } from '../../src/domain/errors.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import { bytes, FixedClock, InMemoryDeployKeyStore, InMemoryDeployRecords, InMemoryPreviewLinks, InMemoryDeploys, InMemoryTokenStore, InMemoryWebServer, QueuedPrecompression } from '../support/fakes.js';

const ann = 'ann' as Username;
const TOKEN = 'A'.repeat(32);

async function world(over: { userMaxBytes?: number } = {}) {
  const tokens = new InMemoryTokenStore();
  await tokens.save(ann, TOKEN as Token);
  const disk = new InMemoryDeploys();
  const precompression = new QueuedPrecompression();
  const releases = disk.store;
  const clock = new FixedClock(new Date('2026-12-01T12:00:00Z'));
  const previews = new InMemoryPreviewLinks(clock);
  const lock = new InProcessDeployLock();
  const settings = { releasesKeep: 1, archiveLimits: { maxFiles: 100, maxBytes: 1000 }, previews: { max: 2, ttlSeconds: 60 }, ...over };
  const records = new InMemoryDeployRecords();
  const prune = new PruneReleases(releases, settings, previews, clock, records);
  const keys = new InMemoryDeployKeyStore();
  const webServer = new InMemoryWebServer();
  const deployer = new DeployRelease(disk.staging, clock, settings, new PublishRelease(tokens, releases, disk.staging, lock, clock, settings, prune, records, keys, previews, disk.rules, webServer, precompression), tokens, keys);
  const deploy = async (site: string, preview?: string) => {
    clock.current = new Date(clock.current.getTime() + 1000);
    const input = { user: ann, token: TOKEN, project: Promise.resolve('site'), archive: bytes(site), signal: new AbortController().signal };
    return deployer.execute(preview === undefined ? input : { ...input, preview: Promise.resolve(preview) });
  };
  return {
    releases,
    disk,
    precompression,
    clock,
    previews,
    deploy,
    list: new ListPreviews(previews, settings, clock),
    promote: new PromotePreview(releases, lock, prune, records, disk.rules, webServer, precompression),
    remove: new DeletePreview(previews, lock, prune, webServer),
    expire: new ExpirePreviews(previews, lock, prune),
    prune,
  };
}

describe('previews (use cases over fakes)', () => {
  it('a preview deploy leaves the live release live and keeps its own past RELEASES_KEEP', async () => {
    const w = await world();
    const live = await w.deploy('live');
    const preview = await w.deploy('preview', 'pr-1');
    expect(preview.preview).toBe('pr-1');
    expect(await w.releases.liveRelease(ann, live.project)).toBe(live.release);
    await w.deploy('live again');
    // RELEASES_KEEP=1: the new live release, and the preview's besides.
    expect(await w.releases.releases(ann, live.project)).toEqual([preview.release, expect.any(String)]);
    expect((await w.list.execute(ann, 'site')).previews).toEqual([
      { name: 'pr-1', release: preview.release, linkedAt: expect.any(Date), expiresAt: expect.any(Date) },
    ]);
  });

  it('refuses a third preview at PREVIEWS_MAX=2 but replaces an existing one, and an expired one makes room', async () => {
    const w = await world();
    await w.deploy('a', 'pr-1');
    await w.deploy('b', 'pr-2');
    await expect(w.deploy('c', 'pr-3')).rejects.toBeInstanceOf(TooManyPreviews);
    expect(w.disk.staged.size).toBe(0);
    await w.deploy('b2', 'pr-2');
    w.clock.current = new Date(w.clock.current.getTime() + 61_000);
    expect((await w.list.execute(ann, 'site')).previews).toEqual([]);
    expect((await w.deploy('c', 'pr-3')).preview).toBe('pr-3');
  });

  it('promotes a preview like a rollback, and refuses an unknown or expired one', async () => {
    const w = await world();
    const live = await w.deploy('live');
    const preview = await w.deploy('preview', 'pr-1');
    expect(await w.promote.execute(ann, 'site', 'pr-1')).toEqual({ release: preview.release, previous: live.release });
    // Queued for its siblings as a live deploy's and a preview's release are, and again once promoted.
    expect(w.precompression.queued).toEqual([live.release, preview.release, preview.release].map((id) => `ann/site/${id}`));
    await expect(w.promote.execute(ann, 'site', 'pr-2')).rejects.toBeInstanceOf(PreviewNotFound);
    w.clock.current = new Date(w.clock.current.getTime() + 60_000);
    await expect(w.promote.execute(ann, 'site', 'pr-1')).rejects.toBeInstanceOf(PreviewNotFound);
  });

  it('livePreviews only reads: an expired link stays until expirePreviews removes it', async () => {
    const w = await world();
    const one = await w.deploy('one', 'pr-1');
    w.clock.current = new Date(w.clock.current.getTime() + 60_000);
    expect(await w.prune.livePreviews(ann, one.project)).toEqual([]);
    await expect(w.promote.execute(ann, 'site', 'pr-1')).rejects.toBeInstanceOf(PreviewNotFound);
    expect((await w.previews.list(ann, one.project)).map((p) => p.name)).toEqual(['pr-1']);
    await w.prune.expirePreviews(ann, one.project);
    expect(await w.previews.list(ann, one.project)).toEqual([]);
  });

  it('a deleted or expired preview lets its release be pruned', async () => {
    const w = await world();
    await w.deploy('live');
    const one = await w.deploy('one', 'pr-1');
    const two = await w.deploy('two', 'pr-2');
    await w.remove.execute(ann, 'site', 'pr-1');
    expect(await w.releases.releases(ann, one.project)).not.toContain(one.release);
    await expect(w.remove.execute(ann, 'site', 'pr-1')).rejects.toBeInstanceOf(PreviewNotFound);
    w.clock.current = new Date(w.clock.current.getTime() + 60_000);
    expect(await w.expire.execute()).toBe(1);
    expect(await w.releases.releases(ann, two.project)).not.toContain(two.release);
    expect(await w.previews.list(ann, two.project)).toEqual([]);
  });

  it("counts a preview's release in the storage quota, and the live one stays counted", async () => {
    const w = await world({ userMaxBytes: 10 });
    await w.deploy('12345');
    await expect(w.deploy('123456', 'pr-1')).rejects.toBeInstanceOf(StorageQuotaExceeded);
    expect((await w.deploy('12345', 'pr-1')).preview).toBe('pr-1');
  });
});
