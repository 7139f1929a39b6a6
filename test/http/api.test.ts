import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';
import { multipart, rawRequest } from '../support/raw-http.js';
import { dir, file, tgz } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';

const site = (marker: string) => tgz([file('index.html', `<h1>${marker}</h1>`), dir('css/'), file('css/site.css', 'body{}')]);

/** A tarball made the way the docs tell users to: `tar -czf site.tgz -C dist .` (entries start with ./). */
function gnuTarball(): Buffer {
  const root = mkdtempSync(join(tmpdir(), 'sitedrop-dist-'));
  mkdirSync(join(root, 'dist/img'), { recursive: true });
  writeFileSync(join(root, 'dist/index.html'), '<h1>gnu</h1>');
  writeFileSync(join(root, 'dist/img/logo.svg'), '<svg/>');
  execFileSync('tar', ['-czf', join(root, 'site.tgz'), '-C', join(root, 'dist'), '.']);
  return readFileSync(join(root, 'site.tgz'));
}

describe('HTTP API (real server, real SQLite, real directories)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ MAX_UPLOAD_BYTES: String(256 * 1024) });
  });
  afterAll(async () => {
    await h.close();
  });

  describe('GET /api/v1/status and /api/hello', () => {
    it('answers status ok without a token', async () => {
      const r = await h.call('GET', '/api/v1/status');
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ status: 'ok' });
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    });

    it('answers hello with message, author and an absolute https homepage', async () => {
      const r = await h.call('GET', '/api/hello');
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(['author', 'authorHomepage', 'message']);
      for (const value of Object.values(r.body)) expect(typeof value === 'string' && value.length > 0).toBe(true);
      expect(new URL(r.body.authorHomepage as string).protocol).toBe('https:');
    });

    it('answers unknown paths 404 and wrong methods 405, as JSON', async () => {
      for (const path of ['/api/v2/status', '/api/nope', '/', '/index.html']) {
        const r = await h.call('GET', path);
        expect(r.status).toBe(404);
        expect(r.body).toEqual({ status: 'error', error: 'not found' });
        expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      }
      for (const [method, path] of [['POST', '/api/v1/status'], ['GET', '/api/v1/auth'], ['GET', '/api/v1/deploy'], ['PUT', '/api/hello']] as const) {
        const r = await h.call(method, path);
        expect(r.status).toBe(405);
        expect(r.body).toEqual({ status: 'error', error: 'method not allowed' });
      }
    });
  });

  describe('POST /api/v1/auth', () => {
    it('creates a user: 200 with a 32-character alphanumeric token', async () => {
      const r = await h.call('POST', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'alice' } });
      expect(r.status).toBe(200);
      expect(r.body.status).toBe('ok');
      expect(r.body.token).toMatch(/^[A-Za-z0-9]{32}$/);
      expect(Object.keys(r.body).sort()).toEqual(['status', 'token']);
    });

    it('rerolls: a new token, and the old one stops working at once', async () => {
      const old = await h.createUser('rita');
      const fresh = await h.createUser('rita');
      expect(fresh).not.toBe(old);
      expect((await h.deploy(old, 'docs', site('x'))).body).toEqual({ status: 'error', error: 'unauthorized' });
      expect((await h.deploy(fresh, 'docs', site('x'))).status).toBe(200);
    });

    it.each([
      ['no header', undefined],
      ['an empty header', ''],
      ['another scheme', `Basic ${ADMIN_TOKEN}`],
      ['a wrong token', 'Bearer wrong-token-wrong-token-wrong-token'],
      ['the bare token', ADMIN_TOKEN],
    ])('rejects %s with 401 invalid admin token', async (_label, header) => {
      const headers: Record<string, string> = header === undefined ? {} : { authorization: header };
      const r = await h.call('POST', '/api/v1/auth', { json: { username: 'mallory' }, headers });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ status: 'error', error: 'invalid admin token' });
    });

    it('accepts the scheme word in any case', async () => {
      const r = await h.call('POST', '/api/v1/auth', { json: { username: 'casey' }, headers: { authorization: `bEaReR ${ADMIN_TOKEN}` } });
      expect(r.status).toBe(200);
    });

    it('does not take a user token as the admin token', async () => {
      const userToken = await h.createUser('ursula');
      const r = await h.call('POST', '/api/v1/auth', { token: userToken, json: { username: 'ursula2' } });
      expect(r.body).toEqual({ status: 'error', error: 'invalid admin token' });
    });

    it('checks the admin token before the body', async () => {
      const r = await h.call('POST', '/api/v1/auth', { token: 'nope', body: '{not json' });
      expect(r.status).toBe(401);
    });

    it.each([
      ['malformed JSON', '{"username": '],
      ['a JSON array', '["alice"]'],
      ['a JSON string', '"alice"'],
      ['no username', '{}'],
      ['a numeric username', '{"username": 42}'],
      ['a null username', '{"username": null}'],
      ['an empty body', ''],
    ])('answers %s with 400 invalid request body', async (_label, body) => {
      const r = await h.call('POST', '/api/v1/auth', { token: ADMIN_TOKEN, body, headers: { 'content-type': 'application/json' } });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ status: 'error', error: 'invalid request body' });
    });

    it.each(['Alice', '', '-alice', 'alice-', 'a'.repeat(65), 'al ice', '../etc'])('answers username %j with 400 invalid username format', async (username) => {
      const r = await h.call('POST', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username } });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ status: 'error', error: 'invalid username format' });
    });
  });

  describe('DELETE /api/v1/auth', () => {
    it('persist (and the default) keeps the files; the token dies', async () => {
      for (const [name, body] of [['pam', { username: 'pam', files: 'persist' }], ['pat', { username: 'pat' }]] as const) {
        const token = await h.createUser(name);
        expect((await h.deploy(token, 'docs', site(name))).status).toBe(200);
        const r = await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: body });
        expect(r.status).toBe(200);
        expect(r.body).toEqual({ status: 'ok' });
        expect(await readFile(join(h.docsRoot, name, 'docs/index.html'), 'utf8')).toBe(`<h1>${name}</h1>`);
        expect((await h.deploy(token, 'docs', site('again'))).body).toEqual({ status: 'error', error: 'unauthorized' });
      }
    });

    it('delete removes the live links and the releases', async () => {
      const token = await h.createUser('dora');
      await h.deploy(token, 'docs', site('dora'));
      const r = await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'dora', files: 'delete' } });
      expect(r.status).toBe(200);
      await expect(readdir(join(h.docsRoot, 'dora'))).rejects.toThrow(/ENOENT/);
      await expect(readdir(join(h.deploysRoot, 'dora'))).rejects.toThrow(/ENOENT/);
    });

    it.each([['keep'], [true], [''], ['DELETE']])('answers files %j with 400', async (files) => {
      await h.createUser('fiona');
      const r = await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'fiona', files } });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ status: 'error', error: "files must be 'persist' or 'delete'" });
    });

    it('answers an unknown user with 500 user not found', async () => {
      const r = await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'nobody' } });
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ status: 'error', error: 'user not found' });
    });

    it('refuses a JSON body over 16 KiB as invalid, creating nothing', async () => {
      const padded = { username: 'padded', padding: 'p'.repeat(16 * 1024) };
      const r = await h.call('POST', '/api/v1/auth', { token: ADMIN_TOKEN, json: padded });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ status: 'error', error: 'invalid request body' });
      const users = await h.call('GET', '/api/v1/users', { token: ADMIN_TOKEN });
      expect(JSON.stringify(users.body)).not.toContain('padded');
    });

    it('answers bad bodies, bad names and bad admin tokens as the spec says', async () => {
      expect((await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, body: 'x' })).body).toEqual({ status: 'error', error: 'invalid request body' });
      expect((await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'Bad' } })).body).toEqual({ status: 'error', error: 'invalid username format' });
      const r = await h.call('DELETE', '/api/v1/auth', { token: 'x', json: { username: 'alice' } });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ status: 'error', error: 'invalid admin token' });
    });
  });

  describe('POST /api/v1/deploy', () => {
    let token: string;
    beforeAll(async () => {
      token = await h.createUser('dev');
    });

    it('publishes: 200 with the five fields, a release directory and a live symlink', async () => {
      const r = await h.deploy(token, 'site', site('one'));
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ status: 'ok', project: 'site', username: 'dev', url: 'https://sites.example.test/dev/site/', release: expect.stringMatching(/^[0-9]{8}T[0-9]{6}$/) });
      const release = r.body.release as string;
      expect(await readlink(join(h.docsRoot, 'dev/site'))).toBe(`${join(h.deploysRoot, 'dev/site', release)}/`);
      expect(await readFile(join(h.docsRoot, 'dev/site/index.html'), 'utf8')).toBe('<h1>one</h1>');
      expect(await readFile(join(h.docsRoot, 'dev/site/css/site.css'), 'utf8')).toBe('body{}');
      const db = new Database(join(h.root, 'sitedrop.db'), { readonly: true });
      const row = db.prepare('select * from deploys where username = ? and project = ?').get('dev', 'site');
      db.close();
      expect(row).toEqual({ username: 'dev', project: 'site', release, bytes: 18, files: 2, created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), preview: null });
    });

    it('publishes a ./-prefixed GNU tar archive at the release root', async () => {
      const r = await h.deploy(token, 'gnu', gnuTarball());
      expect(r.status).toBe(200);
      expect(await snapshot(join(h.docsRoot, 'dev/gnu/'))).toEqual({
        img: 'dir 755',
        'img/logo.svg': expect.stringMatching(/^file 644 /),
        'index.html': expect.stringMatching(/^file 644 /),
      });
    });

    it('takes the file part before the project field', async () => {
      const r = await h.deploy(token, 'order', site('file-first'), { fileFirst: true });
      expect(r.status).toBe(200);
      expect(await readFile(join(h.docsRoot, 'dev/order/index.html'), 'utf8')).toBe('<h1>file-first</h1>');
    });

    it.each([
      ['no token', undefined],
      ['a wrong token', 'A'.repeat(32)],
      ['the admin token', ADMIN_TOKEN],
    ])('answers %s with 401 unauthorized', async (_label, bad) => {
      const r = bad === undefined ? await h.call('POST', '/api/v1/deploy', { body: 'x' }) : await h.deploy(bad, 'docs', site('x'));
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ status: 'error', error: 'unauthorized' });
    });

    it.each([['Bad'], [''], ['-x'], ['a'.repeat(65)]])('answers project %j with 400 invalid project name format', async (project) => {
      const r = await h.deploy(token, project, site('x'));
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ status: 'error', error: 'invalid project name format' });
    });

    it('answers a missing project with 400 invalid project name format', async () => {
      const r = await h.deploy(token, undefined, site('x'));
      expect(r.body).toEqual({ status: 'error', error: 'invalid project name format' });
    });

    it('answers a missing or empty file with 400 missing or invalid file', async () => {
      for (const archive of [undefined, Buffer.alloc(0)]) {
        const r = await h.deploy(token, 'docs', archive);
        expect(r.status).toBe(400);
        expect(r.body).toEqual({ status: 'error', error: 'missing or invalid file' });
      }
    });

    it('answers a body that is not multipart, or is cut short, with 400 failed to parse multipart form', async () => {
      const notMultipart = await h.call('POST', '/api/v1/deploy', { token, json: { project: 'docs' } });
      expect(notMultipart.status).toBe(400);
      expect(notMultipart.body).toEqual({ status: 'error', error: 'failed to parse multipart form' });

      const cut = multipart('XyZ', [{ name: 'project', body: 'docs' }, { name: 'file', filename: 'site.tgz', body: site('cut').subarray(0, 40) }], false);
      const truncated = await rawRequest(h.url, {
        path: '/api/v1/deploy',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=XyZ', 'content-length': String(cut.length) },
        chunks: [cut],
      });
      expect(truncated.status).toBe(400);
      expect(truncated.body).toEqual({ status: 'error', error: 'failed to parse multipart form' });
    });

    it('refuses a form over its part, file or field counts as malformed, rather than drop the parts past them', async () => {
      const file = { name: 'file', filename: 'site.tgz', body: site('late') };
      const forms = [
        [...Array.from({ length: 40 }, (_, i) => ({ name: `decoy${i}`, filename: `d${i}`, body: '' })), { name: 'project', body: 'docs' }, file],
        [{ name: 'project', body: 'docs' }, ...Array.from({ length: 5 }, () => ({ name: 'other', filename: 'x.tgz', body: 'x' })), file],
        [...Array.from({ length: 17 }, (_, i) => ({ name: `f${i}`, body: 'v' })), { name: 'project', body: 'docs' }, file],
      ];
      for (const parts of forms) {
        const body = multipart('LiM', parts);
        const r = await rawRequest(h.url, {
          path: '/api/v1/deploy',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=LiM', 'content-length': String(body.length) },
          chunks: [body],
        });
        expect(r.status).toBe(400);
        expect(r.body).toEqual({ status: 'error', error: 'failed to parse multipart form' });
      }
    });

    it('answers an upload over MAX_UPLOAD_BYTES with 413, declared or chunked', async () => {
      const big = Buffer.alloc(300 * 1024, 7);
      const declared = await h.deploy(token, 'big', big);
      expect(declared.status).toBe(413);
      expect(declared.body).toEqual({ status: 'error', error: 'request body too large' });

      const body = multipart('B0und', [{ name: 'project', body: 'big' }, { name: 'file', filename: 'site.tgz', body: big }]);
      const chunks = Array.from({ length: Math.ceil(body.length / 16384) }, (_, i) => body.subarray(i * 16384, (i + 1) * 16384));
      const chunked = await rawRequest(h.url, {
        path: '/api/v1/deploy',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=B0und', 'transfer-encoding': 'chunked' },
        chunks,
      });
      expect(chunked.status).toBe(413);
      expect(chunked.body).toEqual({ status: 'error', error: 'request body too large' });
      await expect(readdir(join(h.deploysRoot, 'dev/big'))).rejects.toThrow(/ENOENT/);
    });

    it('answers a .. entry with the spec message and changes nothing', async () => {
      await h.deploy(token, 'safe', site('safe'));
      // What the first deploy threw away may still be on its way out, in the background.
      await h.settled();
      const before = await snapshot(h.root);
      const r = await h.deploy(token, 'safe', tgz([file('index.html'), file('../escape.html')]));
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ status: 'error', error: "failed to extract tarball: path contains '..' component which is not allowed: ../escape.html" });
      await h.trashEmptied();
      expect(await snapshot(h.root)).toEqual(before);
    });

    it('answers something that is not a gzip tarball with 500 failed to extract tarball', async () => {
      const r = await h.deploy(token, 'junk', Buffer.from('this is not gzip at all'));
      expect(r.status).toBe(500);
      expect(r.body.error).toMatch(/^failed to extract tarball: not a valid gzip stream: /);
    });

    it('keeps five releases after seven deploys, the newest live', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 7; i += 1) ids.push((await h.deploy(token, 'keep', site(`v${i}`))).body.release as string);
      expect(new Set(ids).size).toBe(7);
      const left = (await readdir(join(h.deploysRoot, 'dev/keep'))).sort();
      expect(left).toEqual([...ids].sort().slice(2));
      // Pruned releases leave the listing at once and the disk soon after, in the background.
      await h.trashEmptied();
      expect(await readdir(join(h.deploysRoot, '.trash'))).toEqual([]);
      expect(await readFile(join(h.docsRoot, 'dev/keep/index.html'), 'utf8')).toBe('<h1>v6</h1>');
    });

    it('takes concurrent deploys of one project: all succeed with distinct ids, the newest live', async () => {
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => h.deploy(token, 'race', site(`r${i}`))));
      expect(results.map((r) => r.status)).toEqual(Array(6).fill(200));
      const ids = results.map((r) => r.body.release as string);
      expect(new Set(ids).size).toBe(6);
      const newest = [...ids].sort().at(-1)!;
      expect(await readlink(join(h.docsRoot, 'dev/race'))).toBe(`${join(h.deploysRoot, 'dev/race', newest)}/`);
      expect((await readdir(join(h.deploysRoot, 'dev/race'))).sort()).toEqual([...ids].sort().slice(1));
      expect(await readdir(join(h.deploysRoot, '.staging'))).toEqual([]);
    });
  });

  describe('a database that fails', () => {
    it('answers 500 failed to create user', async () => {
      const broken = await startHarness();
      const db = new Database(join(broken.root, 'sitedrop.db'));
      db.exec('DROP TABLE users');
      db.close();
      const r = await broken.call('POST', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'alice' } });
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ status: 'error', error: 'failed to create user' });
      await broken.close();
    });
  });
});
