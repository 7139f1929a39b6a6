import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { adoptionsDone, storeObjects, storeOf } from '../support/store.js';
import { file, tgz } from '../support/tar-builder.js';

const alice = 'alice' as Username;
const docs = 'docs' as ProjectName;
const R1 = '20261126T100000' as ReleaseId;
const R2 = '20261126T110000' as ReleaseId;
const R3 = '20261126T120000' as ReleaseId;

/** The store's collection after a prune (real directories, the real writer thread), with a gate the test opens. */
describe("the store's collection after a prune waits until deploys are quiet", () => {
  let d: RealDeploys;
  let open: () => void;
  let asked = 0;
  beforeEach(async () => {
    let opened: Promise<void> = new Promise((resolve) => (open = resolve));
    asked = 0;
    d = await realDeploys('sitedrop-collection-quiet-', {
      quiet: () => {
        asked += 1;
        return opened;
      },
    });
    // Each opening is for the collections asked so far; the next ones wait for the next.
    const reopen = open;
    open = () => {
      reopen();
      opened = new Promise((resolve) => (open = resolve));
    };
  });
  afterEach(async () => {
    open();
    await d.close();
  });

  const release = async (id: ReleaseId, text: string) => {
    const staged = await d.staging.stage(alice, (async function* () { yield tgz([file('index.html', text), file('same.css', 'shared')]); })(), { maxFiles: 10, maxBytes: 1e6 }, new AbortController().signal);
    await d.store.commit(staged, alice, docs, id);
    await d.store.activate(alice, docs, id);
  };
  const digests = async () => (await storeObjects(storeOf(d.deploysRoot, alice))).length;

  it('leaves the pruned release\'s objects until then, collects them once for many prunes, and never a live one', async () => {
    await release(R1, 'one');
    await release(R2, 'two');
    await release(R3, 'three');
    await adoptionsDone(d.deploysRoot);
    expect(await digests()).toBe(4);
    await d.store.removeRelease(alice, docs, R1);
    await d.store.removeRelease(alice, docs, R2);
    // The releases are gone; their objects wait for the collection, which waits for quiet.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await d.store.releases(alice, docs)).toEqual([R3]);
    expect(await digests()).toBe(4);
    // Two prunes, one collection: once open, nothing else waits (a second would wait for the gate again, for ever).
    open();
    expect(await d.settle()).toEqual([]);
    expect(asked).toBe(1);
    const left = await storeObjects(storeOf(d.deploysRoot, alice));
    expect(left).toHaveLength(2);
    expect(left.every((o) => o.nlink === 2)).toBe(true);
    // A prune after that collection began gets one of its own, again once deploys are quiet.
    await release(R1, 'one again');
    await adoptionsDone(d.deploysRoot);
    await d.store.removeRelease(alice, docs, R3);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await storeObjects(storeOf(d.deploysRoot, alice))).toHaveLength(3);
    expect(asked).toBe(2);
    open();
    expect(await d.settle()).toEqual([]);
    expect(await storeObjects(storeOf(d.deploysRoot, alice))).toHaveLength(2);
  });
});
