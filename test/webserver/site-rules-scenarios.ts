import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';
import { until } from '../support/until.js';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';

/** A GET whose body is left as the server sent it (fetch would decode it). */
const rawGet = (port: number, path: string, encoding: string) =>
  new Promise<{ encoding: string | undefined; vary: string | undefined; body: Buffer }>((resolve, reject) => {
    httpGet({ host: '127.0.0.1', port, path, headers: { 'accept-encoding': encoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ encoding: res.headers['content-encoding'], vary: res.headers.vary, body: Buffer.concat(chunks) }));
    }).on('error', reject);
  });

/** A site's files, by path, as a tarball. */
export const site = (files: Record<string, string | Buffer>): Buffer => tgz(Object.entries(files).map(([path, body]) => file(path, body)));

/** A web server serving a real service's sites, as the scenarios need it. */
export interface RunningServer {
  readonly h: Harness;
  readonly port: number;
  /** The web server's errors so far, one a line. */
  problems(): Promise<string[]>;
  /** How many configurations the web server has loaded, where it counts them. */
  loads?(): number;
  stop(): Promise<void>;
}

export interface ScenarioContext {
  readonly h: () => Harness;
  readonly running: () => RunningServer;
  readonly reloads: () => string;
  readonly token: (user: 'ann' | 'bob') => string;
  get(path: string, headers?: Record<string, string>): Promise<{ status: number; body: string; location: string | null; headers: Headers }>;
  deploy(token: string, project: string, files: Record<string, string | Buffer>, preview?: string): ReturnType<Harness['deploy']>;
}

/** The web server under test: how to start it beside a service, and what is its own. */
export interface ServerUnderTest {
  readonly name: string;
  /** Starts the service (with `env`, which names WEBSERVER_RELOAD's command) and the web server serving it. */
  start(env: Record<string, string>): Promise<RunningServer>;
  /** What the web server's own plain 404 says. */
  plainNotFound(body: string): void;
  /** The server's own scenarios (its reloads). */
  more?(context: ScenarioContext): void;
}

/**
 * The same scenarios for every web server sitedrop generates configuration for: every
 * rule kind, refusals, previews and rollbacks, isolation, compressed siblings, 30 swaps
 * under load and sitedrop stopped, through the real service and the real server.
 */
export function siteRulesScenarios(server: ServerUnderTest): void {
  describe(`a site's rules, served by a real ${server.name} running the generated configuration`, () => {
    let running: RunningServer;
    let h: Harness;
    let ann: string;
    let bob: string;
    let reloads: string;

    const get: ScenarioContext['get'] = async (path, headers = {}) => {
      const url = `http://127.0.0.1:${running.port}${path}`;
      // A kept-alive connection the server closed before answering is retried, as browsers do for a GET
      // (RFC 9112 9.3.1): Caddy closes its idle connections when it loads a configuration.
      const attempt = async (left: number): Promise<Response> =>
        fetch(url, { headers, redirect: 'manual' }).catch((error: unknown) => {
          if (left === 0 || !['UND_ERR_SOCKET', 'ECONNRESET'].includes((error as { cause?: { code?: string } }).cause?.code ?? '')) throw error;
          return attempt(left - 1);
        });
      // Every pooled connection may be closing at once: a few tries, each before any answer.
      const r = await attempt(5);
      return { status: r.status, body: await r.text(), location: r.headers.get('location'), headers: r.headers };
    };
    const deploy: ScenarioContext['deploy'] = (token, project, files, preview) => h.deploy(token, project, site(files), preview === undefined ? {} : { preview });
    const context: ScenarioContext = { h: () => h, running: () => running, reloads: () => reloads, token: (user) => (user === 'ann' ? ann : bob), get, deploy };

    beforeAll(async () => {
      reloads = join(await mkdtemp(join(tmpdir(), 'sitedrop-reloads-')), 'reloads');
      running = await server.start({ WEBSERVER_RELOAD: `echo reloaded >> ${reloads}`, PRECOMPRESS: 'on' });
      h = running.h;
      ann = await h.createUser('ann');
      bob = await h.createUser('bob');
    });
    afterAll(async () => {
      await running?.stop();
    });

    it('redirects with every status, keeps the query, fills placeholders and splats, and lets a file win unless forced', async () => {
      const r = await deploy(ann, 'redirects', {
        'index.html': 'home',
        'new.html': 'new page',
        'kept.html': 'a real file',
        'forced.html': 'never served',
        _redirects: [
          '# moved pages',
          '/old /new.html',
          '/found /new.html 302',
          '/see /new.html 303',
          '/temp /new.html 307',
          '/perm /new.html 308',
          '/blog/:year/:slug /posts/:year-:slug 301',
          '/docs/* /v2/:splat',
          '/kept.html /new.html',
          '/forced.html /new.html 302!',
          '/away https://example.com/landing 302',
          '',
        ].join('\r\n'),
      });
      expect(r.status).toBe(200);
      const prefix = '/ann/redirects';
      expect(await get(`${prefix}/old`)).toMatchObject({ status: 301, location: `${prefix}/new.html` });
      expect(await get(`${prefix}/old/`)).toMatchObject({ status: 301, location: `${prefix}/new.html` });
      expect(await get(`${prefix}/old?x=1&y=2`)).toMatchObject({ status: 301, location: `${prefix}/new.html?x=1&y=2` });
      for (const [from, status] of [['found', 302], ['see', 303], ['temp', 307], ['perm', 308]] as const) {
        expect(await get(`${prefix}/${from}`)).toMatchObject({ status, location: `${prefix}/new.html` });
      }
      expect(await get(`${prefix}/blog/2024/hello`)).toMatchObject({ status: 301, location: `${prefix}/posts/2024-hello` });
      expect((await get(`${prefix}/blog/2024`)).status).toBe(404);
      expect(await get(`${prefix}/docs/a/b/c.html`)).toMatchObject({ status: 301, location: `${prefix}/v2/a/b/c.html` });
      expect(await get(`${prefix}/docs`)).toMatchObject({ status: 301, location: `${prefix}/v2/` });
      expect(await get(`${prefix}/kept.html`)).toMatchObject({ status: 200, body: 'a real file' });
      expect(await get(`${prefix}/forced.html`)).toMatchObject({ status: 302, location: `${prefix}/new.html` });
      expect(await get(`${prefix}/away?q=1`)).toMatchObject({ status: 302, location: 'https://example.com/landing?q=1' });
    });

    it('rewrites with 200 (an SPA that never hides a real file), serves a target with 404, and the 404 page', async () => {
      expect(
        (
          await deploy(ann, 'app', {
            'index.html': 'app shell',
            'assets/app.js': 'js',
            '404.html': 'custom not found',
            'gone.html': 'gone page',
            _redirects: '/old-section/* /gone.html 404\n/* /index.html 200\n',
          })
        ).status,
      ).toBe(200);
      expect(await get('/ann/app/some/client/route')).toMatchObject({ status: 200, body: 'app shell' });
      expect(await get('/ann/app/assets/app.js')).toMatchObject({ status: 200, body: 'js' });
      expect(await get('/ann/app/old-section/x')).toMatchObject({ status: 404, body: 'gone page' });

      expect((await deploy(ann, 'plain', { 'index.html': 'plain', '404.html': 'plain 404' })).status).toBe(200);
      expect(await get('/ann/plain/nothing/here')).toMatchObject({ status: 404, body: 'plain 404' });
      expect((await deploy(ann, 'bare', { 'index.html': 'bare' })).status).toBe(200);
      const bare = await get('/ann/bare/nothing');
      expect(bare.status).toBe(404);
      server.plainNotFound(bare.body);
    });

    it('serves pretty URLs: p.html, then p/index.html after one redirect to p/', async () => {
      expect((await deploy(ann, 'pretty', { 'index.html': 'home', 'about.html': 'about', 'guide/index.html': 'guide' })).status).toBe(200);
      expect(await get('/ann/pretty')).toMatchObject({ status: 301, location: '/ann/pretty/' });
      expect(await get('/ann/pretty/')).toMatchObject({ status: 200, body: 'home' });
      expect(await get('/ann/pretty/about')).toMatchObject({ status: 200, body: 'about' });
      expect(await get('/ann/pretty/guide')).toMatchObject({ status: 301, location: '/ann/pretty/guide/' });
      expect(await get('/ann/pretty/guide/')).toMatchObject({ status: 200, body: 'guide' });
    });

    it('adds headers from every matching block, joining a name set twice, on files, redirects and 404s', async () => {
      expect(
        (
          await deploy(ann, 'headers', {
            'index.html': 'home',
            'assets/app.3f2a.js': 'js',
            _headers: ['/*', '  X-Frame-Options: DENY', '  X-Robots-Tag: noindex', '/assets/*', '\tCache-Control: public, max-age=31536000, immutable', '  X-Robots-Tag: nofollow', ''].join('\n'),
            _redirects: '/moved /index.html\n',
          })
        ).status,
      ).toBe(200);
      const asset = await get('/ann/headers/assets/app.3f2a.js');
      expect(asset.status).toBe(200);
      expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(asset.headers.get('x-frame-options')).toBe('DENY');
      expect(asset.headers.get('x-robots-tag')).toBe('noindex, nofollow');
      const home = await get('/ann/headers/');
      expect(home.headers.get('x-frame-options')).toBe('DENY');
      expect(home.headers.get('cache-control')).toBeNull();
      expect((await get('/ann/headers/moved')).headers.get('x-frame-options')).toBe('DENY');
      expect((await get('/ann/headers/missing')).headers.get('x-frame-options')).toBe('DENY');
    });

    it('joins a name set in every block of nearly 1,000 header lines, and refuses names no script engine can set', async () => {
      const blocks = Array.from({ length: 100 }, (_, i) => `/*\n${'  X-Many: v\n'.repeat(i < 99 ? 10 : 0)}`).join('');
      expect((await deploy(ann, 'names', { 'index.html': 'names', _headers: `${blocks}  X-Last: l\n` })).status).toBe(200);
      const r = await get('/ann/names/');
      expect(r).toMatchObject({ status: 200, body: 'names' });
      expect(r.headers.get('x-many')).toBe(Array.from({ length: 990 }, () => 'v').join(', '));
      expect(r.headers.get('x-last')).toBe('l');
      for (const name of ['constructor', '__proto__', 'toString']) {
        const refused = await deploy(ann, 'names', { 'index.html': 'never', _headers: `/*\n  ${name}: x\n` });
        expect(refused).toMatchObject({ status: 400, body: { error: `invalid _headers: line 2: invalid header name '${name}'` } });
      }
      expect(await get('/ann/names/')).toMatchObject({ status: 200, body: 'names' });
      // Gone, so that Caddy's later loads (it adapts every site with rules each time) do not carry its lines.
      expect((await h.call('DELETE', '/api/v1/projects/names', { token: ann })).status).toBe(200);
    });

    it('serves the file a path names, whatever its name holds: %, ?, #, spaces, accents', async () => {
      const files = { 'index.html': 'home', 'a%2Fb.html': 'literal percent', 'a/b.html': 'in a directory', 'q%3Fx.html': 'literal question', 'a b#c.html': 'space and hash', 'café.html': 'accent' };
      expect((await deploy(ann, 'names-on-disk', files)).status).toBe(200);
      expect(await get('/ann/names-on-disk/a%252Fb.html')).toMatchObject({ status: 200, body: 'literal percent' });
      expect(await get('/ann/names-on-disk/a/b.html')).toMatchObject({ status: 200, body: 'in a directory' });
      expect(await get('/ann/names-on-disk/q%253Fx.html')).toMatchObject({ status: 200, body: 'literal question' });
      expect(await get('/ann/names-on-disk/a%20b%23c.html')).toMatchObject({ status: 200, body: 'space and hash' });
      expect(await get('/ann/names-on-disk/caf%C3%A9')).toMatchObject({ status: 200, body: 'accent' });
      // Served with a rule's status too, by either way the server has of sending a file.
      const rules = { 'index.html': 'home', 'désolé.html': 'sorry', 'p+q.html': 'plus', _redirects: '/gone/* /désolé.html 404\n/plus/* /p+q.html 404\n/spa/* /p+q.html 200\n' };
      expect((await deploy(ann, 'names-by-rule', rules)).status).toBe(200);
      expect(await get('/ann/names-by-rule/gone/x')).toMatchObject({ status: 404, body: 'sorry' });
      expect(await get('/ann/names-by-rule/plus/x')).toMatchObject({ status: 404, body: 'plus' });
      expect(await get('/ann/names-by-rule/spa/x')).toMatchObject({ status: 200, body: 'plus' });
    });

    it('never serves the rule files or what sitedrop adds, at any address or spelling', async () => {
      expect((await deploy(ann, 'hidden', { 'index.html': 'home', _redirects: '/a /index.html\n', _headers: '/*\n  X-A: b\n' })).status).toBe(200);
      const release = (await readFile(join(h.docsRoot, 'ann', 'hidden', '.sitedrop', 'head.json'), 'utf8')).length;
      expect(release).toBeGreaterThan(0);
      for (const path of ['_redirects', '_headers', '%5Fredirects', './_redirects', 'x/../_headers', '.sitedrop/head.json', '.sitedrop/redirects.json', '.sitedrop/', '.sitedrop', '%2esitedrop/head.json']) {
        const r = await get(`/ann/hidden/${path}`);
        expect(r.status, path).toBe(404);
        expect(r.body, path).not.toContain('/a /index.html');
        expect(r.body, path).not.toContain('forced');
      }
      expect((await get('/_previews/ann/hidden/x/_redirects')).status).toBe(404);
    });

    it('refuses an upload under .sitedrop/, and bad rule lines with the file and line, changing nothing', async () => {
      expect((await deploy(bob, 'strict', { 'index.html': 'v1' })).status).toBe(200);
      const before = await get('/bob/strict/');
      const refused = await deploy(bob, 'strict', { 'index.html': 'v2', '.sitedrop/head.json': '{}' });
      expect(refused.status).toBe(500);
      expect(refused.body.error).toMatch(/failed to extract tarball: paths under \.sitedrop\/ are reserved/);
      const cases: [Record<string, string>, RegExp][] = [
        [{ _redirects: '/a /b\n/c /d 418\n' }, /^invalid _redirects: line 2: /],
        [{ _redirects: '/a /b 302 Country=us\n' }, /^invalid _redirects: line 1: .*not supported/],
        [{ _redirects: '/a https://elsewhere.example/ 200\n' }, /^invalid _redirects: line 1: /],
        [{ _redirects: '\n\n/a /%2e%2e/%2e%2e/etc/passwd 200\n' }, /^invalid _redirects: line 3: /],
        [{ _redirects: '/a ftp://host/x\n' }, /^invalid _redirects: line 1: /],
        [{ _headers: '  X-A: b\n' }, /^invalid _headers: line 1: /],
        [{ _headers: '/*\n  Content-Length: 5\n' }, /^invalid _headers: line 2: /],
        [{ _headers: '/*\n  Bad Name: 5\n' }, /^invalid _headers: line 2: /],
        [{ _headers: '/*\n  X-A: a\u0007b\n' }, /^invalid _headers: line 2: /],
      ];
      for (const [files, message] of cases) {
        const r = await deploy(bob, 'strict', { 'index.html': 'v2', ...files });
        expect(r.status, JSON.stringify(files)).toBe(400);
        expect(r.body.error, JSON.stringify(files)).toMatch(message);
      }
      expect(await get('/bob/strict/')).toMatchObject({ status: 200, body: before.body });
      const releases = await h.call('GET', '/api/v1/projects/strict/releases', { token: bob });
      expect((releases.body.releases as unknown[]).length).toBe(1);
    });

    it('takes 2,000 redirect rules and refuses 2,001 at its line', async () => {
      const rules = (n: number) => Array.from({ length: n }, (_, i) => `/r${i} /target.html?n=${i} 302`).join('\n') + '\n';
      expect((await deploy(bob, 'many', { 'index.html': 'home', 'target.html': 't', _redirects: rules(2000) })).status).toBe(200);
      expect(await get('/bob/many/r1999')).toMatchObject({ status: 302, location: '/bob/many/target.html?n=1999' });
      expect(await get('/bob/many/index.html')).toMatchObject({ status: 200, body: 'home' });
      const refused = await deploy(bob, 'many', { 'index.html': 'home', _redirects: rules(2001) });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toMatch(/^invalid _redirects: line 2001: more than 2000 redirect rules/);
      const blocks = (n: number) => Array.from({ length: n }, (_, i) => `/p${i}\n  X-N: ${i}`).join('\n') + '\n';
      expect((await deploy(bob, 'blocks', { 'index.html': 'home', _headers: blocks(100) })).status).toBe(200);
      const tooMany = await deploy(bob, 'blocks', { 'index.html': 'home', _headers: blocks(101) });
      expect(tooMany.status).toBe(400);
      expect(tooMany.body.error).toMatch(/^invalid _headers: line 201: /);
    });

    it("serves a preview with its own rules, and a rollback with the older release's", async () => {
      expect((await deploy(ann, 'switch', { 'index.html': 'one', 'a.html': 'A', _redirects: '/go /a.html 302\n' })).status).toBe(200);
      expect((await deploy(ann, 'switch', { 'index.html': 'two', 'b.html': 'B', _redirects: '/go /b.html 302\n' })).status).toBe(200);
      expect((await deploy(ann, 'switch', { 'index.html': 'pr', 'c.html': 'C', _redirects: '/go /c.html 307\n' }, 'pr-7')).status).toBe(200);
      expect(await get('/ann/switch/go')).toMatchObject({ status: 302, location: '/ann/switch/b.html' });
      expect(await get('/_previews/ann/switch/pr-7/go')).toMatchObject({ status: 307, location: '/_previews/ann/switch/pr-7/c.html' });
      expect((await h.call('POST', '/api/v1/projects/switch/rollback', { token: ann })).status).toBe(200);
      expect(await get('/ann/switch/go')).toMatchObject({ status: 302, location: '/ann/switch/a.html' });
      expect(await get('/ann/switch/')).toMatchObject({ status: 200, body: 'one' });
    });

    it("one site's forced catch-all leaves every other site untouched", async () => {
      expect((await deploy(bob, 'victim', { 'index.html': 'victim home', 'page.html': 'victim page' })).status).toBe(200);
      expect((await deploy(ann, 'greedy', { 'index.html': 'greedy', _redirects: '/* /index.html 200!\n', _headers: '/*\n  X-Greedy: yes\n' })).status).toBe(200);
      expect(await get('/ann/greedy/anything/at/all')).toMatchObject({ status: 200, body: 'greedy' });
      const victim = await get('/bob/victim/page.html');
      expect(victim).toMatchObject({ status: 200, body: 'victim page' });
      expect(victim.headers.get('x-greedy')).toBeNull();
      expect((await get('/bob/victim/nothing')).status).toBe(404);
    });

    it('serves files whole and compressed siblings to clients that accept them, with Vary', async () => {
      const { brotliCompressSync, gzipSync, brotliDecompressSync, gunzipSync } = await import('node:zlib');
      const css = 'body { color: red; }\n'.repeat(200);
      const png = Buffer.alloc(4000, 7);
      expect((await deploy(ann, 'zipped', { 'index.html': 'home', 'style.css': css, 'style.css.br': brotliCompressSync(css), 'style.css.gz': gzipSync(css), 'img.png': png, 'img.png.gz': gzipSync(png) })).status).toBe(200);
      const br = await fetch(`http://127.0.0.1:${running.port}/ann/zipped/style.css`, { headers: { 'accept-encoding': 'br' } });
      expect(br.headers.get('content-encoding')).toBe('br');
      expect(br.headers.get('vary')).toMatch(/Accept-Encoding/i);
      // fetch decodes what it is told is compressed: compare the bytes it decoded, and the raw ones.
      expect(await br.text()).toBe(css);
      const raw = await import('node:http');
      const rawBody = (encoding: string) =>
        new Promise<{ encoding: string | undefined; body: Buffer }>((resolve, reject) => {
          raw
            .get({ host: '127.0.0.1', port: running.port, path: '/ann/zipped/style.css', headers: { 'accept-encoding': encoding } }, (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (c: Buffer) => chunks.push(c));
              res.on('end', () => resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
            })
            .on('error', reject);
        });
      const brotli = await rawBody('br');
      expect(brotli.encoding).toBe('br');
      expect(brotliDecompressSync(brotli.body).toString()).toBe(css);
      const gzip = await rawBody('gzip');
      expect(gzip.encoding).toBe('gzip');
      expect(gunzipSync(gzip.body).toString()).toBe(css);
      const identity = await rawBody('identity');
      expect(identity.encoding).toBeUndefined();
      expect(identity.body.toString()).toBe(css);
      const image = await fetch(`http://127.0.0.1:${running.port}/ann/zipped/img.png`, { headers: { 'accept-encoding': 'gzip' } });
      expect(image.headers.get('content-encoding')).toBeNull();
      expect(Buffer.from(await image.arrayBuffer())).toEqual(png);
    });

    it('serves the siblings sitedrop makes after a deploy as brotli and gzip that decompress to the file', async () => {
      const js = 'export const answer = 42;\n'.repeat(300);
      expect((await deploy(bob, 'made', { 'index.html': 'home', 'app.js': js })).status).toBe(200);
      const release = join(h.docsRoot, 'bob', 'made');
      const made = async (name: string) => stat(join(release, name)).then(() => true, () => false);
      await until(async () => (await made('app.js.br')) && (await made('app.js.gz')), 'the siblings', 60_000);
      for (const [encoding, decode] of [['br', brotliDecompressSync], ['gzip', gunzipSync]] as const) {
        const answer = await rawGet(running.port, '/bob/made/app.js', encoding);
        expect(answer.encoding).toBe(encoding);
        expect(answer.vary).toMatch(/Accept-Encoding/i);
        expect(answer.body.length).toBeLessThan(js.length);
        expect(decode(answer.body).toString()).toBe(js);
      }
      expect((await rawGet(running.port, '/bob/made/app.js', 'identity')).body.toString()).toBe(js);
    }, 90_000);

    it('answers every request from one release: 0 mixed answers over 30 swaps under load', async () => {
      const version = (n: number) => ({ 'index.html': `home v${n}`, 'v.html': `v${n}`, _redirects: '/route/* /v.html 200\n', _headers: `/*\n  X-Release: v${n}\n` });
      expect((await deploy(bob, 'swapped', version(0))).status).toBe(200);
      const mixed: string[] = [];
      let requests = 0;
      let deploying = true;
      const client = async () => {
        while (deploying) {
          const r = await get(`/bob/swapped/route/page-${requests}`);
          requests += 1;
          if (r.status !== 200 || r.headers.get('x-release') !== r.body) mixed.push(`${r.status} ${r.body} ${r.headers.get('x-release')}`);
        }
      };
      const clients = Array.from({ length: 4 }, client);
      for (let n = 1; n <= 30; n += 1) expect((await deploy(bob, 'swapped', version(n))).status).toBe(200);
      deploying = false;
      await Promise.all(clients);
      expect(mixed).toEqual([]);
      expect(requests).toBeGreaterThan(100);
      expect(await get('/bob/swapped/route/x')).toMatchObject({ status: 200, body: 'v30' });
      // A server that loads its configuration per deploy (Caddy) takes longer than the default.
    }, 300_000);

    // The server's own scenarios, while the service still runs.
    server.more?.(context);

    it('every rule still holds with sitedrop stopped: no request reaches it', async () => {
      expect((await deploy(bob, 'alone', { 'index.html': 'alone', 'a.html': 'A', _redirects: '/x /a.html 302\n/spa/* /index.html 200\n', _headers: '/*\n  X-Alone: 1\n' })).status).toBe(200);
      await h.service.stop(1000);
      expect(await get('/bob/alone/x')).toMatchObject({ status: 302, location: '/bob/alone/a.html' });
      const spa = await get('/bob/alone/spa/deep');
      expect(spa).toMatchObject({ status: 200, body: 'alone' });
      expect(spa.headers.get('x-alone')).toBe('1');
      expect(await running.problems()).toEqual([]);
    });

  });
}
