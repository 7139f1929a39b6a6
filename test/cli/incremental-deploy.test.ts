import { execFile, execFileSync } from 'node:child_process';
import { link, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { objectPath } from '../../src/adapters/fs/store/object-names.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { file as tarFile, tgz } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';
import { startForwardingProxy, type ForwardingProxy } from './forwarding-proxy.js';
import { CLI, runNode, startNode, type Run } from './run-cli.js';
import { tarEntries } from './tar-entries.js';
import { sha256 } from '../support/sha256.js';
import { until } from '../support/until.js';

const USER = 'incr';
const MiB = 1024 * 1024;

/** Paths and file contents of a tree, modes aside: what a visitor of the site sees. */
const contents = async (root: string) =>
  Object.fromEntries(Object.entries(await snapshot(root)).map(([path, what]) => [path, what.replace(/^(file|dir) \d+ ?/, '$1 ')]));

describe('sitedrop deploy <folder>: only what the server lacks (the built CLI, a real server behind a recording proxy)', () => {
  let h: Harness;
  let proxy: ForwardingProxy;
  let work: string;
  let token: string;

  const env = (secret = token) => ({ SITEDROP_URL: proxy.url, SITEDROP_TOKEN: secret, SITEDROP_CACHE_DIR: join(work, 'cache') });
  const sitedrop = (args: string[], secret = token): Promise<Run> => runNode([CLI, ...args], { env: env(secret) });
  const deployed = async (args: string[], secret = token): Promise<Record<string, unknown>> => {
    const r = await sitedrop(['deploy', ...args, '--json'], secret);
    expect(r.stderr).not.toContain('sitedrop:');
    expect(r.code).toBe(0);
    return JSON.parse(r.stdout) as Record<string, unknown>;
  };
  const site = async (name: string, files: Record<string, string | Buffer>): Promise<string> => {
    const root = join(work, name);
    for (const [path, bytes] of Object.entries(files)) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await writeFile(join(root, path), bytes);
    }
    return root;
  };
  const live = (project: string) => contents(join(h.docsRoot, USER, project, '/'));
  /** The requests the proxy has seen since `since` (a count of earlier ones). */
  const since = (count: number) => proxy.seen.slice(count);
  const batchesSince = (count: number) => since(count).filter((e) => e.method === 'PUT' && e.path.endsWith('/objects'));
  const uploaded = async (count: number) => (await Promise.all(batchesSince(count).map(async (e) => (await tarEntries(e.body)).map((t) => t.path)))).flat();
  const sessionOf = (count: number) => /^\/api\/v1\/deploys\/([0-9a-f]{32})\//.exec(since(count).find((e) => e.method === 'PUT' || e.path.endsWith('/publish'))?.path ?? '')?.[1];

  beforeAll(async () => {
    h = await startHarness({ PREVIEWS_MAX: '1' });
    proxy = await startForwardingProxy(h.url);
    token = await h.createUser(USER);
    work = await mkdtemp(join(tmpdir(), 'sitedrop-incremental-'));
  });
  beforeEach(() => {
    proxy.hook = () => 'forward';
  });
  afterAll(async () => {
    await proxy.close();
    await h.close();
    await rm(work, { recursive: true, force: true });
  });

  const files = {
    'index.html': '<h1>home</h1>',
    'docs/guide/深い/ページ.html': 'ページ',
    'docs/café.css': 'body { color: #c0ffee }',
    'docs/empty.txt': '',
    'assets/logo.svg': '<svg/>',
    'assets/logo-copy.svg': '<svg/>',
    'assets/blob.bin': Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 256)),
    'assets/large.bin': Buffer.from(Array.from({ length: 600_000 }, (_, i) => (i * 31) % 253)),
  };
  const total = Object.values(files).reduce((sum, bytes) => sum + Buffer.byteLength(bytes), 0);

  it('sends every object once at first, then only the one file changed, then nothing; the release is the folder byte for byte', async () => {
    const root = await site('site', files);
    let mark = proxy.seen.length;
    const first = await deployed([root, '--project', 'docs']);
    // The empty file is never sent (the protocol knows its digest); the copy's bytes go once.
    expect(first).toEqual({
      status: 'ok', project: 'docs', username: USER, url: 'https://sites.example.test/incr/docs/', release: expect.stringMatching(/^\d{8}T\d{6}$/),
      mode: 'incremental', totalFiles: 8, totalBytes: total, sentFiles: 7, sentBytes: total - 6, skippedFiles: 1, hashedFiles: 8,
    });
    expect((await uploaded(mark)).sort()).toEqual([...new Set(Object.values(files).filter((b) => b.length > 0).map(sha256))].sort());
    expect(since(mark).find((e) => e.path === '/api/v1/deploys')?.body.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect(await live('docs')).toEqual(await contents(root));

    await writeFile(join(root, 'docs/café.css'), 'body { color: #bada55 }');
    mark = proxy.seen.length;
    const second = await deployed([root, '--project', 'docs']);
    expect(second).toMatchObject({ mode: 'incremental', totalFiles: 8, totalBytes: total, sentFiles: 1, sentBytes: 23, skippedFiles: 7 });
    expect(second.release).not.toBe(first.release);
    expect(await uploaded(mark)).toEqual([sha256('body { color: #bada55 }')]);
    expect(await live('docs')).toEqual(await contents(root));

    mark = proxy.seen.length;
    const third = await sitedrop(['deploy', root, '--project', 'docs']);
    expect(third.code).toBe(0);
    // Whether files are read again depends on the clock: a file written less than 2 s
    // before a deploy is read by the next one (quick-check.ts), so under load some are not.
    expect(third.stdout).toMatch(/^sent 0 of 8 files \(0\.0 MB of 0\.7 MB\); 8 already on the server\n(read [1-7] files; [1-7] had not changed since the last deploy from here\n)?deployed docs: release \d{8}T\d{6}\nhttps:\/\/sites\.example\.test\/incr\/docs\/\n$/);
    expect(third.stderr).toMatch(/^hashing 8 files\.\.\.\nhashed 8 files in \d+\.\d s\n$/);
    expect(third.stdout + third.stderr).not.toContain('\u001b');
    // Opened on the last release before the folder is read; then what the folder holds now, relative to it.
    expect(since(mark).map((e) => `${e.method} ${e.path.replace(/[0-9a-f]{32}/, '<id>')} ${e.status}`)).toEqual([
      'POST /api/v1/deploys 201',
      'PUT /api/v1/deploys/<id>/manifest 200',
      'POST /api/v1/deploys/<id>/publish 200',
    ]);
    expect(await live('docs')).toEqual(await contents(root));
  });

  it('sends a site mostly new to the server as one archive, then only what changes, in batches of at most ~32 MiB, a larger file alone', async () => {
    const many = Object.fromEntries(Array.from({ length: 2100 }, (_, i) => [`many/${String(i).padStart(4, '0')}.txt`, `file ${i}\n`]));
    const root = await site('big', { 'index.html': 'big', ...many });
    let mark = proxy.seen.length;
    const first = await sitedrop(['deploy', root, '--project', 'big', '--json']);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ mode: 'full', totalFiles: 2101, sentFiles: 2101 });
    expect(first.stderr).toContain('2101 of 2101 files are new to the server: sending the whole folder as one archive');
    // The session opened to ask was deleted, and the archive went instead.
    expect(since(mark).map((e) => `${e.method} ${e.path.replace(/[0-9a-f]{32}/, '<id>')} ${e.status}`)).toEqual([
      'POST /api/v1/deploys 201',
      'DELETE /api/v1/deploys/<id> 204',
      'POST /api/v1/deploy 200',
    ]);
    // Now a few changed pages and two videos, each over half a batch.
    for (let i = 0; i < 30; i += 1) await writeFile(join(root, `many/${String(i).padStart(4, '0')}.txt`), `changed ${i}\n`);
    await writeFile(join(root, 'a-video.bin'), Buffer.alloc(17 * MiB, 7));
    await writeFile(join(root, 'b-video.bin'), Buffer.alloc(17 * MiB, 8));
    mark = proxy.seen.length;
    expect(await deployed([root, '--project', 'big'])).toMatchObject({ mode: 'incremental', totalFiles: 2103, sentFiles: 32, skippedFiles: 2071 });
    const batches = await Promise.all(batchesSince(mark).map((e) => tarEntries(e.body)));
    expect(batches.length).toBe(2);
    expect(batches.flat()).toHaveLength(32);
    for (const batch of batches) expect(batch.reduce((sum, entry) => sum + entry.bytes.length, 0)).toBeLessThanOrEqual(32 * MiB);
    expect(await live('big')).toEqual(await contents(root));
  }, 120_000);

  it('sends photos and fonts as stored blocks in a second gzip member, which the server takes as one archive', async () => {
    const pattern = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i % 97) + seed));
    const root = await site('media', { 'index.html': 'media', 'a.html': 'a', 'photo.JPG': pattern(200_000, 1), 'font.woff2': pattern(50_000, 2) });
    await deployed([root, '--project', 'media', '--full']);
    await writeFile(join(root, 'a.html'), 'a, changed');
    await writeFile(join(root, 'photo.JPG'), pattern(200_000, 3));
    await writeFile(join(root, 'font.woff2'), pattern(50_000, 4));
    const mark = proxy.seen.length;
    expect(await deployed([root, '--project', 'media'])).toMatchObject({ mode: 'incremental', sentFiles: 3 });
    const [batch] = batchesSince(mark);
    // The page first, deflated; then the font and the photo as they are, in the folder's order (this pattern would deflate to a few KiB).
    expect((await tarEntries(batch!.body)).map((entry) => entry.path)).toEqual([sha256('a, changed'), sha256(pattern(50_000, 4)), sha256(pattern(200_000, 3))]);
    expect(batch!.body.length).toBeGreaterThan(250_000);
    expect(batch!.body.indexOf(Buffer.from([0x1f, 0x8b, 8]), 1)).toBeGreaterThan(0);
    expect(await live('media')).toEqual(await contents(root));
    // Only a photo changed: the first member holds no entry at all.
    await writeFile(join(root, 'photo.JPG'), pattern(200_000, 5));
    const again = proxy.seen.length;
    expect(await deployed([root, '--project', 'media'])).toMatchObject({ mode: 'incremental', sentFiles: 1 });
    expect((await tarEntries(batchesSince(again)[0]!.body)).map((entry) => entry.path)).toEqual([sha256(pattern(200_000, 5))]);
    expect(await live('media')).toEqual(await contents(root));
  });

  it('--full sends the whole folder as one archive, as before', async () => {
    const root = await site('full', files);
    const mark = proxy.seen.length;
    expect(await deployed([root, '--project', 'full', '--full'])).toMatchObject({ status: 'ok', mode: 'full', totalFiles: 8, totalBytes: total, sentFiles: 8, sentBytes: total, skippedFiles: 0 });
    expect(since(mark).map((e) => `${e.method} ${e.path}`)).toEqual(['POST /api/v1/deploy']);
    expect(await live('full')).toEqual(await contents(root));
    const human = await sitedrop(['deploy', root, '--project', 'full', '--full']);
    expect(human.stdout).toMatch(/^sent all 8 files \(0\.7 MB\) in one archive\ndeployed full: release /);
  });

  it('--full packs long names, hard links, empty directories and photos as the server takes them: the release is the folder', async () => {
    const long = `docs/${'a-rather-long-directory-name/'.repeat(6)}${'page-with-a-long-name-'.repeat(4)}.html`;
    // Cut short to ustar's fields, this name would end in '..', which the server refuses in a header's own name.
    const cut = `${'z'.repeat(100)}/${'p'.repeat(60)}/${'x'.repeat(35)}/..${'y'.repeat(200)}.html`;
    const root = await site('whole', { 'index.html': '<h1>whole</h1>', [long]: 'deep', [cut]: 'cut', 'img/photo.png': Buffer.alloc(100_000, 3), 'docs/深い/ページ.html': 'ページ' });
    await mkdir(join(root, 'empty'));
    await link(join(root, 'index.html'), join(root, 'docs/home.html'));
    expect(await deployed([root, '--project', 'whole', '--full'])).toMatchObject({ mode: 'full', totalFiles: 6, sentFiles: 6 });
    expect(await live('whole')).toEqual(await contents(root));
    expect(Object.keys(await live('whole'))).toEqual(expect.arrayContaining(['empty', long, cut]));
  });

  it('falls back to one archive, saying so, when the server has no incremental protocol (404 or 405)', async () => {
    const root = await site('older', files);
    for (const status of [404, 405]) {
      proxy.hook = (req, res) => {
        if (req.url !== '/api/v1/deploys') return 'forward';
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'error', error: status === 404 ? 'not found' : 'method not allowed' }));
        return 'answered';
      };
      await writeFile(join(root, 'index.html'), `answered ${status}`);
      const mark = proxy.seen.length;
      const r = await sitedrop(['deploy', root, '--project', 'older', '--json']);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`this server has no incremental deploys (the server answered ${status} to POST /api/v1/deploys): sending the whole folder\n`);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok', mode: 'full', sentFiles: 8 });
      expect(since(mark).map((e) => `${e.method} ${e.path}`)).toEqual(['POST /api/v1/deploys', 'POST /api/v1/deploy']);
      expect(await live('older')).toEqual(await contents(root));
    }
  });

  it('falls back to one archive, saying so, when the server has no room for another session (429), and is incremental again once there is', async () => {
    const root = await site('crowded', files);
    // Every place the user's own token has (DEPLOY_SESSIONS_MAX, 8) held, as pipelines cut off in flight leave them.
    const held: string[] = [];
    for (let i = 0; ; i++) {
      const r = await h.call('POST', '/api/v1/deploys', { token, json: { project: `held-${i}`, files: [{ path: 'a.html', size: 4, digest: sha256(`held${i}`) }] } });
      if (r.status === 429) break;
      expect(r.status).toBe(201);
      held.push(r.body.id as string);
    }
    expect(held).toHaveLength(8);
    const mark = proxy.seen.length;
    const r = await sitedrop(['deploy', root, '--project', 'crowded', '--json']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('the server has no room for another deploy session (too many open deploy sessions, retry later): sending the whole folder as one archive\n');
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok', mode: 'full', sentFiles: 8 });
    expect(since(mark).map((e) => `${e.method} ${e.path} ${e.status}`)).toEqual(['POST /api/v1/deploys 429', 'POST /api/v1/deploy 200']);
    expect(await live('crowded')).toEqual(await contents(root));

    for (const id of held) expect((await h.call('DELETE', `/api/v1/deploys/${id}`, { token })).status).toBe(204);
    await writeFile(join(root, 'index.html'), 'room again');
    expect(await deployed([root, '--project', 'crowded'])).toMatchObject({ mode: 'incremental', sentFiles: 1, skippedFiles: 7 });
    expect(await live('crowded')).toEqual(await contents(root));
  });

  it('deploys incrementally with a deploy key, and a preview with a preview key, against the owner store', async () => {
    const root = await site('keyed', files);
    await deployed([root, '--project', 'keyed']);
    const key = async (scope: string) => (await h.call('POST', '/api/v1/projects/keyed/keys', { token, json: { name: scope, scope } })).body.token as string;
    await writeFile(join(root, 'index.html'), 'by a key');
    expect(await deployed([root, '--project', 'keyed'], await key('deploy'))).toMatchObject({ username: USER, mode: 'incremental', sentFiles: 1, skippedFiles: 7 });
    expect(await live('keyed')).toEqual(await contents(root));
    await writeFile(join(root, 'index.html'), 'a preview');
    expect(await deployed([root, '--project', 'keyed', '--preview', 'pr-1'], await key('preview'))).toMatchObject({ preview: 'pr-1', mode: 'incremental', sentFiles: 1, skippedFiles: 7 });
    expect(await contents(join(h.previewsRoot, USER, 'keyed/pr-1/'))).toEqual(await contents(root));
    expect((await live('keyed'))['index.html']).toBe(`file ${sha256('by a key').slice(0, 16)}`);
  });

  it('sends again what the server has lost by the publish (409 objects missing), then publishes', async () => {
    const root = await site('lossy', files);
    await deployed([root, '--project', 'lossy']);
    await writeFile(join(root, 'index.html'), 'changed');
    const lost = sha256(files['docs/café.css']);
    let collected = false;
    proxy.hook = async (req) => {
      // Garbage collection, as it were, at the worst moment: once, as the manifest arrives.
      // The manifest is relative to the release before, which links the file, so the open
      // does not look for it; the release prepared meanwhile does not find it, nor does the
      // publish.
      if (req.method === 'POST' && req.url === '/api/v1/deploys' && !collected) {
        collected = true;
        await unlink(join(h.deploysRoot, USER, '.objects', objectPath(lost)));
      }
      return 'forward' as const;
    };
    const mark = proxy.seen.length;
    const r = await sitedrop(['deploy', root, '--project', 'lossy', '--json']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('the server is missing 1 of the files at the publish; sending them and publishing again\n');
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok', mode: 'incremental', sentFiles: 2, sentBytes: 7 + 23, skippedFiles: 6 });
    expect(since(mark).map((e) => `${e.method} ${e.path.replace(/[0-9a-f]{32}/, '<id>')} ${e.status}`)).toEqual([
      'POST /api/v1/deploys 201',
      'PUT /api/v1/deploys/<id>/manifest 200',
      'PUT /api/v1/deploys/<id>/objects 200',
      'POST /api/v1/deploys/<id>/publish 409',
      'PUT /api/v1/deploys/<id>/objects 200',
      'POST /api/v1/deploys/<id>/publish 200',
    ]);
    expect(await uploaded(mark)).toEqual([sha256('changed'), lost]);
    expect(await live('lossy')).toEqual(await contents(root));
  });

  it('deletes its session when the server refuses the publish (a 409 that is not missing objects), and exits 1', async () => {
    const root = await site('refused', files);
    await deployed([root, '--project', 'refused', '--preview', 'pr-a']);
    await writeFile(join(root, 'index.html'), 'one preview too many');
    const mark = proxy.seen.length;
    const r = await sitedrop(['deploy', root, '--project', 'refused', '--preview', 'pr-b']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\nsitedrop: too many previews: PREVIEWS_MAX allows 1 per project, delete one first\n$/);
    const id = sessionOf(mark);
    expect(since(mark).map((e) => `${e.method} ${e.path.replace(id ?? '-', '<id>')} ${e.status}`)).toEqual([
      'POST /api/v1/deploys 201',
      'PUT /api/v1/deploys/<id>/objects 200',
      'POST /api/v1/deploys/<id>/publish 409',
      'DELETE /api/v1/deploys/<id> 204',
    ]);
    expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).status).toBe(404);
  });

  it('on Ctrl-C during an upload, deletes the session, publishes nothing and exits 130', async () => {
    const root = await site('stopped', files);
    await deployed([root, '--project', 'stopped']);
    const before = await live('stopped');
    await writeFile(join(root, 'index.html'), 'never published');
    const cli = startNode([CLI, 'deploy', root, '--project', 'stopped'], { env: env() });
    proxy.hook = (req) => {
      if (!(req.method === 'PUT' && req.url?.endsWith('/objects'))) return 'forward';
      // A slow network: the upload hangs, and the person at the terminal gives up.
      cli.child.kill('SIGINT');
      return 'answered';
    };
    const mark = proxy.seen.length;
    const r = await cli.done;
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/\nsitedrop: interrupted; nothing was published\n$/);
    const id = sessionOf(mark);
    expect(since(mark).filter((e) => e.method === 'DELETE').map((e) => `${e.path.replace(id ?? '-', '<id>')} ${e.status}`)).toEqual(['/api/v1/deploys/<id> 204']);
    expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).status).toBe(404);
    expect(await live('stopped')).toEqual(before);
  });

  it('on Ctrl-C while the folder is read, deletes the session it opened on the base, and exits 130', async () => {
    const many = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`p/${i % 40}/${i}.html`, `page ${i}`]));
    const root = await site('walked', { ...files, ...many });
    await deployed([root, '--project', 'walked']);
    await writeFile(join(root, 'index.html'), 'never published');
    const cli = startNode([CLI, 'deploy', root, '--project', 'walked'], { env: env() });
    proxy.hook = (req) => {
      // The open on the base: the CLI is walking its folder now.
      if (req.method === 'POST' && req.url === '/api/v1/deploys') cli.child.kill('SIGINT');
      return 'forward';
    };
    const mark = proxy.seen.length;
    const before = await live('walked');
    const r = await cli.done;
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/(^|\n)sitedrop: interrupted; nothing was published\n$/);
    expect(since(mark).map((e) => `${e.method} ${e.path.replace(/[0-9a-f]{32}/, '<id>')} ${e.status}`)).toEqual(['POST /api/v1/deploys 201', 'DELETE /api/v1/deploys/<id> 204']);
    expect(await live('walked')).toEqual(before);
  });

  describe('a redeploy sends only the changes since the release this machine last published (SITEDROP_CACHE_DIR)', () => {
    const pagePath = (i: number) => `docs/section-${i % 30}/page-${String(i).padStart(4, '0')}.html`;
    const pages = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [pagePath(i), `<p>page ${i}</p>`]));
    const manifestRequests = (count: number) => since(count).filter((e) => e.method === 'POST' && e.path === '/api/v1/deploys');
    const revisions = (count: number) => since(count).filter((e) => e.method === 'PUT' && e.path.endsWith('/manifest'));
    const bodyOf = (e: { body: Buffer }) => JSON.parse(gunzipSync(e.body).toString()) as Record<string, unknown>;
    const cacheFiles = async () => (await readdir(join(work, 'cache'))).map((name) => join(work, 'cache', name));

    it('sends a manifest a small fraction of the first, and publishes the folder exactly', async () => {
      const root = await site('wire', { 'index.html': 'wire', ...pages });
      let mark = proxy.seen.length;
      // Mostly new: the archive goes, and the manifest hashed for it is kept all the same.
      const first = await deployed([root, '--project', 'wire']);
      expect(first).toMatchObject({ mode: 'full', totalFiles: 3001 });
      const [whole] = manifestRequests(mark);
      expect(bodyOf(whole!).base).toBeUndefined();
      for (const path of await cacheFiles()) expect((await stat(path)).mode & 0o777).toBe(0o600);
      expect((await readdir(join(work, 'cache'))).filter((name) => name.endsWith('.tmp'))).toEqual([]);

      // 1% changed, one removed, one added.
      for (let i = 0; i < 30; i += 1) await writeFile(join(root, pagePath(i * 100 + 7)), `<p>changed ${i}</p>`);
      await unlink(join(root, pagePath(1)));
      await writeFile(join(root, 'docs/new.html'), 'new');
      mark = proxy.seen.length;
      const second = await deployed([root, '--project', 'wire']);
      expect(second).toMatchObject({ mode: 'incremental', totalFiles: 3001, sentFiles: 31 });
      // Opened on the base alone, then the difference to the session.
      const [early] = manifestRequests(mark);
      expect(bodyOf(early!)).toEqual({ project: 'wire', base: { release: first.release, digest: expect.stringMatching(/^[0-9a-f]{64}$/) }, files: [], removed: [] });
      const [relative] = revisions(mark);
      const body = bodyOf(relative!);
      expect(body.base).toEqual(bodyOf(early!).base);
      expect(body.removed).toEqual(['docs/section-1/page-0001.html']);
      expect((body.files as unknown[]).length).toBe(31);
      // Bytes on the wire, as the proxy received them (gzip): the digests of 3,000 files against 31.
      expect(relative!.body.length * 20, `${relative!.body.length} bytes against ${whole!.body.length}`).toBeLessThan(whole!.body.length);
      expect(await live('wire')).toEqual(await contents(root));

      // The release just published is the next base.
      await writeFile(join(root, 'index.html'), 'wire 3');
      mark = proxy.seen.length;
      expect(await deployed([root, '--project', 'wire'])).toMatchObject({ mode: 'incremental', sentFiles: 1 });
      expect(bodyOf(manifestRequests(mark)[0]!).base).toMatchObject({ release: second.release });
      expect(await live('wire')).toEqual(await contents(root));
    }, 60_000);

    it('sends the whole manifest once, saying so, when the cached base is gone (the project deleted and deployed again by tarball)', async () => {
      const root = await site('stale', files);
      const first = await deployed([root, '--project', 'stale']);
      expect((await h.call('DELETE', '/api/v1/projects/stale', { token })).status).toBe(200);
      // Other files than the cached manifest's, so the release is not that base even if it gets the same id.
      expect((await h.deploy(token, 'stale', tgz([tarFile('index.html', 'from elsewhere')]))).status).toBe(200);
      await writeFile(join(root, 'index.html'), 'stale cache');
      const mark = proxy.seen.length;
      const r = await sitedrop(['deploy', root, '--project', 'stale', '--json']);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`the server refused the changes since release ${String(first.release)} (base release not found or changed: send the whole manifest): sending the whole manifest\n`);
      expect(since(mark).map((e) => `${e.method} ${e.path.replace(/[0-9a-f]{32}/, '<id>')} ${e.status}`)).toEqual([
        'POST /api/v1/deploys 409',
        'POST /api/v1/deploys 201',
        'PUT /api/v1/deploys/<id>/objects 200',
        'POST /api/v1/deploys/<id>/publish 200',
      ]);
      expect(bodyOf(manifestRequests(mark)[1]!).base).toBeUndefined();
      expect(await live('stale')).toEqual(await contents(root));
      // And the cache holds the release just published again.
      await writeFile(join(root, 'index.html'), 'fresh cache');
      const next = proxy.seen.length;
      const again = await sitedrop(['deploy', root, '--project', 'stale']);
      expect(again.code).toBe(0);
      expect(again.stderr).not.toContain('whole manifest');
      expect(bodyOf(manifestRequests(next)[0]!).base).toMatchObject({ release: JSON.parse(r.stdout).release });
    });

    const sequence = (count: number) => since(count).map((e) => `${e.method} ${e.path.replace(/[0-9a-f]{32}/, '<id>')} ${e.status}`);
    /** Staging areas and their new objects, not yet thrown away: none once a deploy has ended. */
    const leftInStaging = async () => [...(await readdir(join(h.deploysRoot, '.staging')).catch(() => [])), ...(await readdir(join(h.deploysRoot, '.fresh')).catch(() => []))];

    /** Before the CLI's first request of `method` to a path ending `suffix`, five deploys from elsewhere (RELEASES_KEEP 5) prune its base. */
    const pruneBaseBefore = (method: string, suffix: string, project: string, base: string) => {
      let pruned = false;
      proxy.hook = async (req) => {
        if (req.method === method && req.url?.endsWith(suffix) && !pruned) {
          pruned = true;
          for (let i = 0; i < 5; i += 1) expect((await h.deploy(token, project, tgz([tarFile('index.html', `elsewhere ${i}`)]))).status).toBe(200);
          expect(await readdir(join(h.deploysRoot, USER, project))).not.toContain(base);
        }
        return 'forward' as const;
      };
    };

    it('sends the whole manifest once, saying so, when its base is pruned between the open and the difference (409), leaving nothing of that session', async () => {
      const root = await site('pruned', files);
      const first = await deployed([root, '--project', 'pruned']);
      await writeFile(join(root, 'index.html'), 'after the prune');
      pruneBaseBefore('PUT', '/manifest', 'pruned', String(first.release));
      const mark = proxy.seen.length;
      const r = await sitedrop(['deploy', root, '--project', 'pruned', '--json']);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`the server refused the changes since release ${String(first.release)} (base release not found or changed: send the whole manifest): sending the whole manifest\n`);
      expect(sequence(mark)).toEqual([
        'POST /api/v1/deploys 201',
        'PUT /api/v1/deploys/<id>/manifest 409',
        'DELETE /api/v1/deploys/<id> 204',
        'POST /api/v1/deploys 201',
        'PUT /api/v1/deploys/<id>/objects 200',
        'POST /api/v1/deploys/<id>/publish 200',
      ]);
      expect(bodyOf(manifestRequests(mark)[1]!).base).toBeUndefined();
      expect(await live('pruned')).toEqual(await contents(root));
      // Thrown away before the session's DELETE is answered.
      expect(await leftInStaging()).toEqual([]);
    });

    it('sends the whole manifest and publishes again when nothing changed and the base is pruned before the publish (409)', async () => {
      const root = await site('unchanged', files);
      const first = await deployed([root, '--project', 'unchanged']);
      // The session holds its unchanged base by name: the publish finds it gone.
      pruneBaseBefore('POST', '/publish', 'unchanged', String(first.release));
      const mark = proxy.seen.length;
      const r = await sitedrop(['deploy', root, '--project', 'unchanged', '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`the server refused the changes since release ${String(first.release)} (base release not found or changed: send the whole manifest): sending the whole manifest\n`);
      expect(sequence(mark)).toEqual([
        'POST /api/v1/deploys 201',
        'PUT /api/v1/deploys/<id>/manifest 200',
        'POST /api/v1/deploys/<id>/publish 409',
        'PUT /api/v1/deploys/<id>/manifest 200',
        'POST /api/v1/deploys/<id>/publish 200',
      ]);
      expect(bodyOf(revisions(mark)[1]!).base).toBeUndefined();
      expect(await live('unchanged')).toEqual(await contents(root));
      expect(await leftInStaging()).toEqual([]);
    });

    it('against a server that cannot take a manifest again (404), deletes the session opened on the base and opens with the difference', async () => {
      const root = await site('no-revise', files);
      await deployed([root, '--project', 'no-revise']);
      await writeFile(join(root, 'index.html'), 'older server again');
      proxy.hook = (req, res) => {
        if (!(req.method === 'PUT' && req.url?.endsWith('/manifest'))) return 'forward';
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'error', error: 'not found' }));
        return 'answered';
      };
      const mark = proxy.seen.length;
      expect(await deployed([root, '--project', 'no-revise'])).toMatchObject({ mode: 'incremental', sentFiles: 1 });
      expect(sequence(mark)).toEqual([
        'POST /api/v1/deploys 201',
        // Answered by the hook, so the proxy saw no status of the server's.
        'PUT /api/v1/deploys/<id>/manifest undefined',
        'DELETE /api/v1/deploys/<id> 204',
        'POST /api/v1/deploys 201',
        'PUT /api/v1/deploys/<id>/objects 200',
        'POST /api/v1/deploys/<id>/publish 200',
      ]);
      const relative = bodyOf(manifestRequests(mark)[1]!);
      expect(relative.base).toBeDefined();
      expect((relative.files as { path: string }[]).map((f) => f.path)).toEqual(['index.html']);
      expect(await live('no-revise')).toEqual(await contents(root));
      // Thrown away before the session's DELETE is answered.
      expect(await leftInStaging()).toEqual([]);
    });

    it('a whole manifest refused (400) as a session\'s is not taken for a refused base: it goes again as an open, nothing said of a base', async () => {
      const root = await site('all-new', files);
      await deployed([root, '--project', 'all-new']);
      // Every file changed: the difference is no shorter than the site, so the whole manifest goes.
      for (const [path, bytes] of Object.entries(files)) await writeFile(join(root, path), Buffer.concat([Buffer.from(bytes), Buffer.from('!')]));
      proxy.hook = (req, res) => {
        if (!(req.method === 'PUT' && req.url?.endsWith('/manifest'))) return 'forward';
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'error', error: 'invalid manifest: made up by the test' }));
        return 'answered';
      };
      const mark = proxy.seen.length;
      const r = await sitedrop(['deploy', root, '--project', 'all-new', '--json']);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ mode: 'incremental', sentFiles: 8 });
      // No base was sent, so none was refused: nothing said of one, and the cache of it kept.
      expect(r.stderr).not.toContain('refused the changes');
      expect(sequence(mark).slice(0, 4)).toEqual(['POST /api/v1/deploys 201', 'PUT /api/v1/deploys/<id>/manifest undefined', 'DELETE /api/v1/deploys/<id> 204', 'POST /api/v1/deploys 201']);
      expect(bodyOf(manifestRequests(mark)[1]!).base).toBeUndefined();
      expect(await live('all-new')).toEqual(await contents(root));
    });

    it('deletes the session it opened on the base when the folder turns out to be refused (a link in it), and exits 2', async () => {
      const root = await site('linked', files);
      await deployed([root, '--project', 'linked']);
      await symlink('index.html', join(root, 'docs', 'alias.html'));
      const mark = proxy.seen.length;
      const r = await sitedrop(['deploy', root, '--project', 'linked']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('alias.html');
      expect(sequence(mark)).toEqual(['POST /api/v1/deploys 201', 'DELETE /api/v1/deploys/<id> 204']);
      // Thrown away before the session's DELETE is answered.
      expect(await leftInStaging()).toEqual([]);
    });

    it('against a server that takes the changes for the whole site (one before relative manifests), deletes that session and sends the whole manifest', async () => {
      const root = await site('older-base', files);
      await deployed([root, '--project', 'older-base']);
      await writeFile(join(root, 'index.html'), 'older server');
      let opens = 0;
      proxy.hook = (req, res) => {
        if (req.url !== '/api/v1/deploys' || (opens += 1) > 2) return 'forward';
        // What such a server answers: no files for the open on the base alone, then a session of the one file it was sent.
        if (opens === 1) {
          res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'error', error: 'invalid manifest: site contains no files' }));
          return 'answered';
        }
        const session = { status: 'ok', id: 'f'.repeat(32), project: 'older-base', expiresAt: new Date().toISOString(), files: 1, bytes: 12, missing: [], missingBytes: 0 };
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(session));
        return 'answered';
      };
      const mark = proxy.seen.length;
      const r = await sitedrop(['deploy', root, '--project', 'older-base', '--json']);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain('the server took the changes for the whole site (it predates relative manifests): sending the whole manifest\n');
      expect(since(mark).map((e) => `${e.method} ${e.path}`).slice(0, 4)).toEqual(['POST /api/v1/deploys', 'POST /api/v1/deploys', `DELETE /api/v1/deploys/${'f'.repeat(32)}`, 'POST /api/v1/deploys']);
      expect(bodyOf(manifestRequests(mark)[0]!).files).toEqual([]);
      expect(bodyOf(manifestRequests(mark)[1]!).base).toBeDefined();
      expect(bodyOf(manifestRequests(mark)[2]!).base).toBeUndefined();
      expect(await live('older-base')).toEqual(await contents(root));
    });

    it('reads only the files changed since the last deploy from here, and publishes a same-size edit with its time put back', async () => {
      const root = await site('quick', { 'index.html': 'quick', ...Object.fromEntries(Object.entries(pages).slice(0, 200)) });
      // Past the racy margin (2 s) since the files last changed, so the first deploy may trust what it stamps.
      const changed = Math.max(...(await Promise.all((await readdir(root, { recursive: true })).map(async (name) => (await stat(join(root, name))).ctimeMs))));
      await until(() => Date.now() - changed > 2_000, 'the files to be older than the racy margin');
      expect(await deployed([root, '--project', 'quick'])).toMatchObject({ mode: 'incremental', hashedFiles: 201 });
      expect(await deployed([root, '--project', 'quick'])).toMatchObject({ hashedFiles: 0, sentFiles: 0 });

      const edited = join(root, pagePath(7));
      const times = join(work, 'quick-times');
      await writeFile(times, '');
      execFileSync('touch', ['-r', edited, times]);
      await writeFile(edited, '<p>edit 7</p>');
      execFileSync('touch', ['-r', times, edited]);
      const r = await sitedrop(['deploy', root, '--project', 'quick']);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('read 1 files; 200 had not changed since the last deploy from here\n');
      expect(await live('quick')).toEqual(await contents(root));
      // Whether that edit was stamped depends on how long the CLI took to start (the
      // racy margin, which quick-check.test.ts checks with a clock of its own): read once
      // more or not, nothing is sent and nothing else is read.
      const next = await deployed([root, '--project', 'quick']);
      expect(next).toMatchObject({ sentFiles: 0 });
      expect(next.hashedFiles).toBeLessThanOrEqual(1);
    });

    it('keeps the releases of two accounts sharing a cache directory apart (each has a project of that name)', async () => {
      const otherToken = await h.createUser('incr-other');
      const mine = await site('shared-mine', { 'index.html': 'mine', ...Object.fromEntries(Object.entries(pages).slice(0, 50)) });
      const theirs = await site('shared-theirs', { 'index.html': 'theirs', ...Object.fromEntries(Object.entries(pages).slice(50, 100)) });
      await deployed([mine, '--project', 'shared']);
      await deployed([theirs, '--project', 'shared'], otherToken);
      for (const [root, secret] of [[mine, token], [theirs, otherToken]] as const) {
        await writeFile(join(root, 'index.html'), `${root} again`);
        const mark = proxy.seen.length;
        const r = await sitedrop(['deploy', root, '--project', 'shared', '--json'], secret);
        expect(r.code).toBe(0);
        expect(r.stderr).not.toContain('whole manifest');
        expect(since(mark).map((e) => `${e.method} ${e.path.replace(/[0-9a-f]{32}/, '<id>')} ${e.status}`)[0]).toBe('POST /api/v1/deploys 201');
        expect(bodyOf(manifestRequests(mark)[0]!).base).toBeDefined();
      }
    });

    it('ignores a corrupt or unreadable cache with a notice, deploys, and caches afresh', async () => {
      const root = await site('corrupt', files);
      await deployed([root, '--project', 'corrupt']);
      const written = await cacheFiles();
      for (const [i, bytes] of ['not JSON at all', '{"format":1,"files":"no"}'].entries()) {
        for (const path of written) await writeFile(path, bytes);
        await writeFile(join(root, 'index.html'), `corrupt ${i}`);
        const mark = proxy.seen.length;
        const r = await sitedrop(['deploy', root, '--project', 'corrupt', '--json']);
        expect(r.code).toBe(0);
        expect(r.stderr).toMatch(/ignoring the cached manifest \S+ \(.+\): sending the whole manifest\n/);
        expect(sequence(mark)).toEqual([
          'POST /api/v1/deploys 201',
          'PUT /api/v1/deploys/<id>/objects 200',
          'POST /api/v1/deploys/<id>/publish 200',
        ]);
        expect(await live('corrupt')).toEqual(await contents(root));
      }
      // A head whose files are not the ones it names, or cannot be parsed: the open on its base
      // has left already, and is deleted; the deploy goes on with the whole manifest, not a
      // difference from them.
      const lines = await Promise.all((await cacheFiles()).map(async (path) => ({ path, lines: (await readFile(path, 'utf8')).split('\n') })));
      const { path } = lines.find(({ lines: [first] }) => first!.includes('"project":"corrupt"'))!;
      const bodies: [string, (body: string) => string][] = [
        ['files that do not match its digest', (body) => body.replace(/"docs\/café\.css","size":\d+,"digest":"[0-9a-f]{64}"/, (entry) => entry.replace(/[0-9a-f]{64}"$/, `${'f'.repeat(64)}"`))],
        ['Unexpected end of JSON input', () => '{"files":['],
      ];
      for (const [i, [why, broken]] of bodies.entries()) {
        const [head, body] = (await readFile(path, 'utf8')).split('\n') as [string, string];
        await writeFile(path, `${head}\n${broken(body)}`);
        await writeFile(join(root, 'docs/café.css'), `body { color: #${i}${i}${i} }`);
        const from = proxy.seen.length;
        const wrong = await sitedrop(['deploy', root, '--project', 'corrupt', '--json']);
        expect(wrong.code).toBe(0);
        expect(wrong.stderr).toContain(`(${why}): sending the whole manifest\n`);
        expect(sequence(from)).toEqual([
          'POST /api/v1/deploys 201',
          'DELETE /api/v1/deploys/<id> 204',
          'POST /api/v1/deploys 201',
          'PUT /api/v1/deploys/<id>/objects 200',
          'POST /api/v1/deploys/<id>/publish 200',
        ]);
        expect(bodyOf(manifestRequests(from)[0]!).base).toMatchObject({ release: JSON.parse(head).release });
        expect(bodyOf(manifestRequests(from)[1]!).base).toBeUndefined();
        expect(await live('corrupt')).toEqual(await contents(root));
        expect(await leftInStaging()).toEqual([]);
      }
      // A cache directory that cannot be written: a notice, and the deploy stands.
      await writeFile(join(work, 'not-a-dir'), '');
      await writeFile(join(root, 'index.html'), 'no cache');
      const r = await runNode([CLI, 'deploy', root, '--project', 'corrupt'], { env: { ...env(), SITEDROP_CACHE_DIR: join(work, 'not-a-dir', 'cache') } });
      expect(r.code).toBe(0);
      expect(r.stderr).toContain('cannot cache the published manifest in ');
      expect(await live('corrupt')).toEqual(await contents(root));
    });
  });

  it('shows bars for hashing and sending on a terminal', async () => {
    // Bytes of its own: the user's store has every other file of these tests already.
    const root = await site('tty', { 'index.html': 'tty', 'movie.bin': Buffer.alloc(700_000, 3) });
    // script(1) runs the CLI on a pseudo-terminal, as a person at a shell would.
    const command = [process.execPath, CLI, 'deploy', root, '--project', 'tty'].map((a) => `'${a}'`).join(' ');
    const r = await new Promise<Run>((resolve) => {
      execFile('script', ['-qec', command, '/dev/null'], { env: { PATH: process.env.PATH ?? '', ...env(), TERM: 'xterm' } }, (error, stdout, stderr) =>
        resolve({ code: error ? 1 : 0, stdout, stderr }),
      );
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/hashing \S+ 2\/2 files/);
    expect(r.stdout).toMatch(/sending \S+ 0\.7 MB of 0\.7 MB at [\d.]+ MB\/s/);
    expect(r.stdout).toContain('\u001b[');
    expect(r.stdout).toMatch(/sent 2 of 2 files \(0\.7 MB of 0\.7 MB\); 0 already on the server\r?\ndeployed tty: release \d{8}T\d{6}/);
  });
});
