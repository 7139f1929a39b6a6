import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashThreadCount } from '../../src/adapters/cli/hash-threads.js';
import { createApp, type HttpDeps } from '../../src/adapters/http/app.js';
import { ServiceMetrics } from '../../src/adapters/http/metrics.js';
import { loadOpenApiDocument } from '../../src/adapters/http/openapi-document.js';
import { SilentLogger } from '../../src/adapters/log/logger.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { runNode, type Run } from './run-cli.js';

const COUNT_WORKERS = fileURLToPath(new URL('../support/count-workers.mjs', import.meta.url));

/** Every folder from `dir` up to the root: where Node would look for node_modules. */
function ancestors(dir: string): string[] {
  const all = [dir];
  while (dirname(all[all.length - 1]!) !== all[all.length - 1]) all.push(dirname(all[all.length - 1]!));
  return all;
}

describe('the CLI the server serves, fetched and run as a pipeline would (real server)', () => {
  let h: Harness;
  let runner: string;
  let token: string;

  /** `node sitedrop.mjs ...` in the runner's folder, with nothing but PATH and the two variables. */
  const sitedrop = (args: string[], secret: string): Promise<Run> =>
    runNode(['sitedrop.mjs', ...args], { cwd: runner, env: { HOME: runner, SITEDROP_URL: h.url, SITEDROP_TOKEN: secret } });

  beforeAll(async () => {
    h = await startHarness();
    token = await h.createUser('pipeline');
    // An empty folder with no node_modules above it: all the runner has is Node itself.
    runner = await mkdtemp(join(tmpdir(), 'sitedrop-runner-'));
    expect(ancestors(runner).filter((dir) => existsSync(join(dir, 'node_modules')))).toEqual([]);
  });
  afterAll(async () => {
    await h.close();
    await rm(runner, { recursive: true, force: true });
  });

  it('serves one JavaScript file without a token, with an ETag that a revalidation answers 304', async () => {
    const response = await fetch(`${h.url}/api/v1/cli`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    const etag = response.headers.get('etag')!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{32}"$/);
    const text = await response.text();
    expect(text.startsWith('#!/usr/bin/env node\n')).toBe(true);
    const again = await fetch(`${h.url}/api/v1/cli`, { headers: { 'if-none-match': `"other", W/${etag}` } });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(etag);
    expect(await again.text()).toBe('');
    expect((await fetch(`${h.url}/api/v1/cli`, { headers: { 'if-none-match': '"other"' } })).status).toBe(200);
  });

  it('fetched into an empty folder, deploys a site with a user token and makes a key that deploys too', async () => {
    const response = await fetch(`${h.url}/api/v1/cli`);
    await writeFile(join(runner, 'sitedrop.mjs'), Buffer.from(await response.arrayBuffer()));
    await mkdir(join(runner, 'dist/assets'), { recursive: true });
    await writeFile(join(runner, 'dist/index.html'), '<h1>from the pipeline</h1>');
    await writeFile(join(runner, 'dist/assets/app.css'), 'body { margin: 0 }');

    const deployed = await sitedrop(['deploy', 'dist', '--project', 'p'], token);
    expect(deployed.stderr).not.toMatch(/Error|Cannot find/);
    expect(deployed).toMatchObject({ code: 0, stdout: expect.stringMatching(/^sent 2 of 2 files \(0\.0 MB of 0\.0 MB\); 0 already on the server\ndeployed p: release \d{8}T\d{6}\nhttps:\/\/sites\.example\.test\/pipeline\/p\/\n$/) });
    expect(await readFile(join(h.docsRoot, 'pipeline/p/index.html'), 'utf8')).toBe('<h1>from the pipeline</h1>');
    expect(await readFile(join(h.docsRoot, 'pipeline/p/assets/app.css'), 'utf8')).toBe('body { margin: 0 }');

    const made = await sitedrop(['keys', 'create', 'p', '--name', 'CI', '--scope', 'deploy'], token);
    expect(made.code).toBe(0);
    const key = made.stdout.trim();
    expect(key).toMatch(/^[A-Za-z0-9]{32}$/);
    expect((await sitedrop(['keys', 'list', 'p'], token)).stdout).toMatch(/ deploy +expires never +last used never +CI\n$/);
    await writeFile(join(runner, 'dist/index.html'), '<h1>from the key</h1>');
    const byKey = await sitedrop(['deploy', 'dist', '--project', 'p', '--json'], key);
    expect(byKey.code).toBe(0);
    // Incremental from the served file too: only the changed page goes.
    expect(JSON.parse(byKey.stdout)).toMatchObject({ status: 'ok', project: 'p', username: 'pipeline', mode: 'incremental', sentFiles: 1, sentBytes: 21, skippedFiles: 1, totalFiles: 2 });
    expect(await readFile(join(h.docsRoot, 'pipeline/p/index.html'), 'utf8')).toBe('<h1>from the key</h1>');
    expect(await sitedrop(['deploy', 'dist', '--project', 'q'], key)).toMatchObject({ code: 1, stderr: expect.stringMatching(/\nsitedrop: unauthorized\n$/) });
  });

  it('hashes a site of tens of thousands of files on threads started from the one file itself', async () => {
    await writeFile(join(runner, 'sitedrop.mjs'), Buffer.from(await (await fetch(`${h.url}/api/v1/cli`)).arrayBuffer()));
    const site = join(runner, 'large');
    for (let d = 0; d < 10; d += 1) await mkdir(join(site, `d${d}`), { recursive: true });
    await writeFile(join(site, 'index.html'), 'large v1');
    // Above the CLI's THREADED_FROM (20,000), so that the first deploy hashes on threads.
    for (let i = 0; i < 20_100; i += 1000) await Promise.all(Array.from({ length: Math.min(1000, 20_100 - i) }, (_, k) => writeFile(join(site, `d${(i + k) % 10}`, `${i + k}.html`), `page ${i + k}`)));
    const first = await runNode(['--import', COUNT_WORKERS, 'sitedrop.mjs', 'deploy', 'large', '--project', 'large'], { cwd: runner, env: { HOME: runner, SITEDROP_URL: h.url, SITEDROP_TOKEN: token } });
    // Only the deploy's progress: a thread that ran the CLI's entry too would print its usage.
    expect(first.stderr).toMatch(/^hashing 20,101 files\.\.\.\nhashed 20,101 files in /);
    expect(first.stderr).not.toMatch(/Usage|Error|Cannot find/);
    expect(first.code).toBe(0);
    expect(Number(/worker threads started: (\d+)\n$/.exec(first.stderr)?.[1])).toBe(hashThreadCount() > 1 ? hashThreadCount() : 0);
    await writeFile(join(site, 'index.html'), 'large v2');
    const again = await sitedrop(['deploy', 'large', '--project', 'large'], token);
    expect(again).toMatchObject({ code: 0, stdout: expect.stringMatching(/^sent 1 of 20,101 files .*; 20,100 already on the server\n/) });
    expect(await readFile(join(h.docsRoot, 'pipeline/large/index.html'), 'utf8')).toBe('large v2');
    expect(await readFile(join(h.docsRoot, 'pipeline/large/d3/2093.html'), 'utf8')).toBe('page 2093');
  });

  it("deploys a pull request's preview with a preview key, as the README's CI jobs do", async () => {
    const made = await sitedrop(['keys', 'create', 'p', '--name', 'pull requests', '--scope', 'preview'], token);
    const key = made.stdout.trim();
    await writeFile(join(runner, 'dist/index.html'), '<h1>pull request 42</h1>');
    const r = await sitedrop(['deploy', 'dist', '--project', 'p', '--preview', 'pr-42'], key);
    expect(r).toMatchObject({ code: 0, stdout: expect.stringMatching(/^sent 1 of 2 files \(0\.0 MB of 0\.0 MB\); 1 already on the server\ndeployed p preview pr-42: release \d{8}T\d{6}\nhttps:\/\/sites\.example\.test\/_previews\/pipeline\/p\/pr-42\/\n$/) });
    expect(await readFile(join(h.previewsRoot, 'pipeline/p/pr-42/index.html'), 'utf8')).toBe('<h1>pull request 42</h1>');
    expect(await readFile(join(h.docsRoot, 'pipeline/p/index.html'), 'utf8')).toBe('<h1>from the key</h1>');
    expect(await sitedrop(['deploy', 'dist', '--project', 'p'], key)).toMatchObject({ code: 1, stderr: expect.stringMatching(/\nsitedrop: unauthorized\n$/) });
  });
});

describe('GET /api/v1/cli on a service built without the bundle', () => {
  let server: Server;
  beforeAll(async () => {
    const app = createApp({ settings: { adminToken: 'x'.repeat(32), publicBase: 'https://x.test', maxUploadBytes: 1, uploadIdleSeconds: 0 }, openApi: loadOpenApiDocument(), metrics: new ServiceMetrics(), logger: new SilentLogger(), cli: undefined } as unknown as HttpDeps);
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('answers 500 saying how to make it', async () => {
    const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/cli`);
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ status: 'error', error: 'the CLI is not built on this server: npm run build makes it' });
  });
});
