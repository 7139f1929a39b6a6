import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startForwardingProxy, type ForwardingProxy } from '../cli/forwarding-proxy.js';
import { CLI, runNode } from '../cli/run-cli.js';
import { derivedObjectPath } from '../../src/adapters/fs/store/generated-siblings.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { storeCollected, storeOf } from '../support/store.js';
import { file, tgz } from '../support/tar-builder.js';

/** A page that compresses well; `n` makes it unique. */
const page = (n: number | string, bytes = 3000) => `<!doctype html><title>${n}</title>${'<p>static sites, atomic releases</p>\n'.repeat(bytes / 38)}`;
const UPLOADED_BR = Buffer.from('the site\'s own brotli, kept as it is');
const SITE: Record<string, string | Buffer> = {
  'index.html': page('index'),
  'index.html.br': UPLOADED_BR,
  'css/site.CSS': page('css'),
  'js/app.js': page('js'),
  'data/list.json': page('json'),
  'img/logo.png': page('png'),
  'fonts/a.woff2': page('font'),
  'small.txt': 'under 256 bytes',
};
const TEXT = ['index.html', 'css/site.CSS', 'js/app.js', 'data/list.json'];
const archive = (files: Record<string, string | Buffer>) => tgz(Object.entries(files).map(([path, body]) => file(path, body)));

/** Waits for every named sibling below `dir` (the release's answer came before them, by design). */
async function siblingsThere(dir: string, paths: readonly string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!paths.every((path) => existsSync(join(dir, path)))) {
    if (Date.now() > deadline) throw new Error(`missing after ${timeoutMs} ms: ${paths.filter((p) => !existsSync(join(dir, p))).join(', ')}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function emptied(dir: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await readdir(dir)).length > 0) {
    if (Date.now() > deadline) throw new Error(`${dir} still holds ${(await readdir(dir)).join(', ')}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const wanted = (paths: readonly string[], codings = ['br', 'gz']) => paths.flatMap((p) => codings.map((c) => `${p}.${c}`));
const filesBelow = async (dir: string) =>
  (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)).sort();
const inode = async (path: string) => (await lstat(path)).ino;

describe('compressed siblings of a release\'s text files (the real service)', () => {
  let h: Harness;
  let token: string;
  const release = (project: string, id: unknown) => join(h.deploysRoot, 'pc', project, String(id));

  beforeAll(async () => {
    h = await startHarness({ RELEASES_KEEP: '2', PRECOMPRESS: 'on' });
    token = await h.createUser('pc');
  });
  afterAll(async () => h?.close());

  it('appear after the deploy\'s answer for text types only, each the file once decompressed; an uploaded sibling is kept', async () => {
    const reply = await h.deploy(token, 'site', archive(SITE));
    expect(reply.status).toBe(200);
    const dir = release('site', reply.body.release);
    await siblingsThere(dir, [...wanted(TEXT), 'index.html.gz']);
    for (const path of TEXT) {
      const original = await readFile(join(dir, path));
      if (path !== 'index.html') expect(brotliDecompressSync(await readFile(join(dir, `${path}.br`))).equals(original), path).toBe(true);
      expect(gunzipSync(await readFile(join(dir, `${path}.gz`))).equals(original), path).toBe(true);
    }
    expect((await readFile(join(dir, 'index.html.br'))).equals(UPLOADED_BR)).toBe(true);
    expect((await filesBelow(dir)).filter((p) => /\.(br|gz)$/.test(p))).toEqual(wanted(TEXT).sort());
  });

  it('are made once per stored object: another project with the same files links the same siblings', async () => {
    const reply = await h.deploy(token, 'copy', archive(SITE));
    const dir = release('copy', reply.body.release);
    await siblingsThere(dir, wanted(TEXT.slice(1)));
    const first = join(h.docsRoot, 'pc', 'site');
    for (const path of wanted(TEXT.slice(1))) expect(await inode(join(dir, path)), path).toBe(await inode(join(first, path)));
  });

  it('are collected with the last release that links them', async () => {
    const files = { 'gone/a.html': page('collected a'), 'gone/b.js': page('collected b') };
    const first = await h.deploy(token, 'gc', archive(files));
    await siblingsThere(release('gc', first.body.release), wanted(Object.keys(files)));
    const store = storeOf(h.deploysRoot, 'pc');
    const derivedOf = (body: string) => (['br', 'gz'] as const).map((coding) => join(store, derivedObjectPath(createHash('sha256').update(body).digest(), coding)));
    const first2 = derivedOf(files['gone/a.html']).concat(derivedOf(files['gone/b.js']));
    expect(first2.every((path) => existsSync(path))).toBe(true);
    // In shards of their own: the objects' shards, which every deploy lists, hold objects only.
    for (const shard of (await readdir(store)).filter((name) => /^[0-9a-f]$/.test(name))) {
      expect((await readdir(join(store, shard))).filter((name) => name.length !== 52)).toEqual([]);
    }
    // Two other versions: RELEASES_KEEP=2 prunes the first, and nothing else links its siblings.
    for (const n of [1, 2]) {
      const reply = await h.deploy(token, 'gc', archive({ 'other.html': page(`other ${n}`) }));
      await siblingsThere(release('gc', reply.body.release), wanted(['other.html']));
    }
    await h.trashEmptied();
    await storeCollected(storeOf(h.deploysRoot, 'pc'));
    expect(first2.filter((path) => existsSync(path))).toEqual([]);
    expect(derivedOf(page('other 2')).every((path) => existsSync(path))).toBe(true);
  });

  it('a release pruned while its siblings are made leaves nothing behind', async () => {
    const big = (v: number) => Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`p/${i % 10}/${i}.html`, page(`${v} ${i}`, 2000)]));
    // Three versions in a row with RELEASES_KEEP=2: the first is pruned at once, its siblings under way,
    // queued, or skipped once it is no longer served.
    const replies = [];
    for (const v of [1, 2, 3]) replies.push(await h.deploy(token, 'pruned', archive(big(v))));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200]);
    const live = release('pruned', replies[2]!.body.release);
    await siblingsThere(live, wanted(['p/9/1499.html']));
    await h.trashEmptied();
    await storeCollected(storeOf(h.deploysRoot, 'pc'));
    expect(existsSync(release('pruned', replies[0]!.body.release))).toBe(false);
    // The scratch areas go once the last release's siblings are done.
    await emptied(join(h.deploysRoot, '.staging'));
    await emptied(join(h.deploysRoot, '.fresh'));
    await h.trashEmptied();
    await storeCollected(storeOf(h.deploysRoot, 'pc'));
  });
});

describe('an incremental redeploy after the siblings came (the built CLI through a recording proxy)', () => {
  let h: Harness;
  let proxy: ForwardingProxy;
  let work: string;
  let token: string;

  beforeAll(async () => {
    h = await startHarness({ PRECOMPRESS: 'on' });
    proxy = await startForwardingProxy(h.url);
    token = await h.createUser('inc');
    work = await mkdtemp(join(tmpdir(), 'sitedrop-precompress-cli-'));
  });
  afterAll(async () => {
    await proxy?.close();
    await h?.close();
    await rm(work, { recursive: true, force: true });
  });

  const deploy = async (root: string) => {
    const run = await runNode([CLI, 'deploy', root, '--project', 'docs', '--json'], { env: { SITEDROP_URL: proxy.url, SITEDROP_TOKEN: token, SITEDROP_CACHE_DIR: join(work, 'cache') } });
    expect(run.code, run.stderr).toBe(0);
    return { answer: JSON.parse(run.stdout) as Record<string, unknown>, stderr: run.stderr };
  };

  it('is still relative to the release before: its manifest, walked from the disk, is the uploaded files only', async () => {
    const root = join(work, 'site');
    const files: Record<string, string | Buffer> = { ...SITE, ...Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`docs/${i}.html`, page(`doc ${i}`)])) };
    for (const [path, body] of Object.entries(files)) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await writeFile(join(root, path), body);
    }
    const first = await deploy(root);
    const dir = join(h.deploysRoot, 'inc', 'docs', String(first.answer.release));
    await siblingsThere(dir, wanted(['index.html', 'docs/39.html']));

    await writeFile(join(root, 'docs/3.html'), page('changed'));
    await unlink(join(root, 'small.txt'));
    const mark = proxy.seen.length;
    const second = await deploy(root);
    const opens = proxy.seen.slice(mark).filter((e) => e.method === 'POST' && e.path === '/api/v1/deploys');
    expect(opens).toHaveLength(1);
    const body = JSON.parse(gunzipSync(opens[0]!.body).toString()) as Record<string, unknown>;
    expect(body.base).toMatchObject({ release: first.answer.release });
    expect(second.stderr).not.toContain('sending the whole manifest');
    // The new release holds the folder's files; its siblings come after, the changed page's made anew.
    const next = join(h.deploysRoot, 'inc', 'docs', String(second.answer.release));
    await siblingsThere(next, wanted(['docs/3.html']));
    expect(gunzipSync(await readFile(join(next, 'docs/3.html.gz'))).toString()).toBe(page('changed'));
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    expect(sha(await readFile(join(next, 'index.html.br')))).toBe(sha(UPLOADED_BR));
  });
});

describe('releases made live again, or served when the service starts, get the siblings they lack', () => {
  /** Takes a release's generated siblings away, and the store's derived objects: a release published before siblings were made. */
  async function withoutSiblings(deploysRoot: string, dir: string): Promise<void> {
    for (const path of await filesBelow(dir)) if (/\.(br|gz)$/.test(path)) await unlink(join(dir, path));
    const store = storeOf(deploysRoot, 'old');
    for (const path of await readdir(store, { recursive: true })) if (/\.(br|gz)$/.test(String(path))) await unlink(join(store, String(path)));
  }

  it('a rollback to a release without siblings queues them, and so does a start-up for every served release', async () => {
    const first = await startHarness({ PRECOMPRESS: 'on' });
    let second: Harness | undefined;
    try {
      const token = await first.createUser('old');
      const v1 = await first.deploy(token, 'site', archive({ 'a.html': page('v1') }));
      const v1Dir = join(first.deploysRoot, 'old', 'site', String(v1.body.release));
      await siblingsThere(v1Dir, wanted(['a.html']));
      await withoutSiblings(first.deploysRoot, v1Dir);
      const v2 = await first.deploy(token, 'site', archive({ 'a.html': page('v2') }));
      await siblingsThere(join(first.deploysRoot, 'old', 'site', String(v2.body.release)), wanted(['a.html']));
      expect(existsSync(join(v1Dir, 'a.html.br'))).toBe(false);
      expect((await first.call('POST', '/api/v1/projects/site/rollback', { token, json: { release: v1.body.release } })).status).toBe(200);
      await siblingsThere(v1Dir, wanted(['a.html']));

      // Stopped, its live release's siblings taken away, then started again on the same directories.
      await first.service.stop(1000);
      await withoutSiblings(first.deploysRoot, v1Dir);
      second = await startHarness({ DATA_DIR: first.root, PRECOMPRESS: 'on' });
      await siblingsThere(v1Dir, wanted(['a.html']));
      expect(gunzipSync(await readFile(join(v1Dir, 'a.html.gz'))).toString()).toBe(page('v1'));
    } finally {
      await second?.close();
      await rm(first.root, { recursive: true, force: true });
    }
  });
});
