import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/service-harness.js';
import { versionedSite } from '../support/sites.js';
import { slowUpload, type SlowUpload } from '../support/slow-upload.js';
import { until } from '../support/until.js';
import { startForwardingProxy, type ForwardingProxy } from './forwarding-proxy.js';
import { CLI, runNode, startNode } from './run-cli.js';

const BUSY = 'too many deploys in progress, retry later';

/**
 * A deploy the server turns away for now (503 with Retry-After) is tried again after the
 * wait it asks for: one slot, no queue, and another user's upload holding the slot.
 */
describe('sitedrop deploy against a server that is busy for now (the built CLI, a real server, DEPLOYS_MAX_CONCURRENT=1, DEPLOYS_MAX_QUEUED=0)', () => {
  let h: Harness;
  let proxy: ForwardingProxy;
  let work: string;
  let token: string;
  let other: string;
  let env: Record<string, string>;
  const held = versionedSite('held', 300, 256);
  /** Another user's upload that holds the one slot until it is finished. */
  const holdTheSlot = async (): Promise<SlowUpload> => {
    const upload = slowUpload(h.url, other, 'holder', held, Math.floor(held.length / 2));
    await until(async () => (await readdir(join(h.deploysRoot, '.staging')).catch(() => [])).length > 0, 'the holder to unpack');
    return upload;
  };
  const requests = (from: number) => proxy.seen.slice(from).map((e) => `${e.method} ${e.path.replace(/[A-Za-z0-9_-]{20,}/, '<id>')} ${e.status}`);

  beforeAll(async () => {
    h = await startHarness({ DEPLOYS_MAX_CONCURRENT: '1', DEPLOYS_MAX_QUEUED: '0', UPLOAD_IDLE_SECONDS: '0' });
    proxy = await startForwardingProxy(h.url);
    token = await h.createUser('retrier');
    other = await h.createUser('holder');
    work = await mkdtemp(join(tmpdir(), 'sitedrop-retries-'));
    env = { SITEDROP_URL: proxy.url, SITEDROP_TOKEN: token, SITEDROP_CACHE_DIR: join(work, 'cache') };
  });
  afterAll(async () => {
    await proxy.close();
    await h.close();
    await rm(work, { recursive: true, force: true });
  });

  it('a .tar.gz turned away with 503 is sent again after Retry-After, saying so, and published', async () => {
    const archive = join(work, 'site.tar.gz');
    await writeFile(archive, versionedSite('retried', 20));
    const holder = await holdTheSlot();
    const mark = proxy.seen.length;
    const run = startNode([CLI, 'deploy', archive, '--project', 'site', '--json'], { env });
    await until(() => requests(mark).length === 1 && proxy.seen.at(-1)!.status === 503, 'the first try to be turned away');
    holder.finish();
    expect((await holder.response).status).toBe(200);
    const r = await run.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`the server cannot take this deploy now (${BUSY}): trying again in 10 s (1 of 3)\n`);
    expect(requests(mark)).toEqual(['POST /api/v1/deploy 503', 'POST /api/v1/deploy 200']);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok', project: 'site' });
    expect(await readFile(join(await readlink(join(h.docsRoot, 'retrier/site')), 'index.html'), 'utf8')).toBe('retried\n');
  }, 60_000);

  it('an incremental deploy whose batch is turned away deletes its session and starts again, sending only the change', async () => {
    const root = join(work, 'folder');
    await mkdir(root, { recursive: true });
    for (let i = 0; i < 20; i++) await writeFile(join(root, `page-${i}.html`), randomBytes(2000).toString('hex'));
    await writeFile(join(root, 'index.html'), 'first');
    const first = await runNode([CLI, 'deploy', root, '--project', 'folder'], { env });
    expect(first.code, first.stderr).toBe(0);
    await writeFile(join(root, 'index.html'), 'second');

    const holder = await holdTheSlot();
    const mark = proxy.seen.length;
    const run = startNode([CLI, 'deploy', root, '--project', 'folder', '--json'], { env });
    await until(() => requests(mark).includes('PUT /api/v1/deploys/<id>/objects 503'), 'the batch to be turned away');
    holder.finish();
    expect((await holder.response).status).toBe(200);
    const r = await run.done;
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`the server cannot take this deploy now (${BUSY}): trying again in 10 s (1 of 3)\n`);
    expect(requests(mark)).toEqual([
      'POST /api/v1/deploys 201',
      'PUT /api/v1/deploys/<id>/manifest 200',
      'PUT /api/v1/deploys/<id>/objects 503',
      'DELETE /api/v1/deploys/<id> 204',
      'POST /api/v1/deploys 201',
      'PUT /api/v1/deploys/<id>/manifest 200',
      'PUT /api/v1/deploys/<id>/objects 200',
      'POST /api/v1/deploys/<id>/publish 200',
    ]);
    expect(JSON.parse(r.stdout)).toMatchObject({ mode: 'incremental', sentFiles: 1 });
    expect(await readFile(join(await readlink(join(h.docsRoot, 'retrier/folder')), 'index.html'), 'utf8')).toBe('second');
  }, 60_000);

  it('--retries 0 gives up at the first 503; a refusal that is not for now (401) is never tried again; --retries must be a whole number', async () => {
    const archive = join(work, 'site.tar.gz');
    const holder = await holdTheSlot();
    try {
      const mark = proxy.seen.length;
      const r = await runNode([CLI, 'deploy', archive, '--project', 'site', '--retries', '0'], { env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(BUSY);
      expect(r.stderr).not.toContain('trying again');
      expect(requests(mark)).toEqual(['POST /api/v1/deploy 503']);
    } finally {
      holder.finish();
      await holder.response;
    }
    const mark = proxy.seen.length;
    const unauthorised = await runNode([CLI, 'deploy', archive, '--project', 'site'], { env: { ...env, SITEDROP_TOKEN: 'x'.repeat(32) } });
    expect(unauthorised.code).toBe(1);
    expect(unauthorised.stderr).toContain('unauthorized');
    expect(requests(mark)).toEqual(['POST /api/v1/deploy 401']);

    const before = proxy.seen.length;
    const bad = await runNode([CLI, 'deploy', archive, '--project', 'site', '--retries', 'many'], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--retries must be a whole number from 0 to 100, not many');
    expect(proxy.seen.length).toBe(before);
  }, 60_000);
});
