import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, watch, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { ReleaseId } from '../../src/domain/release-id.js';
import { ChildFleet, createUserAt, deployTo, type Child } from '../support/child-service.js';
import {
  adoptionsDone,
  liveReleaseOf,
  missingObjects,
  objectPath,
  overlappingArchive,
  overlappingReleases,
  overlappingSite,
  siteArchive,
  storeCollected,
  storeOf,
  unlinkedObjects,
} from '../support/store.js';
import { sha256 } from '../support/sha256.js';

const ADMIN = 'store-gc-admin-token-0123456789abcdefgh';
const ORPHANS = 2000;
const fleet = new ChildFleet({ ADMIN_TOKEN: ADMIN, REPLICA_ID: 'r1' }, 'sitedrop-store-gc-');
const service = (dataDir: string, env: Record<string, string> = {}): Promise<Child> => fleet.start(dataDir, env);
const kill9 = (child: Child): Promise<void> => fleet.kill(child);
const freshDataDir = (): Promise<string> => fleet.dataDir();

/** An object no release links, as a crash leaves one: named by its bytes' digest, one link. */
function orphan(store: string, bytes: Buffer): string {
  const path = objectPath(store, sha256(bytes));
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, bytes, { mode: 0o644 });
  return path;
}

afterEach(() => fleet.cleanUp());

describe("start-up collects every user's store, in the background", () => {
  it('objects no release links (left by a crash) are collected after a restart; linked ones stay', async () => {
    const dataDir = await freshDataDir();
    const deploys = join(dataDir, 'deploys');
    const first = await service(dataDir);
    const sites = { ann: overlappingSite(1, 40, 40), bob: overlappingSite(2, 40, 40) };
    for (const [user, site] of Object.entries(sites)) {
      const token = await createUserAt(first.url, ADMIN, user);
      expect((await deployTo(first.url, token, 'site', siteArchive(site))).status).toBe(200);
    }
    // Every release's objects in the store before the crash: what start-up collects is then only the orphans.
    await adoptionsDone(deploys);
    await kill9(first);
    const linked = { ann: countEntries(storeOf(deploys, 'ann')), bob: countEntries(storeOf(deploys, 'bob')) };
    // Enough that collecting them takes a while (unlink(2) costs ~0.3 ms on this disk):
    // the service must not wait for it to listen.
    for (let i = 0; i < ORPHANS; i += 1) orphan(storeOf(deploys, i % 2 === 0 ? 'ann' : 'bob'), randomBytes(16));
    expect((await unlinkedObjects(storeOf(deploys, 'ann'))).length).toBe(ORPHANS / 2);

    await service(dataDir);
    const orphansAtListening = countEntries(storeOf(deploys, 'ann')) - linked.ann;
    for (const [user, site] of Object.entries(sites)) {
      await storeCollected(storeOf(deploys, user), 10_000);
      // Every object a release links is still there, and so is every release.
      expect(await missingObjects(storeOf(deploys, user), [site])).toEqual([]);
      expect(countEntries(storeOf(deploys, user))).toBe(linked[user as keyof typeof linked]);
      expect(await overlappingReleases(join(deploys, user, 'site'), 40, 40)).toEqual([expect.objectContaining({ problems: [] })]);
    }
    console.log(`listening with ${orphansAtListening} of ${ORPHANS / 2} orphans in one store still to collect`);
    expect(orphansAtListening).toBeGreaterThan(0);
  }, 60_000);
});

describe('SIGKILL while deploys assemble and adopt objects, and while pruned releases are deleted and collected', () => {
  const FILES = 400;
  /** Versions one apart share half their files' bytes: a deploy links half from the store, adopts half. */
  const SHIFT = FILES / 2;

  it('after each restart: every release whole and byte for byte its version, no staging or .fresh left, and no object without a release once start-up has collected', async () => {
    const dataDir = await freshDataDir();
    const deploys = join(dataDir, 'deploys');
    const store = storeOf(deploys, 'crash');
    // RELEASES_KEEP=1: every deploy prunes the one before, whose objects it half shares.
    const env = { RELEASES_KEEP: '1' };
    const first = overlappingArchive(0, FILES, SHIFT);
    let child = await service(dataDir, env);
    const token = await createUserAt(child.url, ADMIN, 'crash');
    expect((await deployTo(child.url, token, 'site', first)).status).toBe(200);
    // Where a kill lands cannot be told for certain from outside, so the invariants are
    // checked whichever phase it hit: a fixed time after a deploy is sent (its upload,
    // unpacking), as soon as the store gains an object (the commit's adoption of the
    // deploy's new objects, before or just after its release's rename), or just after
    // its answer (the writer deleting the release it pruned and collecting the objects
    // only that one held), or as soon as its release is renamed into place (the commit
    // between that rename and the answer).
    const kills: { name: string; when: (answer: Promise<unknown>) => Promise<void> }[] = [
      { name: 'answered', when: async (answer) => void (await answer) },
      { name: '150 ms', when: () => new Promise((resolve) => setTimeout(resolve, 150)) },
      { name: 'adopting', when: storeGrows(store) },
      { name: 'renamed', when: releaseAppears(join(deploys, 'crash/site')) },
    ];
    const phases: string[] = [];
    // Where each kill landed, printed pass or fail: a failure says which phase it was in.
    onTestFinished(() => console.log(phases.join('; ')));
    for (const [i, kill] of kills.entries()) {
      const archive = overlappingArchive(i + 1, FILES, SHIFT);
      const objectsBefore = countEntries(store);
      const sent = Date.now();
      const answer = deployTo(child.url, token, 'site', archive).catch(() => undefined);
      await kill.when(answer);
      await kill9(child);
      const answered = await answer;
      const seen = `${countEntries(store) - objectsBefore} objects adopted, ${(await readdir(join(deploys, '.staging'))).length} staging areas left`;
      child = await service(dataDir, env);
      phases.push(`${kill.name}: ${answered ? `answered ${answered.status} after ${Date.now() - sent} ms` : 'cut'}, ${seen}`);

      // Removed before the service listens: this replica's staging areas, their new
      // objects, its trash (a pruned release half deleted), and its adoption lists (each
      // worked through, or dropped if its release never came).
      for (const dir of ['.staging', '.fresh', '.trash', '.adopt']) expect(await readdir(join(deploys, dir))).toEqual([]);
      const releases = await overlappingReleases(join(deploys, 'crash/site'), FILES, SHIFT);
      for (const release of releases) expect(release.problems, release.id).toEqual([]);
      expect(releases.map((r) => r.id)).toContain(await liveReleaseOf(join(dataDir, 'docs/crash/site')));
      await storeCollected(store, 10_000);
      expect(await missingObjects(store, releases.map((r) => r.site))).toEqual([]);
    }
    // Five starts of the service and five deploys: 19 s here alone, up to twice that beside the suite.
  }, 90_000);
});

/**
 * Resolves as soon as the store holds more entries than when it was called. The
 * adoption of a few hundred objects takes only milliseconds, so it looks without
 * yielding, in turns of 20 ms, between which this process sends the deploy's upload.
 */
function storeGrows(store: string): () => Promise<void> {
  return async () => {
    const before = countEntries(store);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const turn = Date.now() + 20;
      while (Date.now() < turn) if (countEntries(store) > before) return;
      if (Date.now() > deadline) throw new Error('the store never grew');
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
}

/**
 * Resolves as soon as a release directory appears in `projectDir`: inotify tells this
 * process within a millisecond, while the commit still flushes the rename.
 */
function releaseAppears(projectDir: string): () => Promise<void> {
  return () => {
    const before = new Set(readdirSync(projectDir));
    return new Promise((resolve, reject) => {
      const watcher = watch(projectDir, (_event, name) => {
        if (name === null || before.has(name) || !ReleaseId.isReleaseId(name)) return;
        watcher.close();
        clearTimeout(timer);
        resolve();
      });
      const timer = setTimeout(() => {
        watcher.close();
        reject(new Error('no release appeared'));
      }, 20_000);
    });
  };
}

/** Entries in a store's shards (a readdir each: cheaper than a stat of every object). */
function countEntries(store: string): number {
  return readdirSync(store).reduce((sum, shard) => sum + readdirSync(join(store, shard)).length, 0);
}
