import { createGzip } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamedRequest, type StreamedRequest } from '../support/raw-http.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { until } from '../support/until.js';
import { sha256 } from '../support/sha256.js';
import { snapshot } from '../support/tree.js';

const entry = (path: string, size = 1) => JSON.stringify({ path, size, digest: sha256('x') });

/** A service of the describe block's own, with one user: fields set once it has started. */
function service(env: Record<string, string>, username: string): { h: Harness; token: string } {
  const started = {} as { h: Harness; token: string };
  beforeAll(async () => {
    started.h = await startHarness(env);
    started.token = await started.h.createUser(username);
  });
  afterAll(() => started.h.close());
  return started;
}

/** POST /api/v1/deploys with a body the test sends as it likes. */
const openSession = ({ h, token }: { h: Harness; token: string }, headers: Record<string, string> = {}): StreamedRequest =>
  streamedRequest(h.url, { path: '/api/v1/deploys', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers } });

describe('a manifest is read as it arrives, and refused at its first entry over a limit (real server)', () => {
  const s = service({ MAX_FILES: '300', MAX_EXTRACTED_BYTES: String(20 * 1024 * 1024) }, 'bomber');

  it.each([
    ['more entries than MAX_FILES', Array.from({ length: 301 }, (_, i) => entry(`f${i}`)), 'invalid manifest: more than 300 files and directories'],
    ['files and the directories they imply over MAX_FILES', Array.from({ length: 101 }, (_, i) => entry(`d${i}/e/f`)), 'invalid manifest: site has more than 300 files and directories'],
    ['more bytes than MAX_EXTRACTED_BYTES', [entry('a', 20 * 1024 * 1024), entry('b')], 'invalid manifest: site unpacks to more than 20971520 bytes'],
    ['a path with ..', [entry('index.html'), entry('a/../../etc/passwd')], "invalid manifest: path contains '..' component which is not allowed: a/../../etc/passwd"],
  ])('%s: 400 while the rest of the gzip body (garbage) is still coming, and nothing changed', async (_name, entries, error) => {
    await s.h.settled();
    const before = await snapshot(s.h.root);
    const open = openSession(s, { 'content-encoding': 'gzip' });
    const gzip = createGzip();
    gzip.on('data', (chunk: Buffer) => open.req.write(chunk));
    // The entries, then what is no manifest at all; flushed, so that the service can inflate them, and the body not ended.
    gzip.write(`{"project":"bomb","files":[${entries.join(',')},]]]}} not JSON`);
    gzip.flush();
    await until(() => open.answered(), 'an answer while the body is still being sent');
    expect(open.req.writableEnded).toBe(false);
    const reply = await open.reply;
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe(error);
    open.req.destroy();
    expect(await snapshot(s.h.root)).toEqual(before);
  });
});

describe('manifests are read DEPLOYS_MAX_CONCURRENT at a time; a further one waits, and one past DEPLOYS_MAX_QUEUED is refused (real server)', () => {
  const s = service({ DEPLOYS_MAX_CONCURRENT: '1', DEPLOYS_MAX_QUEUED: '1', UPLOAD_IDLE_SECONDS: '0' }, 'opener');

  const body = (project: string) => Buffer.from(`{"project":"${project}","files":[${entry('index.html')}]}`);
  /** An open that sends its body once the service asks for it (Expect: 100-continue). */
  function polite(project: string): StreamedRequest {
    const bytes = body(project);
    const open = openSession(s, { expect: '100-continue', 'content-length': String(bytes.length) });
    open.req.on('continue', () => open.req.end(bytes));
    open.req.flushHeaders();
    return open;
  }

  it('the first reads while its body comes; of two more, one waits unread and one is answered 503 with Retry-After; the waiting one is read once the turn frees', async () => {
    const first = body('first');
    const reading = openSession(s, { expect: '100-continue', 'content-length': String(first.length) });
    reading.req.flushHeaders();
    await until(() => reading.continued(), 'the first open let in');
    reading.req.write(first.subarray(0, 20));

    const others = [polite('second'), polite('third')];
    await until(() => others.some((o) => o.answered()), 'an answer to one of the two');
    const [refused, waiting] = others[0]!.answered() ? [others[0]!, others[1]!] : [others[1]!, others[0]!];
    const answer = await refused.reply;
    expect(answer.status).toBe(503);
    expect(answer.body.error).toBe('too many deploys in progress, retry later');
    expect(answer.headers['retry-after']).toMatch(/^[0-9]+$/);
    // The first still holds the only turn: the other has not been asked for its body.
    expect(waiting.continued()).toBe(false);
    expect(waiting.answered()).toBe(false);

    reading.req.end(first.subarray(20));
    expect((await reading.reply).status).toBe(201);
    const read = await waiting.reply;
    expect(read.continued).toBe(true);
    expect(read.status).toBe(201);
    expect(read.body.project).toBe(others.indexOf(waiting) === 0 ? 'second' : 'third');
  });
});

describe('a manifest whose client goes silent (real server)', () => {
  const s = service({ UPLOAD_IDLE_SECONDS: '1' }, 'silent');

  it('is answered 408 after UPLOAD_IDLE_SECONDS without a byte, and its turn is free again', async () => {
    const bytes = Buffer.from(`{"project":"quiet","files":[${entry('index.html')}]}`);
    const silent = openSession(s, { 'content-length': String(bytes.length) });
    silent.req.write(bytes.subarray(0, 10));
    const reply = await silent.reply;
    expect(reply.status).toBe(408);
    expect(reply.body.error).toBe('upload stalled: no data received for 1 s');
    silent.req.destroy();
    const next = await s.h.call('POST', '/api/v1/deploys', { token: s.token, body: bytes, headers: { 'content-type': 'application/json' } });
    expect(next.status).toBe(201);
  });
});
