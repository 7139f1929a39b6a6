import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StagedRelease } from '../../src/application/ports/staging.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { sha256 } from '../support/sha256.js';
import { storeObjects } from '../support/store.js';
import { file, tgz } from '../support/tar-builder.js';

const u = 'alice' as Username;
const p = 'docs' as ProjectName;
const id = '20261130T010000' as ReleaseId;

/**
 * A release's new objects are listed under its name before its staging area is renamed
 * into it (the SIGKILL at that rename is in test/faults/store-collection.test.ts): these
 * are the lists that rename never followed.
 */
describe("StoreAdoptions: a list written for a release that never came", () => {
  let real: RealDeploys;
  const lists = () => readdir(join(real.deploysRoot, '.adopt'));
  const stage = async (...files: [string, string][]): Promise<StagedRelease> => {
    const entries: [string, string][] = files.length > 0 ? files : [['index.html', 'new'], ['a.css', 'also new']];
    async function* upload() {
      yield tgz(entries.map(([path, body]) => file(path, body)));
    }
    return real.staging.stage(u, upload(), { maxFiles: 100, maxBytes: 1_000_000 }, new AbortController().signal);
  };

  beforeEach(async () => {
    real = await realDeploys('sitedrop-adoptions-');
  });
  afterEach(async () => {
    await real.close();
  });

  it('is dropped at start-up (a crash between the list and the rename): the store stays empty', async () => {
    const staged = await stage();
    await real.adoptions.list(staged.handle, u, p, id);
    expect(await lists()).toHaveLength(1);

    // What a start-up does: the staging area goes, then the lists are worked through.
    await real.staging.removeLeftovers();
    await real.store.removeLeftovers();
    expect(await lists()).toEqual([]);
    expect(await storeObjects(real.tree.objectsDir(u))).toEqual([]);
  });

  it('is dropped at start-up when another area became a release of that id since (another replica, the same second): no bytes under another digest', async () => {
    // The crashed replica's area stays until its start-up, so the other one's release is another inode.
    await real.adoptions.list((await stage(['index.html', 'never published'])).handle, u, p, id);
    await real.store.commit(await stage(['index.html', 'published by another']), u, p, id);
    await real.settle();
    expect(await lists()).toHaveLength(1);
    await real.staging.removeLeftovers();
    await real.store.removeLeftovers();
    expect(await lists()).toEqual([]);
    const objects = await storeObjects(real.tree.objectsDir(u));
    expect(objects.map((o) => o.digest)).toEqual([sha256('published by another')]);
    for (const object of objects) expect(sha256(await readFile(object.path))).toBe(object.digest);
  });

  it('goes with its staging area when the deploy is refused after the list (a rename that failed)', async () => {
    const staged = await stage();
    await real.adoptions.list(staged.handle, u, p, id);
    await real.staging.discard(staged);
    expect(await lists()).toEqual([]);
  });

  it('is worked through once the commit renamed the area, and then removed', async () => {
    await real.store.commit(await stage(), u, p, id);
    await real.settle();
    expect(await lists()).toEqual([]);
    expect(await storeObjects(real.tree.objectsDir(u))).toHaveLength(2);
  });
});
