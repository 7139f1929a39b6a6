import { describe, expect, it } from 'vitest';
import { DeployRelease } from '../../src/application/deploy-release.js';
import { PruneReleases } from '../../src/application/prune-releases.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { ArchiveRejected, DeployAborted, InvalidProjectName, MissingArchive, Unauthorized } from '../../src/domain/errors.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import { bytes, FixedClock, InMemoryDeployRecords, InMemoryReleaseFs, InMemoryTokenStore } from './fakes.js';

const alice = 'alice' as Username;

async function world(keep = 3) {
  const tokens = new InMemoryTokenStore();
  await tokens.save(alice, 'A'.repeat(32) as Token);
  const releases = new InMemoryReleaseFs();
  const clock = new FixedClock();
  const settings = { releasesKeep: keep, archiveLimits: { maxFiles: 100, maxBytes: 1000 } };
  const records = new InMemoryDeployRecords();
  const deploy = new DeployRelease(tokens, releases, new InProcessDeployLock(), clock, settings, new PruneReleases(releases, settings), records);
  const run = (archive: string | undefined, project: string | null = 'docs', signal = new AbortController().signal) =>
    deploy.execute({ user: alice, project: Promise.resolve(project ?? undefined), archive: archive === undefined ? undefined : bytes(archive), signal });
  return { tokens, releases, clock, run, deploy, records };
}

describe('DeployRelease', () => {
  it('publishes a release named by the clock and points the live site at it', async () => {
    const w = await world();
    const result = await w.run('<h1>hi</h1>');
    expect(result).toMatchObject({ user: 'alice', project: 'docs', release: '20260501T120000', pruned: [] });
    expect(w.releases.live.get('alice/docs')).toBe('20260501T120000');
    expect(w.releases.staged.size).toBe(0);
    expect(w.records.entries).toEqual([{ user: 'alice', project: 'docs', release: '20260501T120000', bytes: 11, files: 1, createdAt: w.clock.current }]);
  });

  it('a deploy record that cannot be written is reported, and the deploy still stands', async () => {
    const w = await world();
    w.records.failing = true;
    const result = await w.run('site');
    expect(result.recordError?.message).toBe('database gone');
    expect(w.releases.live.get('alice/docs')).toBe(result.release);
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
    expect(w.releases.live.get('alice/docs')).toBe(ids[6]);
  });

  it('serialises concurrent deploys of one project: all publish with unique ids', async () => {
    const w = await world(20);
    const results = await Promise.all(Array.from({ length: 8 }, () => w.run('site')));
    const ids = results.map((r) => r.release);
    expect(new Set(ids).size).toBe(8);
    expect(w.releases.live.get('alice/docs')).toBe([...ids].sort().at(-1));
  });

  it('a bad project name fails the deploy and leaves nothing behind', async () => {
    const w = await world();
    await expect(w.run('site', 'Bad Name')).rejects.toBeInstanceOf(InvalidProjectName);
    await expect(w.run('site', null)).rejects.toBeInstanceOf(InvalidProjectName);
    expect(w.releases.staged.size).toBe(0);
    expect(w.releases.tree.size).toBe(0);
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
    expect(w.releases.live.get('alice/docs')).toBe(first.release);
    expect(await w.releases.releases(alice, 'docs' as never)).toEqual([first.release]);
    expect(w.releases.staged.size).toBe(0);
  });

  it('when the swap fails, the new release is taken back out', async () => {
    const w = await world();
    const first = await w.run('site');
    w.clock.current = new Date('2026-05-01T13:00:00Z');
    w.releases.failActivate = true;
    await expect(w.run('site')).rejects.toThrow('disk on fire');
    expect(await w.releases.releases(alice, 'docs' as never)).toEqual([first.release]);
    expect(w.releases.live.get('alice/docs')).toBe(first.release);
  });

  it('a user deleted while the archive unpacked gets Unauthorized and no release', async () => {
    const w = await world();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const archive = (async function* () {
      yield Buffer.from('site');
      await gate;
    })();
    const pending = w.deploy.execute({ user: alice, project: Promise.resolve('docs'), archive, signal: new AbortController().signal });
    await w.tokens.remove(alice);
    release();
    await expect(pending).rejects.toBeInstanceOf(Unauthorized);
    expect(w.releases.tree.size).toBe(0);
    expect(w.releases.staged.size).toBe(0);
  });

  it('an abort signal gives the deploy up and discards its staging area', async () => {
    const w = await world();
    const controller = new AbortController();
    const archive = (async function* () {
      yield Buffer.from('si');
      controller.abort();
      yield Buffer.from('te');
    })();
    await expect(w.deploy.execute({ user: alice, project: Promise.resolve('docs'), archive, signal: controller.signal })).rejects.toBeInstanceOf(DeployAborted);
    expect(w.releases.staged.size).toBe(0);
    expect(w.releases.tree.size).toBe(0);
  });
});
