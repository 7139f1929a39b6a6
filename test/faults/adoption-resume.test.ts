import { readdirSync, statSync, watch, type FSWatcher } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChildFleet, createUserAt, deployTo, type Child } from '../support/child-service.js';
import { adoptionsDone, overlappingArchive, storeCollected, storeObjects, storeOf } from '../support/store.js';
import { until } from '../support/until.js';

const ADMIN = 'adoption-resume-admin-token-0123456789ab';
const fleet = new ChildFleet({ ADMIN_TOKEN: ADMIN, REPLICA_ID: 'r1' }, 'sitedrop-adoption-resume-');

afterEach(() => fleet.cleanUp());

/** Every entry of a store's shards that is not named as an object (object-names.ts). */
async function strays(store: string): Promise<string[]> {
  return (await storeObjects(store)).filter((entry) => entry.digest.startsWith('not an object')).map((entry) => entry.path);
}

/** Entries of the store's shards whose every link is in the store: no release holds their inode, and none is ever collected. */
function heldOnlyByStore(store: string): string[] {
  const byInode = new Map<number, string[]>();
  for (const shard of readdirSync(store)) {
    for (const name of readdirSync(join(store, shard))) {
      const path = join(store, shard, name);
      const info = statSync(path);
      byInode.set(info.ino, [...(byInode.get(info.ino) ?? []), path]);
    }
  }
  const out: string[] = [];
  for (const [, paths] of byInode) {
    const { nlink } = statSync(paths[0]!);
    // Every link of the inode is in the store: no release holds it.
    if (nlink === paths.length) out.push(...paths);
  }
  return out;
}

/** Resolves at the first entry made in any of the store's shards. */
function firstStoreLink(store: string): Promise<void> {
  const watchers: FSWatcher[] = [];
  return new Promise<void>((resolve, reject) => {
    const done = () => {
      for (const w of watchers) w.close();
      clearTimeout(timer);
    };
    for (const shard of readdirSync(store)) {
      watchers.push(
        watch(join(store, shard), () => {
          done();
          resolve();
        }),
      );
    }
    const timer = setTimeout(() => {
      done();
      reject(new Error('the store never grew'));
    }, 30_000);
  });
}

describe("SIGKILL while a release's new objects join the store, then the adoption resumed at start-up", () => {
  it('leaves no name in the store but objects, and once the release is pruned its objects are collected', async () => {
    const FILES = 3000;
    const dataDir = await fleet.dataDir();
    const deploys = join(dataDir, 'deploys');
    const store = storeOf(deploys, 'crash');
    const env = { RELEASES_KEEP: '1' };
    // Versions far apart: no bytes shared, every file of each is a new object.
    const v0 = overlappingArchive(0, 200, 200);
    const v1 = overlappingArchive(10, FILES, FILES);
    const v2 = overlappingArchive(20, FILES, FILES);
    let child: Child = await fleet.start(dataDir, env);
    const token = await createUserAt(child.url, ADMIN, 'crash');
    expect((await deployTo(child.url, token, 'site', v0)).status).toBe(200);
    await adoptionsDone(deploys);
    // v1: killed as soon as its adoption has linked its first object into the store.
    const linked = firstStoreLink(store);
    const answer = deployTo(child.url, token, 'site', v1).catch(() => undefined);
    await linked;
    await fleet.kill(child);
    await answer;
    expect((await readdir(join(deploys, '.adopt'))).length, 'the kill landed mid-adoption').toBe(1);

    child = await fleet.start(dataDir, env);
    await adoptionsDone(deploys);
    // The objects linked before the kill are linked again: the store must not keep a second name for them.
    const stray = await strays(store);

    // v2 prunes v1 (RELEASES_KEEP=1): its objects have no release left.
    expect((await deployTo(child.url, token, 'site', v2)).status).toBe(200);
    await until(async () => (await readdir(join(deploys, 'crash/site'))).length === 1, 'v1 pruned');
    await storeCollected(store);
    // And what a start-up's collection does.
    await fleet.kill(child);
    await fleet.start(dataDir, env);
    await adoptionsDone(deploys);
    await storeCollected(store);
    expect(stray).toEqual([]);
    expect(heldOnlyByStore(store)).toEqual([]);
  }, 120_000);
});
