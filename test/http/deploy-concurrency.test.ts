import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AuthenticateDeployer } from '../../src/application/authenticate-deployer.js';
import { DeployRelease } from '../../src/application/deploy-release.js';
import { PublishRelease } from '../../src/application/publish-release.js';
import { PruneReleases } from '../../src/application/prune-releases.js';
import type { StagedRelease } from '../../src/application/ports/staging.js';
import { createApp, type HttpDeps } from '../../src/adapters/http/app.js';
import type { UseCases } from '../../src/adapters/http/http-deps.js';
import { DeploySlots } from '../../src/adapters/http/deploy-slots.js';
import { DeployTracker } from '../../src/adapters/http/deploy-tracker.js';
import { ServiceMetrics } from '../../src/adapters/http/metrics.js';
import { loadOpenApiDocument } from '../../src/adapters/http/openapi-document.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { SilentLogger } from '../../src/adapters/log/logger.js';
import type { ArchiveLimits } from '../../src/domain/archive-policy.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import { FixedClock, InMemoryDeployKeyStore, InMemoryPreviewLinks, InMemoryDeployRecords, InMemoryDeploys, InMemoryStaging, InMemoryTokenStore, InMemoryWebServer, QueuedPrecompression } from '../support/fakes.js';
import { startChild, type Child } from '../support/child-service.js';
import { releaseVersion, versionedSite } from '../support/sites.js';
import { slowBatch, slowUpload, steadyUpload, type SlowUpload } from '../support/slow-upload.js';
import { multipart, streamedRequest } from '../support/raw-http.js';
import { until } from '../support/until.js';
import { sha256 } from '../support/sha256.js';
import { file, tgz } from '../support/tar-builder.js';

const ADMIN = 'flood-admin-token-0123456789abcdefghijk';
const STALLED = 'upload stalled: no data received for 1 s';
const BUSY = 'too many deploys in progress, retry later';

const children: Child[] = [];
const dirs: string[] = [];

async function service(env: Record<string, string>): Promise<{ child: Child; dataDir: string; staging: () => string[] }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sitedrop-flood-'));
  dirs.push(dataDir);
  const child = await startChild({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, ...env });
  children.push(child);
  const staging = () => {
    try {
      return readdirSync(join(dataDir, 'deploys/.staging')).filter((n) => n.startsWith('deploy+'));
    } catch {
      return [];
    }
  };
  return { child, dataDir, staging };
}

async function createUser(url: string, name: string): Promise<string> {
  const r = await fetch(`${url}/api/v1/auth`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ username: name }) });
  return ((await r.json()) as { token: string }).token;
}

async function deploy(url: string, token: string, project: string, archive: Buffer) {
  const form = new FormData();
  form.append('project', project);
  form.append('file', new Blob([archive]), 'site.tgz');
  const r = await fetch(`${url}/api/v1/deploy`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  return { status: r.status, body: (await r.json()) as Record<string, string>, retryAfter: r.headers.get('retry-after') };
}

async function gauge(url: string, name: string): Promise<number> {
  const r = await fetch(`${url}/api/v1/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } });
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(await r.text())?.[1]);
}
const waitingDeploys = (url: string): Promise<number> => gauge(url, 'sitedrop_deploys_waiting');

function levels(pid: number): { threads: number; fds: number } {
  const threads = Number(/^Threads:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return { threads, fds: readdirSync(`/proc/${pid}/fd`).length };
}

/** An answered slow upload: its connection is dropped so it holds nothing afterwards. */
async function answerOf(upload: Pick<SlowUpload, 'req' | 'response'>): Promise<{ status: number; body: Record<string, unknown> }> {
  try {
    return await upload.response;
  } finally {
    upload.req.destroy();
  }
}

afterAll(async () => {
  for (const child of children.splice(0)) {
    child.process.kill('SIGKILL');
    await child.exited;
  }
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** The routes' use cases, each found by its class, as the container would hand them out. */
function useCasesOf(...instances: object[]): UseCases {
  return ((useCase: abstract new (...args: never[]) => unknown) => instances.find((instance) => instance.constructor === useCase)) as UseCases;
}

describe('a flood of deploys, some stalled (child service, DEPLOYS_MAX_CONCURRENT=2, UPLOAD_IDLE_SECONDS=1)', () => {
  let s: Awaited<ReturnType<typeof service>>;
  let tokens: string[];

  beforeAll(async () => {
    s = await service({ DEPLOYS_MAX_CONCURRENT: '2', DEPLOYS_MAX_QUEUED: '100', UPLOAD_IDLE_SECONDS: '1' });
    tokens = [];
    for (let u = 0; u < 5; u += 1) tokens.push(await createUser(s.child.url, `flood${u}`));
    expect((await deploy(s.child.url, tokens[0]!, 'live', versionedSite('v0', 50))).status).toBe(200);
  });

  it('50 deploys plus 20 stalled uploads: every one answered, at most 2 unpacking at once, nothing left behind', async () => {
    const pid = s.child.process.pid!;
    const before = levels(pid);
    let mostStaging = 0;
    const sampler = setInterval(() => (mostStaging = Math.max(mostStaging, s.staging().length)), 10);
    const big = versionedSite('stall', 200, 256);
    try {
      // Small sites: the flood is in the number of deploys, and this file runs beside others.
      const honest = Array.from({ length: 50 }, (_, i) => deploy(s.child.url, tokens[i % 5]!, `site-${i}`, versionedSite(`v${i}`, 20)));
      const stalled = Array.from({ length: 20 }, (_, i) => answerOf(slowUpload(s.child.url, tokens[i % 5]!, `stalled-${i}`, big, Math.floor(big.length / 2))));
      const deployed = await Promise.all(honest);
      const refused = await Promise.all(stalled);

      for (const r of [...deployed, ...refused]) {
        if (r.status !== 200) expect(r.body).toEqual({ status: 'error', error: expect.any(String) });
      }
      // The queue (100) and its wait bound (120 s) are ample here: every honest deploy lands.
      expect(deployed.map((r) => r.status)).toEqual(Array(50).fill(200));
      expect(refused).toEqual(Array(20).fill({ status: 408, body: { status: 'error', error: STALLED } }));
      for (const [i, r] of deployed.entries()) {
        const target = await readlink(join(s.dataDir, `docs/flood${i % 5}/site-${i}`));
        expect(target).toBe(`${join(s.dataDir, `deploys/flood${i % 5}/site-${i}`, r.body.release!)}/`);
        expect(await releaseVersion(target, 20)).toBe(`v${i}`);
      }
    } finally {
      clearInterval(sampler);
    }
    expect(mostStaging).toBeGreaterThan(0);
    expect(mostStaging).toBeLessThanOrEqual(2);
    for (let i = 0; i < 20; i += 1) await expect(readdir(join(s.dataDir, `deploys/flood${i % 5}/stalled-${i}`))).rejects.toThrow(/ENOENT/);
    // Staging emptied, connections closed (a stalled one 5 s after its answer), and no
    // thread or descriptor left beyond a small allowance (the unpack and writer threads
    // are the same two throughout; libuv's pool may have grown by a thread or two).
    await until(() => {
      const now = levels(pid);
      return s.staging().length === 0 && now.threads <= before.threads + 2 && now.fds <= before.fds + 8;
    }, 'the service to settle', 20_000);
    expect(await waitingDeploys(s.child.url)).toBe(0);
    expect((await deploy(s.child.url, tokens[0]!, 'live', versionedSite('v1', 50))).status).toBe(200);
  }, 120_000);

  it("one user's stalled uploads, holding every slot with more queued, lose the next free slot to another user's deploy", async () => {
    const hog = await createUser(s.child.url, 'hog');
    const archive = versionedSite('h', 300, 256);
    const answered: string[] = [];
    const stalled = Array.from({ length: 6 }, (_, i) => slowUpload(s.child.url, hog, `stall-${i}`, archive, 16));
    const stalledAnswers = stalled.map((upload) => answerOf(upload).then((r) => (answered.push(`hog ${r.status}`), r)));
    await until(async () => (await waitingDeploys(s.child.url)) === 4, 'four of the stalled uploads to wait');
    const honest = await deploy(s.child.url, tokens[1]!, 'fair', versionedSite('fair', 50));
    answered.push(`honest ${honest.status}`);
    expect(honest.status).toBe(200);
    // First come, first served, it would have waited for all six to time out, one second each, two at a time.
    expect(answered.indexOf('honest 200')).toBeLessThanOrEqual(3);
    for (const r of await Promise.all(stalledAnswers)) expect(r).toEqual({ status: 408, body: { status: 'error', error: STALLED } });
  });

  it('aborts an upload that sends nothing for UPLOAD_IDLE_SECONDS with 408, cleans its staging area, and leaves the site alone', async () => {
    const live = await readlink(join(s.dataDir, 'docs/flood0/live'));
    const archive = versionedSite('v-stall', 2000, 512);
    const upload = slowUpload(s.child.url, tokens[0]!, 'live', archive, Math.floor(archive.length / 2));
    await until(() => s.staging().length === 1, 'a staging area');
    expect(await answerOf(upload)).toEqual({ status: 408, body: { status: 'error', error: STALLED } });
    await until(() => s.staging().length === 0, 'the staging area to go');
    expect(await readlink(join(s.dataDir, 'docs/flood0/live'))).toBe(live);
    expect(await releaseVersion(live, 50)).toBe('v1');
  });
});

describe('the deploy queue (child service, DEPLOYS_MAX_CONCURRENT=1, DEPLOYS_MAX_QUEUED=1, no idle limit)', () => {
  let s: Awaited<ReturnType<typeof service>>;
  let token: string;
  const open: SlowUpload[] = [];
  const archive = versionedSite('q', 300, 256);
  /** A deploy that sends its first bytes and then waits to be told to finish. */
  const held = (project: string, sent = 16) => {
    const upload = slowUpload(s.child.url, token, project, archive, sent);
    open.push(upload);
    return upload;
  };

  beforeAll(async () => {
    s = await service({ DEPLOYS_MAX_CONCURRENT: '1', DEPLOYS_MAX_QUEUED: '1', UPLOAD_IDLE_SECONDS: '0', SHUTDOWN_GRACE_SECONDS: '1' });
    token = await createUser(s.child.url, 'queued');
  });
  afterEach(() => {
    for (const upload of open.splice(0)) upload.req.destroy();
  });

  it('refuses a deploy beyond the queue with 503 and Retry-After, before reading its body', async () => {
    const running = held('running', Math.floor(archive.length / 2));
    await until(() => s.staging().length === 1, 'the running deploy to unpack');
    const waiting = held('waiting');
    await until(async () => (await waitingDeploys(s.child.url)) === 1, 'a deploy to wait');
    // The waiting deploy's body is not read: no second staging area.
    expect(s.staging()).toHaveLength(1);

    const refused = await deploy(s.child.url, token, 'refused', archive);
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ status: 'error', error: BUSY });
    expect(refused.retryAfter).toMatch(/^[1-9]\d*$/);

    running.finish();
    expect((await answerOf(running)).status).toBe(200);
    await until(async () => (await waitingDeploys(s.child.url)) === 0, 'the waiting deploy to start');
    waiting.finish();
    expect((await answerOf(waiting)).status).toBe(200);
  });

  it('a client that sent Connection: close and keeps sending still reads its refusal', async () => {
    const running = held('running', Math.floor(archive.length / 2));
    await until(() => s.staging().length === 1, 'the running deploy to unpack');
    const waiting = held('waiting');
    await until(async () => (await waitingDeploys(s.child.url)) === 1, 'a deploy to wait');
    // By hand: a client that writes on, after the answer has come, before it reads it.
    const { port } = new URL(s.child.url);
    const outcome = await new Promise<{ text: string; error?: string }>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1');
      let text = '';
      let error: string | undefined;
      socket.on('data', (c: Buffer) => (text += c.toString()));
      socket.on('error', (e) => (error = e.message));
      socket.on('close', () => resolve({ text, error }));
      socket.write(`POST /api/v1/deploy HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n` +
        `Content-Type: multipart/form-data; boundary=b\r\nContent-Length: ${8 * 1024 * 1024}\r\n\r\n`);
      // More than the socket buffers take in: some of it is still unread when the answer goes.
      socket.write(Buffer.alloc(6 * 1024 * 1024, 97));
      // The rest once the answer has begun: the client was still sending when it came.
      socket.once('data', () => socket.end(Buffer.alloc(2 * 1024 * 1024, 97)));
    });
    expect(outcome.error).toBeUndefined();
    expect(outcome.text).toMatch(/^HTTP\/1\.1 503 /);
    expect(outcome.text).toContain(BUSY);
    running.finish();
    expect((await answerOf(running)).status).toBe(200);
    waiting.finish();
    expect((await answerOf(waiting)).status).toBe(200);
  });

  it('a waiting client that disconnects frees its place in the queue at once', async () => {
    const running = held('running', Math.floor(archive.length / 2));
    await until(() => s.staging().length === 1, 'the running deploy to unpack');
    const leaving = held('leaving');
    await until(async () => (await waitingDeploys(s.child.url)) === 1, 'a deploy to wait');
    leaving.req.destroy();
    await until(async () => (await waitingDeploys(s.child.url)) === 0, 'the queue to empty');

    const next = held('next');
    await until(async () => (await waitingDeploys(s.child.url)) === 1, 'the next deploy to wait');
    running.finish();
    expect((await answerOf(running)).status).toBe(200);
    next.finish();
    expect((await answerOf(next)).status).toBe(200);
  });

  it('a shutdown answers waiting deploys 503 at once, and gives up running ones after the grace period', async () => {
    const running = held('running', Math.floor(archive.length / 2));
    await until(() => s.staging().length === 1, 'the running deploy to unpack');
    const waiting = held('waiting');
    await until(async () => (await waitingDeploys(s.child.url)) === 1, 'a deploy to wait');
    s.child.process.kill('SIGTERM');
    expect(await answerOf(waiting)).toEqual({ status: 503, body: { status: 'error', error: 'service is shutting down, retry later' } });
    expect(await s.child.exited).toBe(0);
    await running.response.catch(() => undefined);
    expect(s.staging()).toEqual([]);
  });
});

describe('a slot belongs to an upload that moves (child service, DEPLOYS_MAX_CONCURRENT=1, UPLOAD_STALL_SECONDS=2, UPLOAD_IDLE_SECONDS=6)', () => {
  const QUIET = 'upload stalled: no data received for 2 s';
  const IDLE = 'upload stalled: no data received for 6 s';
  let s: Awaited<ReturnType<typeof service>>;
  let token: string;
  const open: SlowUpload[] = [];
  const stalledSite = versionedSite('stalled', 300, 256);
  /** An upload that sends half its body and then nothing. */
  const stall = (project: string): SlowUpload => {
    const upload = slowUpload(s.child.url, token, project, stalledSite, Math.floor(stalledSite.length / 2));
    open.push(upload);
    return upload;
  };
  const published = async (project: string, files: number) => releaseVersion(await readlink(join(s.dataDir, `docs/shared/${project}`)), files);

  beforeAll(async () => {
    s = await service({ DEPLOYS_MAX_CONCURRENT: '1', DEPLOYS_MAX_QUEUED: '100', UPLOAD_STALL_SECONDS: '2', UPLOAD_IDLE_SECONDS: '6' });
    // One user, as a CI runner sharing its key with the next pipeline: fairness by user cannot help.
    token = await createUser(s.child.url, 'shared');
  });
  afterEach(async () => {
    for (const upload of open.splice(0)) upload.req.destroy();
    await until(async () => s.staging().length === 0 && (await waitingDeploys(s.child.url)) === 0, 'the service to settle');
  });

  it('stalled uploads first, then honest deploys with the same token: the stalled ones lose the slot, the honest ones are published', async () => {
    const stalled = [0, 1, 2].map((i) => stall(`stalled-${i}`));
    await until(async () => (await waitingDeploys(s.child.url)) === 2, 'two stalled uploads to wait behind the first');
    const honest = await Promise.all([0, 1, 2, 3].map((i) => deploy(s.child.url, token, `honest-${i}`, versionedSite(`h${i}`, 20))));
    for (const [i, r] of honest.entries()) {
      expect(r.status).toBe(200);
      expect(await published(`honest-${i}`, 20)).toBe(`h${i}`);
    }
    // Each lost the slot to a waiting deploy, UPLOAD_STALL_SECONDS after its last byte; none held it until UPLOAD_IDLE_SECONDS.
    for (const r of await Promise.all(stalled.map(answerOf))) expect(r).toEqual({ status: 408, body: { status: 'error', error: QUIET } });
    for (let i = 0; i < 3; i += 1) await expect(readdir(join(s.dataDir, `deploys/shared/stalled-${i}`))).rejects.toThrow(/ENOENT/);
  }, 60_000);

  it('a slow but steady upload (50 KiB/s) keeps its slot while others wait, and is published; a stalled one before it loses the slot', async () => {
    const stalled = stall('stalled');
    await until(() => s.staging().length === 1, 'the stalled upload to unpack');
    // It sends nothing until its turn comes (Expect: 100-continue), then 50 KiB/s for about 4 s.
    const steady = steadyUpload(s.child.url, token, 'steady', versionedSite('steady', 400, 512), 50 * 1024);
    await until(async () => (await waitingDeploys(s.child.url)) === 1, 'the steady upload to wait');
    const next = deploy(s.child.url, token, 'next', versionedSite('next', 20));
    await until(async () => (await waitingDeploys(s.child.url)) === 2, 'a deploy to wait behind it');
    expect(await answerOf(stalled)).toEqual({ status: 408, body: { status: 'error', error: QUIET } });
    // Well past UPLOAD_STALL_SECONDS into the steady upload, the other deploy still waits behind it.
    await until(() => steady.sent() > 0.8, 'the steady upload to send most of its body');
    expect(await waitingDeploys(s.child.url)).toBe(1);
    const answer = await answerOf(steady);
    expect(answer).toMatchObject({ status: 200, body: { status: 'ok', project: 'steady' } });
    expect(await published('steady', 400)).toBe('steady');
    expect((await next).status).toBe(200);
    expect(await published('next', 20)).toBe('next');
  }, 60_000);

  it('an upload that is never silent but hardly sends (2 KiB/s) loses its slot to a deploy that waits, whoever\'s: 408, too slow', async () => {
    const trickle = steadyUpload(s.child.url, token, 'trickle', versionedSite('trickle', 300, 256), 2 * 1024);
    await until(() => s.staging().length === 1, 'the trickle to unpack');
    const other = await createUser(s.child.url, 'other');
    const next = deploy(s.child.url, other, 'next', versionedSite('next', 20));
    const answer = await trickle.response;
    expect(answer.status).toBe(408);
    expect(answer.body.error).toMatch(/^upload too slow: [0-9]+ bytes in 2 s while another deploy waited$/);
    expect((await next).status).toBe(200);
    await expect(readdir(join(s.dataDir, 'deploys/shared/trickle'))).rejects.toThrow(/ENOENT/);
  }, 60_000);

  it("an upload that sends its whole archive and then drips another part loses its slot to another user's deploy that waits: 408, nothing published", async () => {
    const boundary = 'DripB0undary';
    const form = multipart(boundary, [{ name: 'project', body: 'drip' }, { name: 'file', filename: 'site.tgz', body: versionedSite('drip', 20) }]);
    // The archive whole, then a part of no use to the deploy, a byte every second: never silent, hardly moving.
    const head = Buffer.concat([form.subarray(0, form.lastIndexOf(`--${boundary}--`)), Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="x"\r\n\r\n`)]);
    const drip = streamedRequest(s.child.url, { path: '/api/v1/deploy', headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + 100_000) } });
    drip.req.write(head);
    const dripping = setInterval(() => drip.req.write('x'), 1000);
    try {
      await until(() => s.staging().length === 1, 'the dripping upload to unpack');
      const other = await createUser(s.child.url, 'drip-waiter');
      const next = deploy(s.child.url, other, 'next', versionedSite('next', 20));
      const refused = await drip.reply;
      expect(refused.status).toBe(408);
      expect(refused.body.error).toMatch(/^upload too slow: [0-9]+ bytes in 2 s while another deploy waited$/);
      expect((await next).status).toBe(200);
      await expect(readdir(join(s.dataDir, 'deploys/shared/drip'))).rejects.toThrow(/ENOENT/);
    } finally {
      clearInterval(dripping);
      drip.req.destroy();
    }
  }, 60_000);

  it("a manifest sent a few bytes at a time (never silent) loses its turn to another user's open that waits: 408, too slow", async () => {
    const files = [{ path: 'index.html', size: 5, digest: sha256('hello') }];
    const body = Buffer.from(JSON.stringify({ project: 'slow', files }));
    const slow = streamedRequest(s.child.url, { method: 'POST', path: '/api/v1/deploys', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(body.length) } });
    let at = 0;
    const drip = setInterval(() => {
      if (at < body.length - 1) slow.req.write(body.subarray(at, (at += 1)));
    }, 200);
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const other = await createUser(s.child.url, 'opener');
      const opened = fetch(`${s.child.url}/api/v1/deploys`, { method: 'POST', headers: { authorization: `Bearer ${other}` }, body: JSON.stringify({ project: 'fast', files }) });
      const refused = await slow.reply;
      expect(refused.status).toBe(408);
      expect(refused.body.error).toMatch(/^upload too slow: [0-9]+ bytes in 2 s while another deploy waited$/);
      expect((await opened).status).toBe(201);
    } finally {
      clearInterval(drip);
      slow.req.destroy();
    }
  }, 60_000);

  it('a stalled upload with nobody waiting keeps its slot until UPLOAD_IDLE_SECONDS; past UPLOAD_STALL_SECONDS it loses it to the first deploy that comes', async () => {
    expect(await answerOf(stall('alone'))).toEqual({ status: 408, body: { status: 'error', error: IDLE } });

    const quiet = stall('quiet');
    let answered = false;
    void quiet.response.then(() => (answered = true), () => (answered = true));
    await until(() => s.staging().length === 1, 'the stalled upload to unpack');
    // Past UPLOAD_STALL_SECONDS, short of UPLOAD_IDLE_SECONDS, with nobody waiting: it still holds the slot.
    await new Promise((r) => setTimeout(r, 3000));
    expect(answered).toBe(false);
    expect(s.staging()).toHaveLength(1);
    const comer = await deploy(s.child.url, token, 'comer', versionedSite('comer', 20));
    expect(comer.status).toBe(200);
    expect(await published('comer', 20)).toBe('comer');
    expect(await answerOf(quiet)).toEqual({ status: 408, body: { status: 'error', error: QUIET } });
  }, 60_000);

  it("an incremental deploy's batch of objects that stalls loses its slot the same way, and keeps nothing", async () => {
    const files = Array.from({ length: 40 }, () => randomBytes(4096));
    const opened = await fetch(`${s.child.url}/api/v1/deploys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({ project: 'incremental', files: files.map((bytes, i) => ({ path: `f${i}.bin`, size: bytes.length, digest: sha256(bytes) })) }),
    });
    const { id, missing } = (await opened.json()) as { id: string; missing: string[] };
    expect(missing).toHaveLength(40);
    const batch = tgz(files.map((bytes) => file(sha256(bytes), bytes)));
    const stalled = slowBatch(s.child.url, token, id, batch, Math.floor(batch.length / 2));
    open.push(stalled);
    await until(async () => (await gauge(s.child.url, 'sitedrop_deploys_in_flight')) === 1, 'the batch to take the slot');
    const waiting = await deploy(s.child.url, token, 'waiting', versionedSite('waiting', 20));
    expect(waiting.status).toBe(200);
    expect(await answerOf(stalled)).toEqual({ status: 408, body: { status: 'error', error: QUIET } });
    const session = await fetch(`${s.child.url}/api/v1/deploys/${id}`, { headers: { authorization: `Bearer ${token}` } });
    expect(((await session.json()) as { missing: string[] }).missing).toHaveLength(40);
  }, 60_000);
});

/** Unpacks like the in-memory fake, but stops reading for `pauseMs` after the first chunk: a slow disk. */
class SlowDiskStaging extends InMemoryStaging {
  constructor(
    disk: InMemoryDeploys,
    private readonly pauseMs: number,
  ) {
    super(disk);
  }

  override stage(user: Username, archive: AsyncIterable<Uint8Array>, limits: ArchiveLimits, signal: AbortSignal): Promise<StagedRelease> {
    const pauseMs = this.pauseMs;
    async function* slowly(): AsyncGenerator<Uint8Array> {
      let first = true;
      for await (const chunk of archive) {
        yield chunk;
        if (first) await new Promise((r) => setTimeout(r, pauseMs));
        first = false;
      }
    }
    return super.stage(user, slowly(), limits, signal);
  }
}

describe('the idle and stall limits count only the time the service is asking for bytes (real HTTP, fake disk)', () => {
  let server: Server;
  let url: string;
  const token = 'S'.repeat(32);

  beforeAll(async () => {
    const tokens = new InMemoryTokenStore();
    await tokens.save('slow' as Username, token as Token);
    const disk = new InMemoryDeploys();
    const staging = new SlowDiskStaging(disk, 2500);
    const releases = disk.store;
    const keys = new InMemoryDeployKeyStore();
    const previews = new InMemoryPreviewLinks();
    const settings = { releasesKeep: 5, archiveLimits: { maxFiles: 100, maxBytes: 100 * 1024 * 1024 } };
    const records = new InMemoryDeployRecords();
    const app = createApp({
      settings: { adminToken: ADMIN, publicBase: 'https://sites.example.test', maxUploadBytes: 100 * 1024 * 1024, uploadIdleSeconds: 1, uploadStallSeconds: 1 },
      useCases: useCasesOf(new AuthenticateDeployer(tokens, keys, new FixedClock()), new DeployRelease(staging, new FixedClock(), settings, new PublishRelease(tokens, releases, staging, new InProcessDeployLock(), new FixedClock(), settings, new PruneReleases(releases, settings, previews, new FixedClock(), records), records, keys, previews, disk.rules, new InMemoryWebServer(), new QueuedPrecompression()), tokens, keys)),
      deploys: new DeployTracker(),
      slots: new DeploySlots({ concurrent: 1, queued: 1, maxWaitMs: 60_000, turnMs: 0 }),
      metrics: new ServiceMetrics(),
      logger: new SilentLogger(),
      openApi: loadOpenApiDocument(),
    } as unknown as HttpDeps);
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('a deploy held back by a slow disk for longer than UPLOAD_IDLE_SECONDS is not aborted, nor loses its slot to one that waits', async () => {
    // Far more than the socket and stream buffers hold, so the request is paused while the "disk" is busy.
    // Two at once with one slot: one waits while the other is held back for longer than UPLOAD_STALL_SECONDS.
    const answers = await Promise.all(['site', 'other'].map((project) => deploy(url, token, project, randomBytes(8 * 1024 * 1024))));
    expect(answers.map((r) => [r.status, r.body])).toEqual(
      ['site', 'other'].map((project) => [200, expect.objectContaining({ status: 'ok', project, username: 'slow' })]),
    );
  });
});

describe('a client that sends one burst a span (child service, DEPLOYS_MAX_CONCURRENT=1, UPLOAD_STALL_SECONDS=4)', () => {
  it('is judged by the bytes, not let off by the moment the burst fills the pipe: it loses its slot to a deploy that waits', async () => {
    const s = await service({ DEPLOYS_MAX_CONCURRENT: '1', UPLOAD_STALL_SECONDS: '4', UPLOAD_IDLE_SECONDS: '30' });
    const [attacker, victim] = [await createUser(s.child.url, 'bursts'), await createUser(s.child.url, 'victim')];
    // 20 KB every 3 s: 6.7 KB/s, under 8 KiB/s, each burst more than the pipe's 16 KiB buffer, so each pauses the request a
    // moment. Every span of 4 s holds a burst (one a span would leave some span without, for a late timer: silence, not this).
    const body = multipart('B0undary', [{ name: 'project', body: 'bursts' }, { name: 'file', filename: 'site.tgz', body: randomBytes(1_000_000) }]);
    const slow = streamedRequest(s.child.url, { path: '/api/v1/deploy', headers: { authorization: `Bearer ${attacker}`, 'content-type': 'multipart/form-data; boundary=B0undary', 'content-length': String(body.length) } });
    let at = 0;
    const burst = () => slow.req.write(body.subarray(at, (at += 20_000)));
    burst();
    const bursts = setInterval(burst, 3000);
    try {
      await until(() => s.staging().length === 1, 'the bursts to unpack');
      const next = await deploy(s.child.url, victim, 'next', versionedSite('next', 20));
      expect(next.status).toBe(200);
      const refused = await slow.reply;
      expect(refused.status).toBe(408);
      expect(refused.body.error).toMatch(/^upload too slow: [0-9]+ bytes in 4 s while another deploy waited$/);
    } finally {
      clearInterval(bursts);
      slow.req.destroy();
    }
  }, 60_000);
});

describe('no user keeps more than its share of the slots for ever (child service, DEPLOYS_MAX_CONCURRENT=2, DEPLOY_TURN_SECONDS=2)', () => {
  it("a user's two uploads that move just fast enough lose the longer-held slot to another user's deploy once a turn is over: 503, nothing of it kept; the other upload goes on", async () => {
    const s = await service({ DEPLOYS_MAX_CONCURRENT: '2', DEPLOYS_MAX_QUEUED: '10', DEPLOY_TURN_SECONDS: '2', UPLOAD_STALL_SECONDS: '2' });
    const hog = await createUser(s.child.url, 'hog');
    const other = await createUser(s.child.url, 'other');
    // About 1 MB each at 24 KiB/s: never quiet (over 8 KiB/s), and some 40 s long.
    const big = versionedSite('hog', 800, 1024);
    const first = steadyUpload(s.child.url, hog, 'first', big, 24 * 1024);
    await until(() => s.staging().length === 1, 'the first upload to unpack');
    const second = steadyUpload(s.child.url, hog, 'second', big, 24 * 1024);
    try {
      await until(() => s.staging().length === 2, 'the second upload to unpack');
      const fair = await deploy(s.child.url, other, 'fair', versionedSite('fair', 20));
      expect(fair.status).toBe(200);
      expect(await releaseVersion(await readlink(join(s.dataDir, 'docs/other/fair')), 20)).toBe('fair');
      expect(await answerOf(first)).toEqual({ status: 503, body: { status: 'error', error: 'turn taken back: this user held 2 of 2 slots for over 2 s while another user waited, retry later' } });
      await expect(readdir(join(s.dataDir, 'deploys/hog/first'))).rejects.toThrow(/ENOENT/);
      // The hog's other upload is within its share: it moves on, unanswered, its staging area kept.
      expect(second.sent()).toBeGreaterThan(0);
      expect(second.sent()).toBeLessThan(0.5);
      expect(await Promise.race([second.response.then(() => 'answered'), new Promise((r) => setTimeout(() => r('moving'), 2500))])).toBe('moving');
      expect(s.staging()).toHaveLength(1);
    } finally {
      second.req.destroy();
    }
    await until(() => s.staging().length === 0, 'the staging areas to go');
  }, 60_000);
});
