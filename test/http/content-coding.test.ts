import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PinoLogger } from '../../src/adapters/log/logger.js';
import { ADMIN_TOKEN, startHarness, type Harness, type Reply } from '../support/service-harness.js';
import { sha256 } from '../support/sha256.js';
import { file, tgz } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';

const NOT_GZIP = 'invalid request body: Content-Encoding says gzip, but the body is not gzip';
const CUT_SHORT = 'invalid request body: the gzip-compressed body is cut short';
const UNSUPPORTED = 'unsupported Content-Encoding: send the body as it is, or gzip-compressed with Content-Encoding: gzip';

/** Each way a body can lie about its coding, as the body would be sent with it. */
function codings(json: string): [string, string, Buffer][] {
  const gz = gzipSync(json);
  return [
    ['a body that is not gzip', 'gzip', Buffer.from(json)],
    ['gzip cut short', 'gzip', gz.subarray(0, gz.length - 12)],
    ['an empty gzip body', 'gzip', Buffer.alloc(0)],
    ['gzip followed by other bytes', 'gzip', Buffer.concat([gz, Buffer.from('more')])],
    ['br, a real brotli body', 'br', brotliCompressSync(json)],
    ['deflate', 'deflate', deflateSync(json)],
    ['a coding nobody knows', 'x-snappy', Buffer.from(json)],
    ['gzip twice', 'gzip, gzip', gzipSync(gz)],
  ];
}

const expected = (name: string): [number, string] =>
  name.startsWith('gzip cut') || name.startsWith('an empty') ? [400, CUT_SHORT] : name.startsWith('a body that') || name.startsWith('gzip followed') ? [400, NOT_GZIP] : [415, UNSUPPORTED];

describe('a body that is not the coding it says it is: 400, or 415 for a coding sitedrop does not undo; never a 500, never an error-level log line (real server)', () => {
  const lines: string[] = [];
  let h: Harness;
  let token: string;
  /** What the service logged at error level or above while `request` ran. */
  async function errorsLoggedBy(request: () => Promise<Reply>): Promise<{ reply: Reply; errors: unknown[] }> {
    const from = lines.length;
    const reply = await request();
    return { reply, errors: lines.slice(from).map((line) => JSON.parse(line) as { level: number }).filter((line) => line.level >= 50) };
  }

  beforeAll(async () => {
    const logger = new PinoLogger({ level: 'info', format: 'json', destination: { write: (line: string) => void lines.push(line) } });
    h = await startHarness({ MAX_FILES: '300' }, logger);
    token = await h.createUser('coder');
  });
  afterAll(async () => {
    await h.close();
  });

  const manifest = JSON.stringify({ project: 'coded', files: [{ path: 'index.html', size: 5, digest: sha256('hello') }] });

  describe('POST /api/v1/deploys (a manifest): nothing opened', () => {
    it.each(codings(manifest))('%s (Content-Encoding: %s)', async (name, encoding, body) => {
      await h.settled();
      const before = await snapshot(h.root);
      const { reply, errors } = await errorsLoggedBy(() => h.call('POST', '/api/v1/deploys', { token, body, headers: { 'content-type': 'application/json', 'content-encoding': encoding } }));
      const [status, error] = expected(name);
      expect(reply.status).toBe(status);
      expect(reply.body.error).toBe(error);
      if (status === 415) expect(reply.headers.get('accept-encoding')).toBe('gzip');
      expect(errors).toEqual([]);
      expect(await snapshot(h.root)).toEqual(before);
    });

    it('the same manifest opens gzip-compressed (any letter case) or as it is', async () => {
      for (const [encoding, body] of [['gzip', gzipSync(manifest)], ['GZip', gzipSync(manifest)], ['identity', Buffer.from(manifest)], [undefined, Buffer.from(manifest)]] as const) {
        const reply = await h.call('POST', '/api/v1/deploys', { token, body, headers: { 'content-type': 'application/json', ...(encoding ? { 'content-encoding': encoding } : {}) } });
        expect(reply.status, String(encoding)).toBe(201);
        expect((await h.call('DELETE', `/api/v1/deploys/${String(reply.body.id)}`, { token })).status).toBe(204);
      }
    });
  });

  describe('PUT /api/v1/deploys/{id}/objects (a .tar.gz, read as it is)', () => {
    let id: string;
    const batch = tgz([file(sha256('hello'), 'hello')]);
    beforeAll(async () => {
      const opened = await h.call('POST', '/api/v1/deploys', { token, json: JSON.parse(manifest) as unknown });
      expect(opened.status).toBe(201);
      id = opened.body.id as string;
    });
    const put = (body: Buffer, encoding?: string) =>
      h.call('PUT', `/api/v1/deploys/${id}/objects`, { token, body, headers: { 'content-type': 'application/gzip', ...(encoding ? { 'content-encoding': encoding } : {}) } });

    it.each([
      ['br', 'br', brotliCompressSync(batch), 415, UNSUPPORTED],
      ['deflate', 'deflate', deflateSync(batch), 415, UNSUPPORTED],
      ['a body that is not gzip', 'gzip', Buffer.from('not gzip at all'), 400, /^invalid objects: not a valid gzip stream: /],
      ['gzip cut short', 'gzip', batch.subarray(0, batch.length - 12), 400, /^invalid objects: /],
    ] as const)('%s: refused, nothing kept, no error logged', async (_name, encoding, body, status, error) => {
      const { reply, errors } = await errorsLoggedBy(() => put(body, encoding));
      expect(reply.status).toBe(status);
      expect(reply.body.error).toMatch(error);
      expect(errors).toEqual([]);
      expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).body.missing).toEqual([sha256('hello')]);
    });

    it('the honest batch is taken, with `Content-Encoding: gzip` or without', async () => {
      expect((await put(batch, 'gzip')).status).toBe(200);
      expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).body.missing).toEqual([]);
      expect((await put(batch)).status).toBe(200);
    });
  });

  describe('the small JSON bodies', () => {
    it.each(codings(JSON.stringify({ name: 'ci', scope: 'deploy' })))('POST /api/v1/projects/{project}/keys, %s (%s): nothing made', async (name, encoding, body) => {
      const { reply, errors } = await errorsLoggedBy(() =>
        h.call('POST', '/api/v1/projects/coded/keys', { token, body, headers: { 'content-type': 'application/json', 'content-encoding': encoding } }),
      );
      const [status, error] = expected(name);
      expect(reply.status).toBe(status);
      expect(reply.body.error).toBe(error);
      expect(errors).toEqual([]);
      expect((await h.call('GET', '/api/v1/projects/coded/keys', { token })).body.keys).toEqual([]);
    });

    it.each(codings(JSON.stringify({ username: 'newcomer' })))("POST /api/v1/auth, %s (%s): the spec's 400 `invalid request body`, no user made", async (_name, encoding, body) => {
      const { reply, errors } = await errorsLoggedBy(() =>
        h.call('POST', '/api/v1/auth', { token: ADMIN_TOKEN, body, headers: { 'content-type': 'application/json', 'content-encoding': encoding } }),
      );
      expect(reply.status).toBe(400);
      expect(reply.body.error).toBe('invalid request body');
      expect(errors).toEqual([]);
      expect(((await h.call('GET', '/api/v1/users', { token: ADMIN_TOKEN })).body.users as { username: string }[]).map((u) => u.username)).not.toContain('newcomer');
    });

    it('a gzip-compressed small body is read', async () => {
      const reply = await h.call('POST', '/api/v1/auth', { token: ADMIN_TOKEN, body: gzipSync(JSON.stringify({ username: 'zipped' })), headers: { 'content-encoding': 'gzip' } });
      expect(reply.status).toBe(200);
    });
  });
});
