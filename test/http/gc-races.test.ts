import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/service-harness.js';
import { slowUpload } from '../support/slow-upload.js';
import { until } from '../support/until.js';
import {
  adoptionsDone,
  digestsOf,
  liveReleaseOf,
  missingObjects,
  objectPath,
  overlappingSite,
  releaseDifferences,
  overlappingArchive,
  storeCollected,
  storeObjects,
  storeOf,
  type Site,
} from '../support/store.js';
import { sha256 } from '../support/sha256.js';

const KEEP = 2;
const PROJECTS = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
/** The projects the rounds deploy to; all of them are checked. */
const ROUND_PROJECTS = PROJECTS.slice(0, 3);
const ROUNDS = 10;
const FILES = 150;
/** Versions one apart share all but SHIFT of their bodies. */
const SHIFT = 40;
const VERSIONS = 12;
/** The version of the late deploy, whose bytes no other version shares. */
const LATE = 100;

/**
 * Garbage collection racing deploys and rollbacks, in one process, through the HTTP API.
 * One user's three projects deploy versions of one site, six deploys and a rollback at
 * once per round, the versions a fixed scramble, so a version being published shares
 * bytes with releases being pruned at that moment, in its own project (after its lock)
 * and in others (no common lock at all): the deploys' unpacking links store objects while
 * the writer thread, between their batches, deletes the pruned trees and collects the
 * objects they held. Which interleaving a round gets is up to the threads; the one that
 * matters most, a collection between a deploy's listing of the store and its link(2), is
 * then made certain with a paused upload. Safety is the link count alone
 * (docs/content-store.md); this checks it holds.
 */
describe('garbage collection racing deploys and rollbacks (real server, real directories)', () => {
  let h: Harness;
  let token: string;
  /** What each release was deployed from, by `<project>/<release>`. */
  const sources = new Map<string, Site>();
  const store = () => storeOf(h.deploysRoot, 'racer');

  beforeAll(async () => {
    for (let version = 0; version < VERSIONS; version += 1) overlappingArchive(version, FILES, SHIFT);
    overlappingArchive(LATE, 400, 400);
    h = await startHarness({ RELEASES_KEEP: String(KEEP), DEPLOYS_MAX_CONCURRENT: '4' });
    token = await h.createUser('racer');
  });
  afterAll(async () => {
    await h.close();
  });

  async function deploy(project: string, version: number): Promise<void> {
    const r = await h.deploy(token, project, overlappingArchive(version, FILES, SHIFT));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    sources.set(`${project}/${r.body.release as string}`, overlappingSite(version, FILES, SHIFT));
  }

  async function rollback(project: string): Promise<void> {
    const r = await h.call('POST', `/api/v1/projects/${project}/rollback`, { token });
    // Nothing older yet, or the older one pruned by a deploy just before: nothing changes.
    expect([200, 409], JSON.stringify(r.body)).toContain(r.status);
  }

  /** Every kept release of every project: complete, byte for byte its source, the live one among them. */
  async function keptReleases(): Promise<Site[]> {
    const kept: Site[] = [];
    for (const project of PROJECTS) {
      const ids = await readdir(join(h.deploysRoot, 'racer', project)).catch(() => []);
      expect(ids.length).toBeLessThanOrEqual(KEEP);
      for (const id of ids) {
        const site = sources.get(`${project}/${id}`);
        expect(site, `${project}/${id} was never deployed`).toBeDefined();
        expect(await releaseDifferences(join(h.deploysRoot, 'racer', project, id), site!), `${project}/${id}`).toEqual([]);
        kept.push(site!);
      }
      if (ids.length > 0) expect(ids).toContain(await liveReleaseOf(join(h.docsRoot, 'racer', project)));
    }
    return kept;
  }

  it(`${ROUNDS} rounds of deploys of overlapping versions and rollbacks, with RELEASES_KEEP=${KEEP}: every kept release whole, every shared object kept`, async () => {
    let version = 0;
    const pick = () => (version = (version + 5) % VERSIONS);
    for (let round = 0; round < ROUNDS; round += 1) {
      await Promise.all([
        ...ROUND_PROJECTS.flatMap((project) => [deploy(project, pick()), deploy(project, pick())]),
        // From the second round on, when every project exists.
        ...(round > 0 ? [rollback(ROUND_PROJECTS[round % ROUND_PROJECTS.length]!)] : []),
      ]);
      const kept = await keptReleases();
      // A collection may run now; it must never have taken an object a kept release
      // links: the store still shares every kept file's bytes, under their digest.
      expect(await missingObjects(store(), kept), `round ${round}`).toEqual([]);
    }
    console.log(`${sources.size} deploys; ${(await storeObjects(store())).length} objects stored`);
  }, 60_000);

  it('a deploy that listed the store before a collection took objects it links later writes those files anew: none is missing', async () => {
    // The writer lists the store at a deploy's first file; an object collected after that
    // makes its link(2) fail with ENOENT, and the file must then be written, not skipped.
    const old = overlappingSite(LATE, 400, 400);
    const archive = overlappingArchive(LATE, 400, 400);
    const first = await h.deploy(token, 'delta', archive);
    expect(first.status).toBe(200);
    sources.set(`delta/${first.body.release as string}`, old);
    const late = slowUpload(h.url, token, 'epsilon', archive, Math.floor(archive.length / 2));
    const staging = join(h.deploysRoot, '.staging');
    await until(async () => {
      for (const area of await readdir(staging)) if ((await readdir(join(staging, area), { recursive: true })).length > 0) return true;
      return false;
    }, 'the late deploy to write its first files');
    // Two newer releases of delta (other bytes): the first one is pruned and its objects
    // collected, all but those the late deploy has linked already; not its last file's.
    for (const version of [101, 102]) await deploy('delta', version);
    await h.trashEmptied();
    await storeCollected(store(), 10_000);
    const lastBody = old.get(`d${399 % 8}/f399.bin`)!;
    expect(await readFile(objectPath(store(), sha256(lastBody))).catch(() => 'collected')).toBe('collected');

    late.finish();
    const r = await late.response;
    expect(r.status).toBe(200);
    expect(await releaseDifferences(join(h.deploysRoot, 'racer', 'epsilon', r.body.release as string), old)).toEqual([]);
    sources.set(`epsilon/${r.body.release as string}`, old);
  });

  it('once the collections settle, the store holds exactly the objects the kept releases link', async () => {
    await adoptionsDone(h.deploysRoot);
    await h.trashEmptied();
    await storeCollected(store(), 10_000);
    const kept = await keptReleases();
    const objects = await storeObjects(store());
    expect(new Set(objects.map((o) => o.digest))).toEqual(digestsOf(kept));
    for (const object of objects) expect(object.nlink).toBeGreaterThan(1);
  });
});
