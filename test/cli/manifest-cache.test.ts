import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManifestCache } from '../../src/adapters/cli/manifest-cache.js';
import type { Digest, ManifestFile } from '../../src/domain/manifest.js';
import { manifestDigest } from '../../src/domain/manifest-digest.js';

const SERVER = 'http://sites.example:8080';
const files: ManifestFile[] = [
  { path: 'a.html', size: 4, digest: 'a'.repeat(64) as Digest },
  { path: 'b.html', size: 5, digest: 'b'.repeat(64) as Digest },
];
const named = (release: string, cached: ManifestFile[]) => ({ release, files: cached, digest: manifestDigest(cached) });

describe("the CLI's manifest cache keeps each file's stamp beside its digest", () => {
  let work: string;
  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'sitedrop-cache-'));
  });
  afterAll(() => rm(work, { recursive: true, force: true }));

  const cacheIn = (name: string, notices: string[] = []) => new ManifestCache(join(work, name), (line) => notices.push(line));
  /** The cached manifest as a deploy reads it: the file opened, then its files parsed and checked. */
  const readBack = (cache: ManifestCache) => cache.open(SERVER, { project: 'p' })?.files();
  const onlyFile = async (name: string) => join(work, name, (await readdir(join(work, name)))[0]!);

  it('gives back the stamps it was given, a file that could not be trusted as null', async () => {
    const cache = cacheIn('round-trip');
    const stamps = ['64769:1234:4:1700000000000000000:1700000000000000001', null];
    await cache.write(SERVER, { project: 'p' }, { release: '20261124T120000', files, stamps });
    expect(readBack(cache)).toEqual({ ...named('20261124T120000', files), stamps });
  });

  /** The two lines of a cache file as format 2 writes them: the head, then the files. */
  const linesOf = async (path: string) => {
    const [head, body, ...rest] = (await readFile(path, 'utf8')).split('\n');
    expect(rest).toEqual([]);
    return { head: JSON.parse(head!) as Record<string, unknown>, body: JSON.parse(body!) as Record<string, unknown> };
  };
  /** A cache file as an earlier version wrote it: one line, no digest. */
  const earlierFormat = async (path: string) => {
    const { head, body } = await linesOf(path);
    delete head.digest;
    return JSON.stringify({ ...head, format: 1, ...body });
  };

  it('names its base on the first line, the release and the digest of its files, and checks the files against it only when asked', async () => {
    const notices: string[] = [];
    const cache = cacheIn('head', notices);
    await cache.write(SERVER, { project: 'p' }, { release: '20261124T120000', files, stamps: [null, null] });
    const path = await onlyFile('head');
    const { head, body } = await linesOf(path);
    expect(head).toEqual({ format: 2, server: `${SERVER}/`, project: 'p', release: '20261124T120000', digest: manifestDigest(files) });
    expect(body).toEqual({ files, stamps: [null, null] });
    // The second line broken: the first still names the base (the deploy opens on it at once)...
    await writeFile(path, `${JSON.stringify(head)}\n{"files":`);
    const broken = cache.open(SERVER, { project: 'p' });
    expect(broken?.base).toEqual({ release: '20261124T120000', digest: manifestDigest(files) });
    expect(notices).toEqual([]);
    // ...and the files, once parsed, are refused.
    expect(broken?.files()).toBeUndefined();
    expect(notices).toEqual([expect.stringMatching(/^ignoring the cached manifest .+ \(.*JSON.*\): sending the whole manifest$/)]);
    // Files other than the ones the digest names: refused, however well formed.
    await writeFile(path, `${JSON.stringify(head)}\n${JSON.stringify({ files: files.slice(0, 1), stamps: [null] })}`);
    expect(cache.open(SERVER, { project: 'p' })?.files()).toBeUndefined();
    expect(notices[1]).toMatch(/^ignoring the cached manifest .+ \(files that do not match its digest\): sending the whole manifest$/);
    for (const bad of [{ digest: 'f'.repeat(63) }, { format: 3 }, { project: 'q' }, { release: 'yesterday' }]) {
      await writeFile(path, `${JSON.stringify({ ...head, ...bad })}\n${JSON.stringify(body)}`);
      expect(cache.open(SERVER, { project: 'p' })).toBeUndefined();
    }
    // Format 2 on one line: not a head, whatever it says.
    await writeFile(path, JSON.stringify({ ...head, ...body }));
    expect(cache.open(SERVER, { project: 'p' })).toBeUndefined();
    expect(notices.slice(2).map((line) => /\((.+)\)/.exec(line)?.[1])).toEqual(['no digest', 'not a format this sitedrop reads', 'for another server or project', 'no release id', 'not a format this sitedrop reads']);
  });

  it('reads a cache written before stamps (every file is read again), and ignores one whose stamps do not match its files', async () => {
    const notices: string[] = [];
    const cache = cacheIn('older', notices);
    await cache.write(SERVER, { project: 'p' }, { release: '20261124T120000', files });
    expect(readBack(cache)).toEqual(named('20261124T120000', files));
    const path = await onlyFile('older');
    const { head, body } = await linesOf(path);
    for (const stamps of [['1:2:3:4:5'], ['1:2:3:4:5', 'not a stamp'], 'none']) {
      await writeFile(path, `${JSON.stringify(head)}\n${JSON.stringify({ ...body, stamps })}`);
      expect(readBack(cache)).toBeUndefined();
    }
    expect(notices).toHaveLength(3);
    expect(notices[0]).toMatch(/^ignoring the cached manifest .+ \(stamps that do not match its files\): sending the whole manifest$/);
  });

  it('reads the one line an earlier version wrote, working out the digest it did not keep', async () => {
    const cache = cacheIn('format-1');
    const stamps = ['1:2:3:4:5', null];
    await cache.write(SERVER, { project: 'p' }, { release: '20261124T110000', files, stamps });
    const path = await onlyFile('format-1');
    const earlier = await earlierFormat(path);
    await writeFile(path, earlier);
    expect(cache.open(SERVER, { project: 'p' })?.base).toEqual({ release: '20261124T110000', digest: manifestDigest(files) });
    expect(readBack(cache)).toEqual({ ...named('20261124T110000', files), stamps });
    // Reflowed by another tool, or ended with a line break: JSON all the same.
    for (const text of [`${earlier}\n`, JSON.stringify(JSON.parse(earlier), null, 2)]) {
      await writeFile(path, text);
      expect(readBack(cache)).toEqual({ ...named('20261124T110000', files), stamps });
    }
  });

  it('checks the files once, however often a deploy asks, and says so once', async () => {
    const notices: string[] = [];
    const cache = cacheIn('once', notices);
    await cache.write(SERVER, { project: 'p' }, { release: '20261124T120000', files });
    const entry = cache.open(SERVER, { project: 'p' })!;
    expect(entry.files()).toBe(entry.files());
    const path = await onlyFile('once');
    const { head } = await linesOf(path);
    await writeFile(path, `${JSON.stringify(head)}\n[]`);
    const broken = cache.open(SERVER, { project: 'p' })!;
    expect([broken.files(), broken.files()]).toEqual([undefined, undefined]);
    expect(notices).toHaveLength(1);
  });

  it("reads the gzip file an earlier version kept when it has none of its own, and removes it once it writes its own", async () => {
    const cache = cacheIn('earlier');
    const stamps = ['1:2:3:4:5', null];
    await cache.write(SERVER, { project: 'p' }, { release: '20261124T110000', files, stamps });
    const path = await onlyFile('earlier');
    expect(path).toMatch(/\/[0-9a-f]{32}\.json$/);
    // As an earlier version left it: its one line, gzip-compressed, under that name plus .gz.
    const json = await earlierFormat(path);
    await rm(path);
    await writeFile(`${path}.gz`, 'not gzip');
    expect(readBack(cache)).toBeUndefined();
    await writeFile(`${path}.gz`, gzipSync(json));
    expect(readBack(cache)).toEqual({ ...named('20261124T110000', files), stamps });
    await cache.write(SERVER, { project: 'p' }, { release: '20261124T120000', files });
    expect(await readdir(join(work, 'earlier'))).toEqual([basename(path)]);
    expect(readBack(cache)).toEqual(named('20261124T120000', files));
  });

  it('begun while the server publishes, holds nothing until finished with the release; abandoned, writes nothing and keeps the last', async () => {
    const cache = cacheIn('pending');
    await cache.write(SERVER, { project: 'p' }, { release: '20261124T110000', files: files.slice(0, 1) });
    const stamps = ['1:2:3:4:5', null];
    const abandoned = cache.begin(SERVER, { project: 'p' }, { files, stamps });
    abandoned.abandon();
    const pending = cache.begin(SERVER, { project: 'p' }, { files, stamps });
    expect(readBack(cache)).toEqual(named('20261124T110000', files.slice(0, 1)));
    await abandoned.finish('20261124T130000');
    expect(readBack(cache)).toEqual(named('20261124T110000', files.slice(0, 1)));
    await pending.finish('20261124T120000');
    expect(readBack(cache)).toEqual({ ...named('20261124T120000', files), stamps });
    expect(await readdir(join(work, 'pending'))).toHaveLength(1);
  });

  it('a cache that cannot be written is a notice, never a failed deploy', async () => {
    const notices: string[] = [];
    await writeFile(join(work, 'a-file'), 'not a directory');
    const cache = new ManifestCache(join(work, 'a-file', 'cache'), (line) => notices.push(line));
    await cache.begin(SERVER, { project: 'p' }, { files }).finish('20261124T120000');
    expect(notices).toEqual([expect.stringMatching(/^cannot cache the published manifest in .+a-file\/cache \(.+\): the next deploy sends the whole manifest$/)]);
  });
});
