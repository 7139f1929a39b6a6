import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/service-harness.js';
import { startForwardingProxy, type ForwardingProxy } from './forwarding-proxy.js';
import { CLI, runNode } from './run-cli.js';

describe("the CLI's incremental deploy compiles a site's rules like a tarball's", () => {
  let h: Harness;
  let proxy: ForwardingProxy;
  let work: string;
  let token: string;

  const sitedrop = (args: string[]) => runNode([CLI, ...args], { env: { SITEDROP_URL: proxy.url, SITEDROP_TOKEN: token, SITEDROP_CACHE_DIR: join(work, 'cache') } });
  const folder = async (name: string, files: Record<string, string>): Promise<string> => {
    const root = join(work, name);
    await rm(root, { recursive: true, force: true });
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await writeFile(join(root, path), text);
    }
    return root;
  };
  const calls = (from: number) => proxy.seen.slice(from).map((e) => `${e.method} ${e.path.replace(/[0-9a-f]{32}/, '<id>')} ${e.status}`);

  beforeAll(async () => {
    h = await startHarness();
    proxy = await startForwardingProxy(h.url);
    token = await h.createUser('rules');
    work = await mkdtemp(join(tmpdir(), 'sitedrop-rules-cli-'));
  });
  afterAll(async () => {
    await proxy.close();
    await h.close();
    await rm(work, { recursive: true, force: true });
  });

  it('publishes compiled rules, refuses a bad line with its number, and the next deploy stays relative to its base', async () => {
    const files = { 'index.html': 'home', 'a.html': 'A', _redirects: '/go /a.html 302\n', _headers: '/*\n  X-Site: rules\n' };
    const root = await folder('site', files);
    const first = await sitedrop(['deploy', root, '--project', 'docs', '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ mode: 'incremental' });
    const head = JSON.parse(await readFile(join(h.docsRoot, 'rules', 'docs', '.sitedrop', 'head.json'), 'utf8')) as { headers: unknown[]; redirects: number };
    expect(head).toMatchObject({ redirects: 1, headers: [{ headers: [{ name: 'X-Site', value: 'rules' }] }] });

    await writeFile(join(root, '_redirects'), '/go /a.html 302\n/bad /a.html 999\n');
    const refused = await sitedrop(['deploy', root, '--project', 'docs']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('invalid _redirects: line 2: ');
    const releases = await h.call('GET', '/api/v1/projects/docs/releases', { token });
    expect((releases.body.releases as unknown[]).length).toBe(1);

    await writeFile(join(root, '_redirects'), '/go /index.html 302\n');
    const mark = proxy.seen.length;
    const second = await sitedrop(['deploy', root, '--project', 'docs', '--json']);
    expect(second.code, second.stderr).toBe(0);
    // Relative to the live release: the compiled rules sitedrop added are not the site's files.
    expect(calls(mark)).not.toContainEqual(expect.stringMatching(/ 409$/));
    const open = proxy.seen.slice(mark).find((e) => e.method === 'POST' && e.path === '/api/v1/deploys');
    expect(JSON.parse(gunzipSync(open!.body).toString())).toHaveProperty('base');
    expect(JSON.parse(second.stdout)).toMatchObject({ mode: 'incremental', sentFiles: 1 });
    const compiled = JSON.parse(await readFile(join(h.docsRoot, 'rules', 'docs', '.sitedrop', 'redirects.json'), 'utf8')) as { to: string }[];
    expect(compiled.map((r) => r.to)).toEqual(['/index.html']);
  });

  it('refuses a folder that holds .sitedrop/', async () => {
    const root = await folder('reserved', { 'index.html': 'home', '.sitedrop/head.json': '{"forced":[]}' });
    const refused = await sitedrop(['deploy', root, '--project', 'reserved']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('paths under .sitedrop/ are reserved for sitedrop');
  });
});
