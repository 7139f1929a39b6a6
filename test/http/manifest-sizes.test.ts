import { randomBytes } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/adapters/db/database.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { slowBatch } from '../support/slow-upload.js';
import { file, tgz } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';
import { sha256 } from '../support/sha256.js';
import { until } from '../support/until.js';

/**
 * The limits and the quota count a session's files at the sizes its manifest gives. An
 * object no probe found when the manifest was checked may come later, by an upload or by
 * another deploy: the publish holds its size against the manifest's before it builds.
 */
describe("a manifest's sizes are its objects' own, at the publish too (real server, real directories, real SQLite)", () => {
  let h: Harness;
  let token: string;
  const LIMIT = 100_000;

  const open = (files: unknown) => h.call('POST', '/api/v1/deploys', { token, json: { project: 'site', files } });
  const publish = (id: string) => h.call('POST', `/api/v1/deploys/${id}/publish`, { token });
  /** Ten files of `bytes`, each said to be `size` bytes: ten times the bytes unless it is their own. */
  const tenOf = (bytes: Buffer, size: number) => Array.from({ length: 10 }, (_, i) => ({ path: `f${i}.bin`, size, digest: sha256(bytes) }));
  const releases = () => readdir(join(h.deploysRoot, 'sizes', 'site')).catch(() => []);
  /** Whether a batch has begun for the session, as the database has it. */
  const uploadsBegun = async (id: string) => {
    const db = await openDatabase(`sqlite:${join(h.root, 'sitedrop.db')}`);
    try {
      return (await db.selectFrom('deploy_sessions').select('uploads_begun').where('id', '=', id).executeTakeFirst())?.uploads_begun;
    } finally {
      await db.destroy();
    }
  };

  beforeAll(async () => {
    h = await startHarness({ MAX_EXTRACTED_BYTES: String(LIMIT), MAX_FILES: '50' });
    token = await h.createUser('sizes');
  });
  afterAll(async () => {
    await h.close();
  });

  it('an object missing at the open and stored since by a tarball deploy, at another size than the manifest says: 400, nothing changed', async () => {
    const big = randomBytes(90_000);
    const opened = await open(tenOf(big, 1));
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    expect(opened.body).toMatchObject({ bytes: 10, missing: [sha256(big)] });
    expect((await h.deploy(token, 'other', tgz([file('big.bin', big)]))).status).toBe(200);
    await h.settled();
    const before = await snapshot(h.root);

    const lie = `invalid manifest: size does not match the object's: ${sha256(big)} is not 1 bytes`;
    // Asked what it lacks, the session is refused as its publish is, and kept alive by neither.
    expect(await h.call('GET', `/api/v1/deploys/${String(opened.body.id)}`, { token })).toMatchObject({ status: 400, body: { error: lie } });
    const reply = await publish(opened.body.id as string);
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe(lie);
    expect(await snapshot(h.root)).toEqual(before);
    expect(await releases()).toEqual([]);
  });

  it("a deploy key's session refused so records nothing of the key: its last use stays as it was", async () => {
    const made = await h.call('POST', '/api/v1/projects/site/keys', { token, json: { name: 'ci', scope: 'deploy' } });
    const key = made.body.token as string;
    const lastUsed = async () => ((await h.call('GET', '/api/v1/projects/site/keys', { token })).body.keys as { id: string; lastUsedAt: string | null }[]).find((k) => k.id === made.body.id)!.lastUsedAt;
    const big = randomBytes(90_000);
    const opened = await h.call('POST', '/api/v1/deploys', { token: key, json: { project: 'site', files: tenOf(big, 1) } });
    expect(opened.body).toMatchObject({ missing: [sha256(big)] });
    // Stored in the project's own release, so the key's session may draw on it.
    expect((await h.deploy(key, 'site', tgz([file('big.bin', big)]))).status).toBe(200);
    await h.settled();
    const used = await lastUsed();
    const before = await snapshot(h.root);
    expect((await h.call('POST', `/api/v1/deploys/${String(opened.body.id)}/publish`, { token: key })).status).toBe(400);
    expect(await lastUsed()).toBe(used);
    expect(await snapshot(h.root)).toEqual(before);
  });

  it('a session open across the upgrade that began keeping unconfirmed objects (none kept) has every object confirmed', async () => {
    const big = randomBytes(90_000);
    const opened = await open(tenOf(big, 1));
    const db = await openDatabase(`sqlite:${join(h.root, 'sitedrop.db')}`);
    try {
      await db.updateTable('deploy_session_manifests').set({ unconfirmed: null }).where('id', '=', opened.body.id as string).execute();
    } finally {
      await db.destroy();
    }
    expect((await h.deploy(token, 'other', tgz([file('big.bin', big)]))).status).toBe(200);
    const reply = await publish(opened.body.id as string);
    expect(reply).toMatchObject({ status: 400, body: { error: `invalid manifest: size does not match the object's: ${sha256(big)} is not 1 bytes` } });
  });

  it('the same object at its own size is taken from the store at the publish, uploaded by no one', async () => {
    const small = randomBytes(5_000);
    const opened = await open(tenOf(small, small.length));
    expect(opened.body).toMatchObject({ missing: [sha256(small)] });
    expect((await h.deploy(token, 'other', tgz([file('small.bin', small)]))).status).toBe(200);

    const reply = await publish(opened.body.id as string);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const live = join(h.deploysRoot, 'sizes', 'site', reply.body.release as string);
    for (let i = 0; i < 10; i += 1) expect((await stat(join(live, `f${i}.bin`))).size).toBe(small.length);
  });

  it('a manifest sent while an upload of the object at its true size is under way: 409, and the upload lands in the manifest it came for', async () => {
    const big = randomBytes(90_000);
    const opened = await open([{ path: 'big.bin', size: big.length, digest: sha256(big) }]);
    const id = opened.body.id as string;
    const batch = tgz([file(sha256(big), big)]);
    const upload = slowBatch(h.url, token, id, batch, batch.length - 200);
    // Under way, its bytes not yet kept: once it has begun, the manifest is no longer the client's to change.
    await until(async () => (await uploadsBegun(id)) === 1, 'the batch to begin');
    const revised = await h.call('PUT', `/api/v1/deploys/${id}/manifest`, { token, json: { files: tenOf(big, 1) } });
    expect(revised).toMatchObject({ status: 409, body: { error: 'the session has uploads already: open another to send another manifest' } });
    upload.finish();
    expect((await upload.response).status).toBe(200);
    const published = await publish(id);
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    const live = join(h.docsRoot, 'sizes', 'site');
    expect(await readdir(live)).toEqual(['big.bin']);
    expect((await stat(join(live, 'big.bin'))).size).toBe(big.length);
  });
});
