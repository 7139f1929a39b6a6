import { createHash, randomBytes } from 'node:crypto';
import { linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { syncFilesystem } from '../../src/adapters/fs/layout/durability.js';
import { objectPath } from '../../src/adapters/fs/store/object-names.js';
import { ReleaseManifestWalk } from '../../src/adapters/fs/write/release-manifest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { ObjectCollection } from '../../src/adapters/fs/write/store-objects.js';
import { treeBytes } from '../../src/adapters/fs/layout/tree-bytes.js';
import { ReleaseSiblings } from '../../src/adapters/precompress/release-siblings.js';
import { SIBLING_SETTINGS, type SiblingSettings } from '../../src/adapters/precompress/sibling-settings.js';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();
/** Pages that compress well, each different. */
const page = (n: number, bytes = 2000) => Buffer.from(`<!doctype html><p>page ${n}</p>${'<p>static sites, atomic releases </p>'.repeat(bytes / 36)}`);

let root: string;
let store: string;
let scratch: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'sitedrop-siblings-'));
  store = join(root, 'user', '.objects');
  scratch = join(root, 'scratch');
  mkdirSync(scratch);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A release as deploys make one: each file a hard link to its object in the store (mode 0644). */
function release(id: string, files: Record<string, Buffer>): string {
  const dir = join(root, 'user', 'site', id);
  for (const [path, bytes] of Object.entries(files)) {
    const object = join(store, objectPath(sha256(bytes)));
    mkdirSync(dirname(object), { recursive: true });
    try {
      writeFileSync(object, bytes, { mode: 0o644, flag: 'wx' });
    } catch {
      // Stored already: linked again, as a deploy does.
    }
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    linkSync(object, join(dir, path));
  }
  return dir;
}

const run = (dir: string, settings: Partial<SiblingSettings> = {}, sync = syncFilesystem) => new ReleaseSiblings(dir, store, scratch, { ...SIBLING_SETTINGS, ...settings }, sync).run();

function manifestOf(dir: string) {
  const walk = new ReleaseManifestWalk(dir, store);
  while (!walk.step(1000));
  const manifest = walk.result();
  return manifest === 'gone' ? undefined : PackedManifest.from(manifest).manifestFiles().map((f) => f.path).sort();
}

const filesBelow = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)).sort();

describe('ReleaseSiblings: compressed siblings beside a release\'s text files (real directories)', () => {
  it('makes .br and .gz for text types only, each the file\'s bytes once decompressed, and none for a tiny file or one they would not shrink', async () => {
    const noise = Buffer.from(randomBytes(3000).toString('latin1'), 'latin1');
    const dir = release('r1', {
      'index.html': page(1),
      'A/STYLE.CSS': page(2),
      'js/app.mjs': page(3),
      'data.json': page(4),
      'logo.svg': page(5),
      'img/photo.jpg': page(6),
      'font.woff2': page(7),
      'tiny.html': Buffer.from('<p>hi</p>'),
      'noise.txt': noise,
    });
    const tally = await run(dir);
    const made = ['index.html', 'A/STYLE.CSS', 'js/app.mjs', 'data.json', 'logo.svg'];
    for (const path of made) {
      const original = readFileSync(join(dir, path));
      expect(brotliDecompressSync(readFileSync(join(dir, `${path}.br`))).equals(original), path).toBe(true);
      expect(gunzipSync(readFileSync(join(dir, `${path}.gz`))).equals(original), path).toBe(true);
      expect(lstatSync(join(dir, `${path}.br`)).size).toBeLessThan(original.length);
    }
    expect(filesBelow(dir).filter((p) => p.endsWith('.br') || p.endsWith('.gz')).sort()).toEqual(made.flatMap((p) => [`${p}.br`, `${p}.gz`]).sort());
    expect(tally).toMatchObject({ made: 10, linked: 0, notSmaller: 2, gone: false });
    expect(readdirSync(scratch)).toEqual([]);
  });

  it('keeps an uploaded sibling as uploaded, and leaves generated siblings (not uploaded ones) out of the manifest and the counted bytes', async () => {
    const uploaded = Buffer.from('not really brotli, but the site said so');
    const dir = release('r1', { 'index.html': page(1), 'index.html.br': uploaded, 'app.js': page(2) });
    const before = lstatSync(join(dir, 'index.html.br'));
    const bytesBefore = await treeBytes(dir);
    await run(dir);
    const after = lstatSync(join(dir, 'index.html.br'));
    expect([after.ino, readFileSync(join(dir, 'index.html.br')).equals(uploaded)]).toEqual([before.ino, true]);
    expect(gunzipSync(readFileSync(join(dir, 'index.html.gz'))).equals(page(1))).toBe(true);
    expect(filesBelow(dir)).toEqual(['app.js', 'app.js.br', 'app.js.gz', 'index.html', 'index.html.br', 'index.html.gz']);
    expect(manifestOf(dir)).toEqual(['app.js', 'index.html', 'index.html.br']);
    expect(await treeBytes(dir)).toBe(bytesBefore);
    // What sitedrop adds under .sitedrop/ is never the site's either.
    mkdirSync(join(dir, '.sitedrop'));
    writeFileSync(join(dir, '.sitedrop', 'rules.json'), '{}');
    expect(manifestOf(dir)).toEqual(['app.js', 'index.html', 'index.html.br']);
  });

  it('compresses each stored object once: another release with the same bytes links the same siblings', async () => {
    const files = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`p/${i}.html`, page(i)]));
    const first = release('r1', files);
    const second = release('r2', { ...files, 'new.html': page(99) });
    expect(await run(first)).toMatchObject({ made: 60, linked: 0 });
    // Only the new page's bytes are compressed, once for each coding.
    expect(await run(second)).toMatchObject({ made: 2, linked: 60, bytesIn: 2 * page(99).length });
    for (const path of Object.keys(files)) expect(lstatSync(join(second, `${path}.br`)).ino).toBe(lstatSync(join(first, `${path}.br`)).ino);
    // Run again, nothing is missing: nothing is read or made.
    expect(await run(second)).toMatchObject({ made: 0, linked: 0 });
  });

  it('a release that goes while its siblings are made leaves nothing: no scratch file, no derived object without a release', async () => {
    const files = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`p/${i}.html`, page(i)]));
    const dir = release('r1', files);
    const trash = join(root, 'trash');
    let batches = 0;
    // Pruned as the third batch is flushed, its files compressed and not yet linked: one rename away, as retention does.
    const tally = await run(dir, { batchFiles: 10 }, async (path) => {
      if (++batches === 3) renameSync(dir, trash);
      await syncFilesystem(path);
    });
    expect(tally.gone).toBe(true);
    expect(tally.made).toBe(20);
    expect(readdirSync(scratch)).toEqual([]);
    // Every derived object in the store is linked by the (moved) release; removing it leaves them all collectable.
    const derived = readdirSync(store, { recursive: true }).filter((p) => String(p).endsWith('.br') || String(p).endsWith('.gz'));
    expect(derived.length).toBe(tally.made);
    for (const path of derived) expect(lstatSync(join(store, String(path))).nlink).toBe(2);
    rmSync(trash, { recursive: true });
    const collection = new ObjectCollection(store);
    while (!collection.step(1000));
    expect(readdirSync(store, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())).toEqual([]);
  });

  it('a release gone before its run starts is reported gone, with nothing made', async () => {
    expect(await run(join(root, 'user', 'site', 'never'))).toMatchObject({ gone: true, made: 0 });
  });
});
