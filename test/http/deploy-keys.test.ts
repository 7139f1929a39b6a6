import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/adapters/db/database.js';
import { loadOpenApiDocument } from '../../src/adapters/http/openapi-document.js';
import { PinoLogger } from '../../src/adapters/log/logger.js';
import { SERVICE_BACKENDS, type Backend } from '../support/service-backends.js';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';
import { slowUpload } from '../support/slow-upload.js';
import { until } from '../support/until.js';
import { file, tgz } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';
import { sha256 } from '../support/sha256.js';

const site = (marker: string) => tgz([file('index.html', marker)]);
const UNAUTHORIZED = { status: 401, body: { status: 'error', error: 'unauthorized' } };

describe.each(SERVICE_BACKENDS)('deploy keys through the real API (%s, real directories)', (_name, open) => {
  let h: Harness;
  let backend: Backend;
  let owner: string;
  const lines: string[] = [];
  const issued: string[] = [];
  const tree = async () => ({ docs: await snapshot(h.docsRoot), deploys: await snapshot(h.deploysRoot) });

  const makeKey = async (project: string, body: Record<string, unknown>, token = owner) => {
    const r = await h.call('POST', `/api/v1/projects/${project}/keys`, { token, json: body });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    issued.push(r.body.token as string);
    return { id: r.body.id as string, token: r.body.token as string };
  };
  const keysOf = async (project: string, token = owner) => {
    const r = await h.call('GET', `/api/v1/projects/${project}/keys`, { token });
    expect(r.status).toBe(200);
    return r.body.keys as Record<string, unknown>[];
  };

  beforeAll(async () => {
    backend = await open();
    const logger = new PinoLogger({ level: 'info', format: 'json', destination: { write: (line: string) => void lines.push(line) } });
    h = await startHarness(backend.env, logger);
    owner = await h.createUser('owner');
    expect((await h.deploy(owner, 'docs', site('by the owner'))).status).toBe(200);
  });
  afterAll(async () => {
    await h.close();
    await backend.drop();
  });

  it('makes a key for a project that does not exist yet; its token is shown once and never listed', async () => {
    const made = await h.call('POST', '/api/v1/projects/not-yet/keys', { token: owner, json: { name: 'GitHub Actions', scope: 'deploy', expiresInDays: 30 } });
    expect(made.status).toBe(200);
    expect(made.body).toEqual({ status: 'ok', id: expect.any(String), token: expect.stringMatching(/^[A-Za-z0-9]{32}$/) });
    issued.push(made.body.token as string);
    const listed = await h.call('GET', '/api/v1/projects/not-yet/keys', { token: owner });
    expect(listed.body).toEqual({
      status: 'ok',
      keys: [{ id: made.body.id, name: 'GitHub Actions', scope: 'deploy', createdAt: expect.any(String), expiresAt: expect.any(String), lastUsedAt: null }],
    });
    const key = (listed.body.keys as Record<string, string>[])[0]!;
    expect(Date.parse(key.expiresAt!) - Date.parse(key.createdAt!)).toBe(30 * 86_400_000);
    expect(JSON.stringify(listed.body)).not.toContain(made.body.token as string);
    const forever = await makeKey('not-yet', { name: 'no expiry', scope: 'preview' });
    expect((await keysOf('not-yet')).map((k) => [k.id, k.scope, k.expiresAt])).toEqual([
      [made.body.id, 'deploy', key.expiresAt],
      [forever.id, 'preview', null],
    ]);
  });

  it("a deploy key deploys its own project live, as the project's owner, and its last use is recorded", async () => {
    const key = await makeKey('docs', { name: 'ci', scope: 'deploy' });
    const r = await h.deploy(key.token, 'docs', site('by the key'));
    expect(r).toMatchObject({ status: 200, body: { status: 'ok', project: 'docs', username: 'owner', url: 'https://sites.example.test/owner/docs/', release: expect.any(String) } });
    expect(await readFile(join(h.docsRoot, 'owner/docs/index.html'), 'utf8')).toBe('by the key');
    const [listed] = await keysOf('docs');
    expect(Date.parse(listed!.lastUsedAt as string)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('a key refused 401 (another project, live with a preview key, a session not its own) leaves lastUsedAt as it was; an allowed request moves it', async () => {
    const lastUsed = async (id: string) => (await keysOf('docs')).find((k) => k.id === id)?.lastUsedAt;
    const key = await makeKey('docs', { name: 'ci', scope: 'deploy' });
    const previewKey = await makeKey('docs', { name: 'pull requests', scope: 'preview' });
    const files = [{ path: 'index.html', size: 5, digest: sha256('hello') }];
    const openSession = (token: string, project: string, preview?: string) => h.call('POST', '/api/v1/deploys', { token, json: { project, preview, files } });
    const owners = await openSession(owner, 'docs');
    expect(owners.status).toBe(201);

    expect(await h.deploy(key.token, 'other', site('stray'))).toMatchObject(UNAUTHORIZED);
    expect(await openSession(key.token, 'other')).toMatchObject(UNAUTHORIZED);
    expect(await h.deploy(previewKey.token, 'docs', site('not live'))).toMatchObject(UNAUTHORIZED);
    expect(await openSession(previewKey.token, 'docs')).toMatchObject(UNAUTHORIZED);
    expect(await h.call('GET', `/api/v1/deploys/${String(owners.body.id)}`, { token: previewKey.token })).toMatchObject(UNAUTHORIZED);
    expect(await lastUsed(key.id)).toBeNull();
    expect(await lastUsed(previewKey.id)).toBeNull();

    expect((await h.deploy(previewKey.token, 'docs', site('a preview'), { preview: 'pr-used' })).status).toBe(200);
    expect(Date.parse((await lastUsed(previewKey.id)) as string)).toBeGreaterThan(Date.now() - 60_000);
    const mine = await openSession(key.token, 'docs');
    expect(mine.status).toBe(201);
    expect(Date.parse((await lastUsed(key.id)) as string)).toBeGreaterThan(Date.now() - 60_000);
    for (const id of [owners.body.id, mine.body.id]) expect((await h.call('DELETE', `/api/v1/deploys/${String(id)}`, { token: owner })).status).toBe(204);
  });

  it('a deploy key deploys a project that did not exist when it was made', async () => {
    const key = await makeKey('fresh', { name: 'ci', scope: 'deploy' });
    expect((await h.deploy(key.token, 'fresh', site('first'))).status).toBe(200);
    expect(await readFile(join(h.docsRoot, 'owner/fresh/index.html'), 'utf8')).toBe('first');
  });

  it('refuses a deploy of another project with 401, writing nothing', async () => {
    const key = await makeKey('docs', { name: 'ci', scope: 'deploy' });
    const before = await tree();
    expect(await h.deploy(key.token, 'other', site('stray'))).toMatchObject(UNAUTHORIZED);
    expect(await h.deploy(key.token, 'other', site('stray'), { fileFirst: true })).toMatchObject(UNAUTHORIZED);
    await h.trashEmptied();
    expect(await tree()).toEqual(before);
  });

  it('a preview-scoped key cannot deploy live: 401, writing nothing', async () => {
    const key = await makeKey('docs', { name: 'pull requests', scope: 'preview' });
    const before = await tree();
    expect(await h.deploy(key.token, 'docs', site('not live'))).toMatchObject(UNAUTHORIZED);
    await h.trashEmptied();
    expect(await tree()).toEqual(before);
  });

  it('an expired key is refused with 401', async () => {
    const key = await makeKey('docs', { name: 'short-lived', scope: 'deploy', expiresInDays: 1 });
    expect((await h.deploy(key.token, 'docs', site('in time'))).status).toBe(200);
    // A day is long for a test: the key's expiry is moved into the past where it is kept.
    const db = await openDatabase(backend.url(h));
    try {
      await db.updateTable('deploy_keys').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', key.id).execute();
    } finally {
      await db.destroy();
    }
    expect(await h.deploy(key.token, 'docs', site('too late'))).toMatchObject(UNAUTHORIZED);
    expect(await readFile(join(h.docsRoot, 'owner/docs/index.html'), 'utf8')).toBe('in time');
  });

  it('a revoked key is refused at once; an unknown or already revoked key is 404 key not found', async () => {
    const key = await makeKey('docs', { name: 'ci', scope: 'deploy' });
    expect(await h.call('DELETE', `/api/v1/projects/docs/keys/${key.id}`, { token: owner })).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect((await keysOf('docs')).map((k) => k.id)).not.toContain(key.id);
    expect(await h.deploy(key.token, 'docs', site('revoked'))).toMatchObject(UNAUTHORIZED);
    const gone = { status: 404, body: { status: 'error', error: 'key not found' } };
    expect(await h.call('DELETE', `/api/v1/projects/docs/keys/${key.id}`, { token: owner })).toMatchObject(gone);
    expect(await h.call('DELETE', '/api/v1/projects/docs/keys/no-such-key', { token: owner })).toMatchObject(gone);
    // A key is revoked through its own project only.
    const other = await makeKey('fresh', { name: 'ci', scope: 'deploy' });
    expect(await h.call('DELETE', `/api/v1/projects/docs/keys/${other.id}`, { token: owner })).toMatchObject(gone);
    expect((await h.deploy(other.token, 'fresh', site('still good'))).status).toBe(200);
  });

  it('a key revoked while its deploy uploads publishes nothing: 401, and the tree is as it was', async () => {
    const key = await makeKey('docs', { name: 'ci', scope: 'deploy' });
    expect((await h.deploy(key.token, 'docs', site('before'))).status).toBe(200);
    const before = await tree();
    const archive = tgz([file('index.html', 'during'), file('blob.txt', randomBytes(150_000).toString('hex'))]);
    const upload = slowUpload(h.url, key.token, 'docs', archive, Math.floor(archive.length / 2));
    await until(async () => (await readdir(join(h.deploysRoot, '.staging'))).length === 1, 'a staging area');
    expect((await h.call('DELETE', `/api/v1/projects/docs/keys/${key.id}`, { token: owner })).status).toBe(200);
    upload.finish();
    expect(await upload.response).toEqual(UNAUTHORIZED);
    await h.trashEmptied();
    expect(await tree()).toEqual(before);
    expect(await readdir(join(h.deploysRoot, '.staging'))).toEqual([]);
  });

  it('keys go when their project is deleted', async () => {
    const key = await makeKey('doomed', { name: 'ci', scope: 'deploy' });
    expect((await h.deploy(key.token, 'doomed', site('x'))).status).toBe(200);
    expect((await h.call('DELETE', '/api/v1/projects/doomed', { token: owner })).status).toBe(200);
    expect(await keysOf('doomed')).toEqual([]);
    expect(await h.deploy(key.token, 'doomed', site('back'))).toMatchObject(UNAUTHORIZED);
  });

  it('keys go when their user is deleted, and a new user of the same name does not inherit them', async () => {
    const first = await h.createUser('leaving');
    const made = await h.call('POST', '/api/v1/projects/site/keys', { token: first, json: { name: 'ci', scope: 'deploy' } });
    const key = made.body.token as string;
    issued.push(key);
    expect((await h.deploy(key, 'site', site('x'))).status).toBe(200);
    expect((await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'leaving' } })).status).toBe(200);
    expect(await h.deploy(key, 'site', site('ghost'))).toMatchObject(UNAUTHORIZED);
    const second = await h.createUser('leaving');
    expect(await keysOf('site', second)).toEqual([]);
    expect(await h.deploy(key, 'site', site('ghost'))).toMatchObject(UNAUTHORIZED);
  });

  it("another user neither sees nor revokes the owner's keys", async () => {
    const key = await makeKey('docs', { name: 'ci', scope: 'deploy' });
    const stranger = await h.createUser('stranger');
    expect(await keysOf('docs', stranger)).toEqual([]);
    expect(await h.call('DELETE', `/api/v1/projects/docs/keys/${key.id}`, { token: stranger })).toMatchObject({ status: 404, body: { error: 'key not found' } });
    expect((await keysOf('docs')).map((k) => k.id)).toContain(key.id);
  });

  it('refuses a bad key request with a clear error, and makes nothing', async () => {
    const refusals: [unknown, string][] = [
      [['not', 'an', 'object'], 'invalid request body'],
      [{ scope: 'deploy' }, 'invalid request body'],
      [{ name: 'ci' }, 'invalid request body'],
      [{ name: 7, scope: 'deploy' }, 'invalid request body'],
      [{ name: 'ci', scope: 'deploy', expiresInDays: '30' }, 'invalid request body'],
      [{ name: '', scope: 'deploy' }, 'key name must be 1 to 64 characters, none of them control characters'],
      [{ name: 'x'.repeat(65), scope: 'deploy' }, 'key name must be 1 to 64 characters, none of them control characters'],
      [{ name: 'two\nlines', scope: 'deploy' }, 'key name must be 1 to 64 characters, none of them control characters'],
      [{ name: 'ci', scope: 'admin' }, "scope must be 'deploy' or 'preview'"],
      [{ name: 'ci', scope: 'deploy', expiresInDays: 0 }, 'expiresInDays must be a whole number from 1 to 3650'],
      [{ name: 'ci', scope: 'deploy', expiresInDays: 1.5 }, 'expiresInDays must be a whole number from 1 to 3650'],
      [{ name: 'ci', scope: 'deploy', expiresInDays: 3651 }, 'expiresInDays must be a whole number from 1 to 3650'],
    ];
    for (const [json, error] of refusals) {
      const r = await h.call('POST', '/api/v1/projects/empty/keys', { token: owner, json });
      expect(r, JSON.stringify(json)).toMatchObject({ status: 400, body: { status: 'error', error } });
    }
    const malformed = await h.call('POST', '/api/v1/projects/empty/keys', { token: owner, body: '{"name":', headers: { 'content-type': 'application/json' } });
    expect(malformed).toMatchObject({ status: 400, body: { error: 'invalid request body' } });
    expect(await h.call('POST', '/api/v1/projects/Bad..Name/keys', { token: owner, json: { name: 'ci', scope: 'deploy' } })).toMatchObject({ status: 400, body: { error: 'invalid project name format' } });
    expect(await h.call('GET', '/api/v1/projects/Bad..Name/keys', { token: owner })).toMatchObject({ status: 400, body: { error: 'invalid project name format' } });
    expect(await keysOf('empty')).toEqual([]);
  });

  describe('what a key must not do (each answered 401, nothing changed)', () => {
    let key: { id: string; token: string };
    beforeAll(async () => {
      key = await makeKey('docs', { name: 'ci', scope: 'deploy' });
      // A release to roll back to and a preview to promote, so a refusal is not a 404 or 409 in disguise.
      expect((await h.deploy(owner, 'docs', site('newest'))).status).toBe(200);
      expect((await h.deploy(owner, 'docs', site('a preview'), { preview: 'pr-1' })).status).toBe(200);
      // The prune's collection waits for deploys to be quiet: done before any "before" is taken.
      await h.settled();
    });

    it.each([
      ['make keys', 'POST', '/api/v1/projects/docs/keys', { name: 'more', scope: 'deploy' }],
      ['list keys', 'GET', '/api/v1/projects/docs/keys', undefined],
      ['revoke a key', 'DELETE', '/api/v1/projects/docs/keys/{self}', undefined],
      ['list projects', 'GET', '/api/v1/projects', undefined],
      ['list releases', 'GET', '/api/v1/projects/docs/releases', undefined],
      ['roll back', 'POST', '/api/v1/projects/docs/rollback', undefined],
      ['delete the project', 'DELETE', '/api/v1/projects/docs', undefined],
      ['list previews', 'GET', '/api/v1/projects/docs/previews', undefined],
      ['promote a preview', 'POST', '/api/v1/projects/docs/previews/pr-1/promote', undefined],
      ['delete a preview', 'DELETE', '/api/v1/projects/docs/previews/pr-1', undefined],
    ])('cannot %s', async (_what, method, path, json) => {
      const before = await tree();
      const keys = await keysOf('docs');
      const r = await h.call(method, path.replace('{self}', key.id), { token: key.token, json });
      expect(r).toMatchObject(UNAUTHORIZED);
      expect(await tree()).toEqual(before);
      expect(await keysOf('docs')).toEqual(keys);
    });

    it.each([
      ['create a user', 'POST', '/api/v1/auth', { username: 'intruder' }],
      ['delete a user', 'DELETE', '/api/v1/auth', { username: 'owner' }],
      ['list users', 'GET', '/api/v1/users', undefined],
      ['read metrics', 'GET', '/api/v1/metrics', undefined],
    ])('cannot %s (the admin routes)', async (_what, method, path, json) => {
      const r = await h.call(method, path, { token: key.token, json });
      expect(r).toMatchObject({ status: 401, body: { status: 'error', error: 'invalid admin token' } });
      expect((await h.deploy(owner, 'docs', site('owner still here'))).status).toBe(200);
    });

    it('is refused by every documented operation but the deploy', async () => {
      const paths = loadOpenApiDocument().paths as Record<string, Record<string, { security?: Record<string, unknown>[] }>>;
      let refused = 0;
      for (const [template, item] of Object.entries(paths)) {
        for (const [method, operation] of Object.entries(item)) {
          const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
          if (method === 'parameters' || schemes.length === 0 || schemes.includes('DeployKeyAuth')) continue;
          const path = template.replace('{project}', 'docs').replace('{id}', key.id).replace('{name}', 'pr-1');
          const r = await h.call(method.toUpperCase(), path, { token: key.token });
          expect(r.status, `${method} ${path}`).toBe(401);
          refused++;
        }
      }
      expect(refused).toBeGreaterThanOrEqual(14);
      expect((await keysOf('docs')).map((k) => k.id)).toContain(key.id);
    });
  });

  it('never writes a key token to the log', () => {
    expect(issued.length).toBeGreaterThan(5);
    const log = lines.join('');
    expect(log).toContain('deploy key created');
    for (const token of issued) expect(log).not.toContain(token);
  });
});
