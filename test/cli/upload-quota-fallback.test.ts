import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/service-harness.js';
import { sha256 } from '../support/sha256.js';
import { startForwardingProxy, type ForwardingProxy } from './forwarding-proxy.js';
import { CLI, runNode } from './run-cli.js';

/**
 * USER_MAX_BYTES holds what open sessions may upload too (docs/security.md): a deploy
 * whose uploads do not fit beside another open session's needs no session of its own.
 */
describe('sitedrop deploy <folder> under USER_MAX_BYTES, another deploy holding the room for uploads (the built CLI, a real server)', () => {
  let h: Harness;
  let proxy: ForwardingProxy;
  let work: string;
  let token: string;

  beforeAll(async () => {
    h = await startHarness({ USER_MAX_BYTES: '200000' });
    proxy = await startForwardingProxy(h.url);
    token = await h.createUser('roomless');
    work = await mkdtemp(join(tmpdir(), 'sitedrop-quota-'));
  });
  afterAll(async () => {
    await proxy.close();
    await h.close();
    await rm(work, { recursive: true, force: true });
  });

  it('sends the folder as one archive, saying why, and is incremental again once the other session ends', async () => {
    const root = join(work, 'site');
    await mkdir(root, { recursive: true });
    for (let i = 0; i < 4; i++) await writeFile(join(root, `part-${i}.bin`), randomBytes(20_000));
    await writeFile(join(root, 'index.html'), 'home');
    const other = randomBytes(150_000);
    const held = await h.call('POST', '/api/v1/deploys', { token, json: { project: 'other', files: [{ path: 'big.bin', size: other.length, digest: sha256(other) }] } });
    expect(held.status).toBe(201);

    const env = { SITEDROP_URL: proxy.url, SITEDROP_TOKEN: token, SITEDROP_CACHE_DIR: join(work, 'cache') };
    const mark = proxy.seen.length;
    const r = await runNode([CLI, 'deploy', root, '--project', 'site', '--json'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      "the server has no room under the quota for this deploy's uploads beside other open deploys' (storage quota exceeded: open deploys would hold 230004 bytes of uploads, USER_MAX_BYTES allows 200000): sending the whole folder as one archive\n",
    );
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok', mode: 'full', sentFiles: 5 });
    expect(proxy.seen.slice(mark).map((e) => `${e.method} ${e.path} ${e.status}`)).toEqual(['POST /api/v1/deploys 507', 'POST /api/v1/deploy 200']);

    expect((await h.call('DELETE', `/api/v1/deploys/${String(held.body.id)}`, { token })).status).toBe(204);
    await writeFile(join(root, 'index.html'), 'room again');
    const again = await runNode([CLI, 'deploy', root, '--project', 'site', '--json'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ mode: 'incremental', sentFiles: 1, skippedFiles: 4 });
  });
});
