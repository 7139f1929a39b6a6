import { randomBytes } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/adapters/db/database.js';
import { objectPath } from '../../src/adapters/fs/store/object-names.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';
import { sha256 } from '../support/sha256.js';
import { slowBatch } from '../support/slow-upload.js';
import { until } from '../support/until.js';

const QUOTA = 200_000;
const overQuota = (wouldHold: number) => ({
  status: 'error',
  error: `storage quota exceeded: open deploys would hold ${wouldHold} bytes of uploads, USER_MAX_BYTES allows ${QUOTA}`,
});

/**
 * What open sessions may upload waits on the host outside every release, so USER_MAX_BYTES
 * holds it too: each session counts the objects it was told are missing, from its open
 * until it publishes or ends, whoever signed it; a batch may hold only those.
 */
describe(`open sessions' uploads under USER_MAX_BYTES=${QUOTA} (real server, real directories, real SQLite)`, () => {
  let h: Harness;
  let token: string;

  const manifestOf = (files: Record<string, Buffer>) => Object.entries(files).map(([path, bytes]) => ({ path, size: bytes.length, digest: sha256(bytes) }));
  const open = (as: string, project: string, files: Record<string, Buffer>) => h.call('POST', '/api/v1/deploys', { token: as, json: { project, files: manifestOf(files) } });
  const upload = (id: string, files: Buffer[]) => h.call('PUT', `/api/v1/deploys/${id}/objects`, { token, body: tgz(files.map((bytes) => file(sha256(bytes), bytes))), headers: { 'content-type': 'application/gzip' } });
  /** As the listing shows them (listing keeps no session alive): ids, expiries and what each may upload. */
  const listed = async () => (await h.call('GET', '/api/v1/deploys', { token })).body.sessions as { id: string; expiresAt: string; uploadBytes: number }[];
  const sessions = async () => (await listed()).map((s) => s.id).sort();
  const cancelAll = async () => {
    for (const id of await sessions()) await h.call('DELETE', `/api/v1/deploys/${id}`, { token });
  };
  /** `act`, then the files and the open sessions as they were. */
  const unchangedBy = async <T>(act: () => Promise<T>): Promise<T> => {
    await h.settled();
    const files = async () => ({ deploys: await snapshot(h.deploysRoot), docs: await snapshot(h.docsRoot) });
    const [tree, open] = [await files(), await listed()];
    const result = await act();
    await h.settled();
    expect(await files()).toEqual(tree);
    expect(await listed()).toEqual(open);
    return result;
  };

  beforeAll(async () => {
    h = await startHarness({ USER_MAX_BYTES: String(QUOTA) });
    token = await h.createUser('quota');
  });
  afterAll(async () => {
    await h.close();
  });

  it("the user's token and a deploy key, each with sessions whose uploads together would pass it: the one past it is 507, nothing opened", async () => {
    const key = (await h.call('POST', '/api/v1/projects/site/keys', { token, json: { name: 'ci', scope: 'deploy' } })).body.token as string;
    // Each within MAX_EXTRACTED_BYTES and the quota alone; the signers' allowances of sessions are not what bounds them.
    expect((await open(token, 'site', { 'a.bin': randomBytes(90_000) })).status).toBe(201);
    expect((await open(key, 'site', { 'b.bin': randomBytes(90_000) })).status).toBe(201);
    const third = await unchangedBy(() => open(key, 'site', { 'c.bin': randomBytes(20_001), 'same.bin': randomBytes(1) }));
    expect(third).toMatchObject({ status: 507, body: overQuota(200_002) });
    // Exactly at the quota fits, and a session with nothing to upload opens whatever they hold.
    expect((await open(token, 'site', { 'd.bin': randomBytes(20_000) })).status).toBe(201);
    expect((await h.deploy(token, 'held', tgz([file('e.bin', Buffer.from('held'))]))).status).toBe(200);
    expect(await open(token, 'site', { 'e.bin': Buffer.from('held') })).toMatchObject({ status: 201, body: { missing: [] } });
    await cancelAll();
    // Ended, they hold nothing: the same open fits now.
    expect((await open(key, 'site', { 'c.bin': randomBytes(20_001), 'same.bin': randomBytes(1) })).status).toBe(201);
    await cancelAll();
  });

  it('a revision that would pass it: 507, the session as it was', async () => {
    const first = { 'a.bin': randomBytes(50_000) };
    const opened = await open(token, 'site', first);
    expect((await open(token, 'other', { 'b.bin': randomBytes(100_000) })).status).toBe(201);
    const id = opened.body.id as string;
    const before = (await h.call('GET', `/api/v1/deploys/${id}`, { token })).body;
    const revised = await unchangedBy(() => h.call('PUT', `/api/v1/deploys/${id}/manifest`, { token, json: { files: manifestOf({ 'c.bin': randomBytes(100_001) }) } }));
    // Its own 50,000 replaced, not added to.
    expect(revised).toMatchObject({ status: 507, body: overQuota(200_001) });
    expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).body).toMatchObject({ missing: before.missing, bytes: 50_000 });
    expect((await h.call('PUT', `/api/v1/deploys/${id}/manifest`, { token, json: { files: manifestOf({ 'c.bin': randomBytes(100_000) }) } })).status).toBe(200);
    await cancelAll();
  });

  it('objects lost since the open are asked for again only if the quota has room for them; once it has, they upload and publish', async () => {
    const held = randomBytes(50_000);
    expect((await h.deploy(token, 'held', tgz([file('held.bin', held)]))).status).toBe(200);
    await h.settled();
    // Mostly new: nothing is built ahead of the publish, which links the held bytes from the store then.
    const site = { 'held.bin': held, 'new.bin': randomBytes(20_000), 'new2.bin': randomBytes(20_000) };
    const opened = await open(token, 'site', site);
    expect((opened.body.missing as string[]).sort()).toEqual([sha256(site['new.bin']), sha256(site['new2.bin'])].sort());
    const id = opened.body.id as string;
    expect((await upload(id, [site['new.bin'], site['new2.bin']])).status).toBe(200);
    const other = await open(token, 'other', { 'big.bin': randomBytes(130_000) });
    expect(other.status).toBe(201);
    // The store loses the held bytes (a disk repaired by hand): the session must be sent them again.
    await rm(join(h.deploysRoot, 'quota', '.objects', objectPath(sha256(held))));

    // 40,000 + 130,000 + the 50,000 lost would pass it: neither the GET nor the publish asks
    // for them, and neither keeps the session alive.
    expect(await unchangedBy(() => h.call('GET', `/api/v1/deploys/${id}`, { token }))).toMatchObject({ status: 507, body: overQuota(220_000) });
    expect(await unchangedBy(() => h.call('POST', `/api/v1/deploys/${id}/publish`, { token }))).toMatchObject({ status: 507, body: overQuota(220_000) });
    expect(await unchangedBy(() => upload(id, [held]))).toMatchObject({ status: 400, body: { error: `invalid objects: not an object this deploy is missing: ${sha256(held)}` } });

    await h.call('DELETE', `/api/v1/deploys/${String(other.body.id)}`, { token });
    const refused = await h.call('POST', `/api/v1/deploys/${id}/publish`, { token });
    expect(refused).toMatchObject({ status: 409, body: { missing: [sha256(held)] } });
    expect((await upload(id, [held])).status).toBe(200);
    expect((await h.call('POST', `/api/v1/deploys/${id}/publish`, { token })).status).toBe(200);
  });

  it('a batch still arriving when its session is cancelled: 404, and nothing of it stays', async () => {
    const bytes = randomBytes(60_000);
    const opened = await open(token, 'site', { 'a.bin': bytes });
    const id = opened.body.id as string;
    const batch = tgz([file(sha256(bytes), bytes)]);
    const upload = slowBatch(h.url, token, id, batch, batch.length - 64);
    await until(async () => (await readdir(join(h.deploysRoot, '.staging')).catch(() => [])).length > 0, 'the batch to be unpacking');
    expect((await h.call('DELETE', `/api/v1/deploys/${id}`, { token })).status).toBe(204);
    upload.finish();
    expect(await upload.response).toMatchObject({ status: 404, body: { error: 'deploy session not found' } });
    await h.settled();
    await expect(stat(join(h.deploysRoot, '.sessions', id))).rejects.toThrow(/ENOENT/);
  });

  it('an open the quota refuses leaves the idle session it would have taken the place of; one that fits takes it', async () => {
    const cutOff = (await open(token, 'site', { 'a.bin': randomBytes(120_000) })).body.id as string;
    expect((await open(token, 'other', { 'c.bin': randomBytes(70_000) })).status).toBe(201);
    // Idle past SUPERSEDE_AFTER_IDLE_SECONDS, as a pipeline cut off in flight leaves it: its
    // expiry 600 s short of DEPLOY_SESSION_SECONDS (3,600 by default) after now.
    const db = await openDatabase(`sqlite:${join(h.root, 'sitedrop.db')}`);
    try {
      await db.updateTable('deploy_sessions').set({ expires_at: new Date(Date.now() + 3_000_000).toISOString() }).where('id', '=', cutOff).execute();
    } finally {
      await db.destroy();
    }
    // Its 120,000 would make room, but 70,000 + 140,000 is over all the same.
    const refused = await unchangedBy(() => open(token, 'site', { 'b.bin': randomBytes(140_000) }));
    expect(refused).toMatchObject({ status: 507, body: overQuota(210_000) });
    const next = await open(token, 'site', { 'b.bin': randomBytes(130_000) });
    expect(next.status).toBe(201);
    expect(await sessions()).not.toContain(cutOff);
    await cancelAll();
  });
});
