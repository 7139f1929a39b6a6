import { describe, expect, it } from 'vitest';
import { DeployRelease } from '../../src/application/deploy-release.js';
import { PublishRelease } from '../../src/application/publish-release.js';
import { PruneReleases } from '../../src/application/prune-releases.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { ArchiveRejected, DeployAborted, InvalidProjectName, MissingArchive, StorageQuotaExceeded, Unauthorized } from '../../src/domain/errors.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import { bytes, FixedClock, InMemoryDeployKeyStore, InMemoryPreviewLinks, InMemoryDeployRecords, InMemoryDeploys, InMemoryTokenStore, InMemoryWebServer, QueuedPrecompression } from '../support/fakes.js';

const alice = 'alice' as Username;
const ALICE_TOKEN = 'A'.repeat(32);

async function world(keep = 3, userMaxBytes?: number) {
  const tokens = new InMemoryTokenStore();
  await tokens.save(alice, ALICE_TOKEN as Token);
  const disk = new InMemoryDeploys();
  const releases = disk.store;
  const clock = new FixedClock();
  const settings = { releasesKeep: keep, archiveLimits: { maxFiles: 100, maxBytes: 1000 }, ...(userMaxBytes === undefined ? {} : { userMaxBytes }) };
  const records = new InMemoryDeployRecords();
  const keys = new InMemoryDeployKeyStore();
  const previews = new InMemoryPreviewLinks(clock);
  const deploy = new DeployRelease(disk.staging, clock, settings, new PublishRelease(tokens, releases, disk.staging, new InProcessDeployLock(), clock, settings, new PruneReleases(releases, settings, previews, clock, records), records, keys, previews, disk.rules, new InMemoryWebServer(), new QueuedPrecompression()), tokens, keys);
  const run = (archive: string | undefined, project: string | null = 'docs', signal = new AbortController().signal) =>
    deploy.execute({ user: alice, token: ALICE_TOKEN, project: Promise.resolve(project ?? undefined), archive: archive === undefined ? undefined : bytes(archive), signal });
  return { tokens, releases, disk, clock, run, deploy, records, keys, previews };
}

describe('DeployRelease', () => {
  it('publishes a release named by the clock and points the live site at it', async () => {
    const w = await world();
    const result = await w.run('<h1>hi</h1>');
    expect(result).toMatchObject({ user: 'alice', project: 'docs', release: '20260501T120000', pruned: [] });
    expect(w.disk.live.get('alice/docs')).toBe('20260501T120000');
    expect(w.disk.staged.size).toBe(0);
    expect(w.records.entries).toEqual([{ user: 'alice', project: 'docs', release: '20260501T120000', bytes: 11, files: 1, createdAt: w.clock.current }]);
  });

  it('a deploy record that cannot be written is reported, and the deploy still stands', async () => {
    const w = await world();
    w.records.failing = true;
    const result = await w.run('site');
    expect(result.recordError?.message).toBe('database gone');
    expect(w.disk.live.get('alice/docs')).toBe(result.release);
  });

  it('gives deploys within one second distinct, increasing ids', async () => {
    const w = await world(10);
    const ids = [];
    for (let i = 0; i < 4; i += 1) ids.push((await w.run('site')).release);
    expect(ids).toEqual(['20260501T120000', '20260501T120001', '20260501T120002', '20260501T120003']);
  });

  it('keeps RELEASES_KEEP releases, pruning the oldest after the swap', async () => {
    const w = await world(3);
    const ids = [];
    for (let i = 0; i < 7; i += 1) {
      w.clock.current = new Date(Date.UTC(2026, 4, 1, 12, 0, i * 10));
      ids.push((await w.run('site')).release);
    }
    expect(await w.releases.releases(alice, 'docs' as never)).toEqual(ids.slice(4));
    expect(w.disk.live.get('alice/docs')).toBe(ids[6]);
  });

  it('serialises concurrent deploys of one project: all publish with unique ids', async () => {
    const w = await world(20);
    const results = await Promise.all(Array.from({ length: 8 }, () => w.run('site')));
    const ids = results.map((r) => r.release);
    expect(new Set(ids).size).toBe(8);
    expect(w.disk.live.get('alice/docs')).toBe([...ids].sort().at(-1));
  });

  it('a bad project name fails the deploy and leaves nothing behind', async () => {
    const w = await world();
    await expect(w.run('site', 'Bad Name')).rejects.toBeInstanceOf(InvalidProjectName);
    await expect(w.run('site', null)).rejects.toBeInstanceOf(InvalidProjectName);
    expect(w.disk.staged.size).toBe(0);
    expect(w.disk.tree.size).toBe(0);
  });

  it('reports a bad project name before a bad archive', async () => {
    const w = await world();
    await expect(w.run('REJECT this', 'Bad Name')).rejects.toBeInstanceOf(InvalidProjectName);
    await expect(w.run(undefined, 'Bad Name')).rejects.toBeInstanceOf(InvalidProjectName);
  });

  it('a missing or empty archive is MissingArchive', async () => {
    const w = await world();
    await expect(w.run(undefined)).rejects.toBeInstanceOf(MissingArchive);
    await expect(w.run('')).rejects.toBeInstanceOf(MissingArchive);
  });

  it('a rejected archive changes neither the live site nor the releases', async () => {
    const w = await world();
    const first = await w.run('site');
    await expect(w.run('REJECT: path contains ..')).rejects.toBeInstanceOf(ArchiveRejected);
    expect(w.records.entries).toHaveLength(1);
    expect(w.disk.live.get('alice/docs')).toBe(first.release);
    expect(await w.releases.releases(alice, 'docs' as never)).toEqual([first.release]);
    expect(w.disk.staged.size).toBe(0);
  });

  it('when the swap fails, the new release is taken back out', async () => {
    const w = await world();
    const first = await w.run('site');
    w.clock.current = new Date('2026-05-01T13:00:00Z');
    w.disk.failActivate = true;
    await expect(w.run('site')).rejects.toThrow('disk on fire');
    expect(await w.releases.releases(alice, 'docs' as never)).toEqual([first.release]);
    expect(w.disk.live.get('alice/docs')).toBe(first.release);
  });

  it('a user deleted while the archive unpacked gets Unauthorized and no release', async () => {
    const w = await world();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const archive = (async function* () {
      yield Buffer.from('site');
      await gate;
    })();
    const pending = w.deploy.execute({ user: alice, token: ALICE_TOKEN, project: Promise.resolve('docs'), archive, signal: new AbortController().signal });
    await w.tokens.remove(alice);
    release();
    await expect(pending).rejects.toBeInstanceOf(Unauthorized);
    expect(w.disk.tree.size).toBe(0);
    expect(w.disk.staged.size).toBe(0);
  });

  it('an abort signal gives the deploy up and discards its staging area', async () => {
    const w = await world();
    const controller = new AbortController();
    const archive = (async function* () {
      yield Buffer.from('si');
      controller.abort();
      yield Buffer.from('te');
    })();
    await expect(w.deploy.execute({ user: alice, token: ALICE_TOKEN, project: Promise.resolve('docs'), archive, signal: controller.signal })).rejects.toBeInstanceOf(DeployAborted);
    expect(w.disk.staged.size).toBe(0);
    expect(w.disk.tree.size).toBe(0);
  });

  describe('a token rerolled, or a user deleted and created again, while the archive unpacked', () => {
    /** Starts a deploy whose archive waits at `gate` until `open` is called. */
    function held(w: Awaited<ReturnType<typeof world>>) {
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      const archive = (async function* () {
        yield Buffer.from('site');
        await gate;
      })();
      const pending = w.deploy.execute({ user: alice, token: ALICE_TOKEN, project: Promise.resolve('docs'), archive, signal: new AbortController().signal });
      return { pending, open };
    }

    it('a reroll: the old token no longer publishes', async () => {
      const w = await world();
      const deploy = held(w);
      await w.tokens.save(alice, 'R'.repeat(32) as Token);
      deploy.open();
      await expect(deploy.pending).rejects.toBeInstanceOf(Unauthorized);
      expect(w.disk.tree.size).toBe(0);
      expect(w.disk.staged.size).toBe(0);
      expect(w.records.entries).toEqual([]);
    });

    it('deleted and created again: the old token no longer publishes', async () => {
      const w = await world();
      const deploy = held(w);
      await w.tokens.remove(alice);
      await w.tokens.save(alice, 'N'.repeat(32) as Token);
      deploy.open();
      await expect(deploy.pending).rejects.toBeInstanceOf(Unauthorized);
      expect(w.disk.tree.size).toBe(0);
      expect(w.disk.staged.size).toBe(0);
    });

    it('a token that now names another user does not publish as the first', async () => {
      const w = await world();
      const deploy = held(w);
      await w.tokens.remove(alice);
      await w.tokens.save('mallory' as Username, ALICE_TOKEN as Token);
      deploy.open();
      await expect(deploy.pending).rejects.toBeInstanceOf(Unauthorized);
      expect(w.disk.tree.size).toBe(0);
    });
  });

  describe('storage quota (USER_MAX_BYTES)', () => {
    const at = (w: Awaited<ReturnType<typeof world>>, s: number) => (w.clock.current = new Date(Date.UTC(2026, 4, 1, 12, 0, s)));
    const p = (name: string) => name as ProjectName;

    it('takes a deploy that brings the user exactly to the quota', async () => {
      const w = await world(3, 10);
      await w.run('12345', 'one');
      at(w, 10);
      await expect(w.run('12345', 'two')).resolves.toMatchObject({ project: 'two' });
    });

    it('refuses one that would pass it, and changes nothing', async () => {
      const w = await world(3, 10);
      const first = await w.run('12345678', 'docs');
      at(w, 10);
      const refused = w.run('abc', 'docs');
      await expect(refused).rejects.toBeInstanceOf(StorageQuotaExceeded);
      await expect(refused).rejects.toMatchObject({ wouldKeep: 11, limit: 10 });
      expect(await w.releases.releases(alice, p('docs'))).toEqual([first.release]);
      expect(w.disk.live.get('alice/docs')).toBe(first.release);
      expect(w.disk.staged.size).toBe(0);
      expect(w.records.entries).toHaveLength(1);
    });

    it('counts a release as gone when this deploy\'s own pruning removes it', async () => {
      const w = await world(2, 20);
      const ids = [];
      for (let i = 0; i < 4; i += 1) {
        at(w, i * 10);
        ids.push((await w.run('0123456789', 'docs')).release);
      }
      expect(await w.releases.releases(alice, p('docs'))).toEqual(ids.slice(2));
      // One byte more than the release it replaces is over: 10 kept + 11 new.
      at(w, 50);
      await expect(w.run('0123456789A', 'docs')).rejects.toBeInstanceOf(StorageQuotaExceeded);
    });

    it('adds up every project of the user, and no other user\'s', async () => {
      const w = await world(3, 15);
      await w.tokens.save('bob' as Username, 'B'.repeat(32) as Token);
      w.disk.put('bob' as Username, p('big'), '20260101T000000' as ReleaseId, 1_000_000);
      await w.run('0123456789', 'one');
      at(w, 10);
      await expect(w.run('012345', 'two')).rejects.toMatchObject({ wouldKeep: 16, limit: 15 });
      await expect(w.run('01234', 'two')).resolves.toMatchObject({ project: 'two' });
    });

    it('measures a release that has no deploy record', async () => {
      const w = await world(3, 15);
      w.disk.put(alice, p('old'), '20250101T000000' as ReleaseId, 12);
      await expect(w.run('1234', 'docs')).rejects.toMatchObject({ wouldKeep: 16 });
      await expect(w.run('123', 'docs')).resolves.toMatchObject({ project: 'docs' });
    });

    it('two deploys of different projects that together pass the quota are not both taken', async () => {
      const w = await world(3, 15);
      const outcomes = await Promise.allSettled([w.run('0123456789', 'one'), w.run('0123456789', 'two')]);
      expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect((outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(StorageQuotaExceeded);
      expect(w.disk.tree.size).toBe(1);
    });
  });
});
