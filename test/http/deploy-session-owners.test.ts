import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/adapters/db/database.js';
import { SERVICE_BACKENDS, type Backend } from '../support/service-backends.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';
import { sha256 } from '../support/sha256.js';

const MAX = 3;
/** A one-page site's manifest: its content is new to the store unless `text` was sent before. */
const manifest = (text: string) => [{ path: 'index.html', size: Buffer.byteLength(text), digest: sha256(text) }];
const NOT_FOUND = { status: 404, body: { status: 'error', error: 'deploy session not found' } };
const UNAUTHORIZED = { status: 401, body: { status: 'error', error: 'unauthorized' } };

describe.each(SERVICE_BACKENDS)("whose deploy sessions count against whom, and who ends them (real server, %s)", (_name, openBackend) => {
  let h: Harness;
  let backend: Backend;
  let owner: string;

  const open = (token: string, project: string, text: string, preview?: string) =>
    h.call('POST', '/api/v1/deploys', { token, json: { project, ...(preview === undefined ? {} : { preview }), files: manifest(text) } });
  const opened = async (token: string, project: string, text: string, preview?: string): Promise<string> => {
    const r = await open(token, project, text, preview);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.id as string;
  };
  const show = (id: string, token = owner) => h.call('GET', `/api/v1/deploys/${id}`, { token });
  const cancel = (id: string, token = owner) => h.call('DELETE', `/api/v1/deploys/${id}`, { token });
  const listed = async (token = owner) => {
    const r = await h.call('GET', '/api/v1/deploys', { token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.sessions as Record<string, unknown>[];
  };
  const makeKey = async (project: string, scope: 'deploy' | 'preview') => {
    const r = await h.call('POST', `/api/v1/projects/${project}/keys`, { token: owner, json: { name: 'ci', scope } });
    expect(r.status).toBe(200);
    return { id: r.body.id as string, token: r.body.token as string };
  };
  /** Paths under DEPLOYS_ROOT named for the session: its uploads, while it has any. */
  const traces = async (id: string) => {
    await h.trashEmptied();
    return Object.keys(await snapshot(h.deploysRoot)).filter((path) => path.includes(id));
  };
  /** Its last use moved `seconds` into the past, where the database keeps it: a minute is long for a test. */
  const age = async (id: string, seconds: number) => {
    const db = await openDatabase(backend.url(h));
    try {
      const { expires_at } = await db.selectFrom('deploy_sessions').select('expires_at').where('id', '=', id).executeTakeFirstOrThrow();
      await db.updateTable('deploy_sessions').set({ expires_at: new Date(Date.parse(expires_at) - seconds * 1000).toISOString() }).where('id', '=', id).execute();
    } finally {
      await db.destroy();
    }
  };

  beforeAll(async () => {
    backend = await openBackend();
    h = await startHarness({ ...backend.env, DEPLOY_SESSIONS_MAX: String(MAX) });
    owner = await h.createUser('owner');
  });
  afterAll(async () => {
    await h.close();
    await backend.drop();
  });

  it("a preview key at DEPLOY_SESSIONS_MAX is refused itself, and stops neither its owner's sessions (another project, the same one live) nor another key's", async () => {
    const key = await makeKey('docs', 'preview');
    const keys = [];
    for (let i = 0; i < MAX; i++) keys.push(await opened(key.token, 'docs', `pr ${i}`, `pr-${i}`));
    const refused = await open(key.token, 'docs', 'one more', 'pr-9');
    expect(refused).toMatchObject({ status: 429, body: { error: 'too many open deploy sessions, retry later' } });
    const mine = [await opened(owner, 'blog', 'the owner, another project'), await opened(owner, 'docs', 'the owner, live')];
    const other = await makeKey('blog', 'deploy');
    const theirs = await opened(other.token, 'blog', 'another key');
    for (const id of [...keys, ...mine, theirs]) expect((await cancel(id)).status).toBe(204);
  });

  it("GET /api/v1/deploys lists the owner's open sessions, a key's with the key's id and never its token; a key may not list; the owner cancels a key's session", async () => {
    const key = await makeKey('docs', 'preview');
    const own = await opened(owner, 'docs', 'listed, the owner');
    const keyed = await opened(key.token, 'docs', 'listed, a key', 'pr-1');
    const stranger = await h.createUser('stranger');
    const strangers = await opened(stranger, 'docs', 'listed, another user');
    const sessions = await listed();
    expect(sessions).toEqual([
      // What each may upload: its one file, which the store lacked.
      { id: own, project: 'docs', preview: null, keyId: null, uploadBytes: Buffer.byteLength('listed, the owner'), createdAt: expect.any(String), expiresAt: expect.any(String) },
      { id: keyed, project: 'docs', preview: 'pr-1', keyId: key.id, uploadBytes: Buffer.byteLength('listed, a key'), createdAt: expect.any(String), expiresAt: expect.any(String) },
    ]);
    expect(Date.parse(sessions[1]!.expiresAt as string)).toBeGreaterThan(Date.now());
    expect(JSON.stringify(sessions)).not.toContain(key.token);
    expect(await h.call('GET', '/api/v1/deploys', { token: key.token })).toMatchObject({ status: 401, body: { error: 'unauthorized' } });
    expect((await listed(stranger)).map((s) => s.id)).toEqual([strangers]);

    expect(await cancel(keyed)).toMatchObject({ status: 204 });
    expect(await show(keyed, key.token)).toMatchObject(NOT_FOUND);
    expect((await listed()).map((s) => s.id)).toEqual([own]);
    await cancel(own);
    await cancel(strangers, stranger);
    expect(await listed()).toEqual([]);
  });

  it("a deploy key finds none of its owner's sessions, nor another key's: it may not use them to draw on the owner's store", async () => {
    // Content of the owner's other project: a key of docs must never learn it is stored, nor publish it.
    const secret = 'the owner, another project, secret';
    expect((await h.deploy(owner, 'blog', tgz([file('index.html', secret)]))).status).toBe(200);
    const live = await opened(owner, 'docs', secret);
    const preview = await opened(owner, 'docs', secret, 'pr-7');
    const other = await makeKey('docs', 'deploy');
    const others = await opened(other.token, 'docs', 'another key');
    for (const scope of ['deploy', 'preview'] as const) {
      const key = await makeKey('docs', scope);
      await h.settled();
      const withKey = await snapshot(h.root);
      // One the key could not deploy (a preview key, a live session) is refused for that first.
      for (const [id, isLive] of [[live, true], [preview, false], [others, true]] as const) {
        const refused = scope === 'preview' && isLive ? UNAUTHORIZED : NOT_FOUND;
        expect(await show(id, key.token)).toMatchObject(refused);
        expect(await h.call('PUT', `/api/v1/deploys/${id}/manifest`, { token: key.token, json: { files: manifest(secret) } })).toMatchObject(refused);
        expect(await h.call('PUT', `/api/v1/deploys/${id}/objects`, { token: key.token, body: tgz([file(sha256(secret), secret)]), headers: { 'content-type': 'application/gzip' } })).toMatchObject(refused);
        expect(await h.call('POST', `/api/v1/deploys/${id}/publish`, { token: key.token })).toMatchObject(refused);
        expect(await cancel(id, key.token)).toMatchObject(refused);
      }
      expect(await snapshot(h.root)).toEqual(withKey);
      await h.call('DELETE', `/api/v1/projects/docs/keys/${key.id}`, { token: owner });
    }
    // Each signer still has its own: the owner's publish, the other key's show.
    expect((await show(others, other.token)).status).toBe(200);
    expect((await h.call('POST', `/api/v1/deploys/${live}/publish`, { token: owner })).status).toBe(200);
    for (const id of [preview, others]) await cancel(id);
  });

  it('revoking a key closes its sessions at once, their uploads with them; the owner then finds them nowhere', async () => {
    const key = await makeKey('docs', 'deploy');
    const keep = await makeKey('docs', 'deploy');
    const text = 'uploaded by a key about to be revoked';
    const id = await opened(key.token, 'docs', text);
    const preview = await opened(key.token, 'docs', 'another of its sessions', 'pr-2');
    const kept = await opened(keep.token, 'docs', 'a session of another key of the project');
    const uploaded = await h.call('PUT', `/api/v1/deploys/${id}/objects`, { token: key.token, body: tgz([file(sha256(text), text)]) });
    expect(uploaded.status).toBe(200);
    expect(await traces(id)).not.toEqual([]);

    expect((await h.call('DELETE', `/api/v1/projects/docs/keys/${key.id}`, { token: owner })).status).toBe(200);
    expect(await show(id)).toMatchObject(NOT_FOUND);
    expect(await show(preview)).toMatchObject(NOT_FOUND);
    expect((await listed()).map((s) => s.id)).toEqual([kept]);
    expect(await traces(id)).toEqual([]);
    await cancel(kept);
  });

  it("deleting a project closes its keys' sessions; the owner's own sessions stay", async () => {
    expect((await h.deploy(owner, 'doomed', tgz([file('index.html', 'doomed')]))).status).toBe(200);
    const key = await makeKey('doomed', 'preview');
    const keyed = await opened(key.token, 'doomed', 'a preview of a project about to go', 'pr-1');
    const own = await opened(owner, 'blog', "the owner's, another project");
    expect((await h.call('DELETE', '/api/v1/projects/doomed', { token: owner })).status).toBe(200);
    expect(await show(keyed)).toMatchObject(NOT_FOUND);
    expect((await listed()).map((s) => s.id)).toEqual([own]);
    await cancel(own);
  });

  it("a new session supersedes one of the same signer, project and preview idle for a minute; not one in use, nor another signer's, preview's or project's", async () => {
    const key = await makeKey('docs', 'deploy');
    const text = 'uploaded before the pipeline was cancelled';
    const cutOff = await opened(key.token, 'docs', text);
    const uploaded = await h.call('PUT', `/api/v1/deploys/${cutOff}/objects`, { token: key.token, body: tgz([file(sha256(text), text)]) });
    expect(uploaded.status).toBe(200);
    const inUse = await opened(key.token, 'docs', 'a deploy of the same key still in use');
    const idle = [
      await opened(key.token, 'docs', 'a preview of the same key', 'pr-1'),
      await opened(owner, 'docs', "the owner's own"),
      await opened(owner, 'blog', "the owner's, another project"),
    ];
    for (const id of [cutOff, ...idle]) await age(id, 61);
    await age(inUse, 30);
    // The key is at DEPLOY_SESSIONS_MAX: but for the cut-off one superseded, this is 429.
    const next = await opened(key.token, 'docs', 'the next pipeline');
    const ownPreview = await opened(owner, 'docs', "the owner's preview", 'pr-7');

    expect(await show(cutOff)).toMatchObject(NOT_FOUND);
    expect(await h.call('POST', `/api/v1/deploys/${cutOff}/publish`, { token: key.token })).toMatchObject(NOT_FOUND);
    expect(await traces(cutOff)).toEqual([]);
    const open = [inUse, ...idle, next, ownPreview];
    expect((await listed()).map((s) => s.id).sort()).toEqual([...open].sort());
    for (const id of open) expect((await cancel(id)).status).toBe(204);
  });
});
