import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';
import { slowUpload } from '../support/slow-upload.js';
import { until } from '../support/until.js';
import { file, tgz } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';

const QUOTA = 10_000;
/** A site of exactly `bytes` bytes on disk, none of it compressible. */
const site = (bytes: number, name = 'index.html') => tgz([file(name, randomBytes(Math.ceil(bytes / 2)).toString('hex').slice(0, bytes))]);
const refusal = (wouldKeep: number) => ({
  status: 'error',
  error: `storage quota exceeded: this deploy would keep ${wouldKeep} bytes, USER_MAX_BYTES allows ${QUOTA}`,
});

describe(`USER_MAX_BYTES=${QUOTA}, RELEASES_KEEP=2 (real server, real directories)`, () => {
  let h: Harness;
  const staging = () => readdir(join(h.deploysRoot, '.staging'));
  /** The release tree and live links, once the background deletions are done. */
  const tree = async () => {
    await h.trashEmptied();
    return { docs: await snapshot(h.docsRoot), deploys: await snapshot(h.deploysRoot) };
  };

  beforeAll(async () => {
    h = await startHarness({ USER_MAX_BYTES: String(QUOTA), RELEASES_KEEP: '2' });
  });
  afterAll(async () => {
    await h.close();
  });

  it('takes a deploy that fits, and one that brings the user exactly to the quota', async () => {
    const token = await h.createUser('fits');
    expect((await h.deploy(token, 'one', site(6000))).status).toBe(200);
    expect((await h.deploy(token, 'two', site(4000))).status).toBe(200);
  });

  it('refuses one that would pass it with 507 and a clear message, and changes nothing', async () => {
    const token = await h.createUser('full');
    const first = await h.deploy(token, 'site', site(7000));
    expect(first.status).toBe(200);
    const before = await tree();
    const live = await readlink(join(h.docsRoot, 'full/site'));

    const refused = await h.deploy(token, 'site', site(3001));
    expect(refused.status).toBe(507);
    expect(refused.body).toEqual(refusal(10_001));
    const other = await h.deploy(token, 'other', site(3001));
    expect(other.status).toBe(507);
    expect(other.body).toEqual(refusal(10_001));

    expect(await tree()).toEqual(before);
    expect(await readlink(join(h.docsRoot, 'full/site'))).toBe(live);
    expect(await staging()).toEqual([]);
    const releases = await h.call('GET', '/api/v1/projects/site/releases', { token });
    expect((releases.body.releases as unknown[]).length).toBe(1);
  });

  it('counts the bytes unpacked, not the upload: compression does not get round it', async () => {
    const token = await h.createUser('zipper');
    const bomb = tgz([file('index.html', 'x'.repeat(50_000))]);
    expect(bomb.length).toBeLessThan(1000);
    const r = await h.deploy(token, 'site', bomb);
    expect(r.status).toBe(507);
    expect(r.body).toEqual(refusal(50_000));
  });

  it('takes into account the release a redeploy prunes, at RELEASES_KEEP', async () => {
    const token = await h.createUser('pruner');
    for (let i = 0; i < 3; i += 1) expect((await h.deploy(token, 'site', site(4000))).status).toBe(200);
    expect(await readdir(join(h.deploysRoot, 'pruner/site'))).toHaveLength(2);
    // 8000 on disk, but the oldest 4000 goes: 4000 + 6000 fits exactly.
    expect((await h.deploy(token, 'site', site(6000))).status).toBe(200);
    // Now 4000 + 6000: replacing the 4000 with 4001 is one byte over.
    const over = await h.deploy(token, 'site', site(4001));
    expect(over.status).toBe(507);
    expect(over.body).toEqual(refusal(10_001));
  });

  it('adds up every project of the user, and no one else\'s; deleting a project makes room', async () => {
    const ann = await h.createUser('ann');
    const bob = await h.createUser('bob');
    expect((await h.deploy(bob, 'big', site(9000))).status).toBe(200);
    expect((await h.deploy(ann, 'one', site(5000))).status).toBe(200);
    expect((await h.deploy(ann, 'two', site(4000))).status).toBe(200);
    const over = await h.deploy(ann, 'three', site(1001));
    expect(over.status).toBe(507);
    expect(over.body).toEqual(refusal(10_001));
    expect((await h.call('DELETE', '/api/v1/projects/one', { token: ann })).status).toBe(200);
    expect((await h.deploy(ann, 'three', site(1001))).status).toBe(200);
  });

  it('counts a release that has no deploy record, measured on disk', async () => {
    const token = await h.createUser('veteran');
    // As a release from before deploy records were kept: files on disk, no record.
    const old = join(h.deploysRoot, 'veteran/old/20250101T000000');
    await mkdir(join(old, 'assets'), { recursive: true });
    await writeFile(join(old, 'index.html'), 'o'.repeat(5000));
    await writeFile(join(old, 'assets/app.js'), 'j'.repeat(3000));
    const over = await h.deploy(token, 'site', site(2001));
    expect(over.status).toBe(507);
    expect(over.body).toEqual(refusal(10_001));
    expect((await h.deploy(token, 'site', site(2000))).status).toBe(200);
  });

  it('two deploys of different projects at once that together pass the quota are not both taken', async () => {
    // Several rounds, each with a fresh user: without the user's storage lock, some round's
    // two checks would both run before either release is committed.
    for (let round = 0; round < 4; round += 1) {
      const token = await h.createUser(`racer${round}`);
      const uploads = ['left', 'right'].map((project) => {
        const archive = site(6000);
        return slowUpload(h.url, token, project, archive, 3000);
      });
      await until(async () => (await staging()).length === 2, 'two staging areas');
      for (const upload of uploads) upload.finish();
      const answers = await Promise.all(uploads.map((u) => u.response));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 507]);
      expect(answers.find((a) => a.status === 507)!.body).toEqual(refusal(12_000));
      // The user's store of shared files (.objects) and kept manifests (.manifests) are no project.
      const kept = (await readdir(join(h.deploysRoot, `racer${round}`))).filter((name) => !name.startsWith('.'));
      expect(kept).toHaveLength(1);
      await until(async () => (await staging()).length === 0, 'the refused staging area to go');
    }
  });

  it('an upload that never ends holds back none of the user\'s other deploys', async () => {
    const token = await h.createUser('stalled');
    const stuck = slowUpload(h.url, token, 'slow', site(6000), 3000);
    await until(async () => (await staging()).length === 1, 'a staging area');
    expect((await h.deploy(token, 'quick', site(4000))).status).toBe(200);
    stuck.req.destroy();
    await until(async () => (await staging()).length === 0, 'the stalled staging area to go');
  });

  it('counts a full quota in the metrics as a refused deploy, not a failed one', async () => {
    const r = await fetch(`${h.url}/api/v1/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const text = await r.text();
    expect(text).toMatch(/sitedrop_deploys_total\{outcome="rejected"\} [1-9]/);
    expect(text).not.toMatch(/sitedrop_deploys_total\{outcome="failed"\} [1-9]/);
  });
});

describe('a deploy whose token changed while it uploaded (real server, real directories)', () => {
  let h: Harness;
  const staging = () => readdir(join(h.deploysRoot, '.staging'));

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  async function raced(user: string, change: () => Promise<void>) {
    const token = await h.createUser(user);
    expect((await h.deploy(token, 'site', site(100))).status).toBe(200);
    // Earlier tests' pruned releases may still be in the trash: the snapshots compare this deploy's effect alone.
    await h.settled();
    const before = { docs: await snapshot(h.docsRoot), deploys: await snapshot(h.deploysRoot) };
    const archive = site(200_000);
    const upload = slowUpload(h.url, token, 'site', archive, Math.floor(archive.length / 2));
    await until(async () => (await staging()).length === 1, 'a staging area');
    await change();
    upload.finish();
    const answer = await upload.response;
    await h.trashEmptied();
    return { answer, before, after: { docs: await snapshot(h.docsRoot), deploys: await snapshot(h.deploysRoot) } };
  }

  it('a reroll mid-upload: 401 unauthorized and nothing published; the new token deploys', async () => {
    let fresh = '';
    const { answer, before, after } = await raced('rerolled', async () => {
      fresh = await h.createUser('rerolled');
    });
    expect(answer).toEqual({ status: 401, body: { status: 'error', error: 'unauthorized' } });
    expect(after).toEqual(before);
    expect(await staging()).toEqual([]);
    expect((await h.deploy(fresh, 'site', site(100))).status).toBe(200);
  });

  it('the user deleted and created again mid-upload: 401 unauthorized and nothing published', async () => {
    const { answer, before, after } = await raced('reborn', async () => {
      const del = await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'reborn' } });
      expect(del.status).toBe(200);
      await h.createUser('reborn');
    });
    expect(answer).toEqual({ status: 401, body: { status: 'error', error: 'unauthorized' } });
    expect(after).toEqual(before);
    expect(await staging()).toEqual([]);
  });
});
