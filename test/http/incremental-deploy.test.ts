import { readdir, readFile, readlink, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { digestOfEntry, legacyObjectPath, objectPath } from '../../src/adapters/fs/store/object-names.js';
import { ADMIN_TOKEN, startHarness, type Harness, type Reply } from '../support/service-harness.js';
import { dir, file, tgz, type RawEntry } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';
import { sha256 } from '../support/sha256.js';
import { until } from '../support/until.js';


type Site = Record<string, Buffer>;

/** A site of `pages` pages, a few of them large (streamed, not sent whole), version `v` of the ones `changed` picks. */
function site(v: string, pages: number, changed: (i: number) => boolean = () => false): Site {
  const out: Site = { 'index.html': Buffer.from(`<h1>${v}</h1>\n`), 'empty.txt': Buffer.alloc(0), 'same-a.css': Buffer.from('body{}\n'), 'same-b.css': Buffer.from('body{}\n') };
  for (let i = 0; i < pages; i += 1) {
    const body = i % 25 === 4 ? Buffer.alloc(200_000 + i, i % 251) : Buffer.from(`page ${i} ${'y'.repeat(500 + i)}\n`);
    out[`docs/part-${i % 4}/page-${i}.html`] = changed(i) ? Buffer.concat([body, Buffer.from(v)]) : body;
  }
  return out;
}

/**
 * A site as path to SHA-256: what the byte-for-byte checks compare. toEqual on the
 * Buffers themselves walks them byte by byte, seconds of blocked event loop for a few
 * hundred KB, long enough for the service to close the idle keep-alive connection the
 * next request is then sent on (ECONNRESET).
 */
const digestsOf = (s: Site): Record<string, string> => Object.fromEntries(Object.entries(s).map(([path, bytes]) => [path, sha256(bytes)]));

const manifest = (s: Site) => Object.entries(s).map(([path, bytes]) => ({ path, size: bytes.length, digest: sha256(bytes) }));

/** A batch of objects as the protocol takes them: a .tar.gz of files named by digest. */
function objects(s: Site, digests: readonly string[]): Buffer {
  const byDigest = new Map<string, Buffer>(Object.values(s).map((bytes) => [sha256(bytes), bytes]));
  return tgz(digests.map((d) => file(d, byDigest.get(d) ?? Buffer.from(`unknown ${d}`))));
}

async function releaseFiles(root: string): Promise<Site> {
  const out: Site = {};
  async function walk(sub: string): Promise<void> {
    for (const entry of await readdir(join(root, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(rel);
      else out[rel] = await readFile(join(root, rel));
    }
  }
  await walk('');
  return out;
}

describe('incremental deploys (real server, real directories, real SQLite)', () => {
  let h: Harness;
  let token: string;

  const open = (body: unknown, as = token, headers: Record<string, string> = {}) => h.call('POST', '/api/v1/deploys', { token: as, json: body, headers });
  const upload = (id: string, batch: Buffer, as = token) =>
    h.call('PUT', `/api/v1/deploys/${id}/objects`, { token: as, body: batch, headers: { 'content-type': 'application/gzip' } });
  const publish = (id: string, as = token) => h.call('POST', `/api/v1/deploys/${id}/publish`, { token: as });
  const live = (user: string, project: string) => readlink(join(h.docsRoot, user, project)).catch(() => undefined);
  const release = (user: string, project: string, id: string) => join(h.deploysRoot, user, project, id);

  /** The whole protocol, as a client would run it; returns the publish's answer and what was sent. */
  async function deploy(project: string, s: Site, as = token, extra: Record<string, unknown> = {}): Promise<{ reply: Reply; sent: string[] }> {
    const opened = await open({ project, files: manifest(s), ...extra }, as);
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const missing = opened.body.missing as string[];
    if (missing.length > 0) {
      const uploaded = await upload(opened.body.id as string, objects(s, missing), as);
      expect(uploaded.status, JSON.stringify(uploaded.body)).toBe(200);
      expect((await h.call('GET', `/api/v1/deploys/${String(opened.body.id)}`, { token: as })).body.missing).toEqual([]);
    }
    return { reply: await publish(opened.body.id as string, as), sent: missing };
  }

  beforeAll(async () => {
    h = await startHarness({ RELEASES_KEEP: '5', MAX_FILES: '300', MAX_EXTRACTED_BYTES: String(20 * 1024 * 1024), DEPLOY_SESSIONS_MAX: '3' });
    token = await h.createUser('inc');
  });
  afterAll(async () => {
    await h.close();
  });

  it('a first deploy asks for every distinct content once, and publishes the site byte for byte', async () => {
    const s = site('v1', 60);
    const opened = await open({ project: 'docs', files: manifest(s) });
    expect(opened.status).toBe(201);
    const distinct = new Set(Object.values(s).filter((b) => b.length > 0).map(sha256));
    expect(new Set(opened.body.missing as string[])).toEqual(distinct);
    expect((opened.body.missing as string[]).length).toBe(distinct.size); // same-a and same-b asked once
    expect(opened.body).toMatchObject({ status: 'ok', project: 'docs', files: Object.keys(s).length });
    expect(opened.body.id).toMatch(/^[0-9a-f]{32}$/);
    expect(Date.parse(opened.body.expiresAt as string)).toBeGreaterThan(Date.now());

    const uploaded = await upload(opened.body.id as string, objects(s, opened.body.missing as string[]));
    expect(uploaded.status).toBe(200);
    expect(uploaded.body).toMatchObject({ status: 'ok', id: opened.body.id, stored: distinct.size });
    expect((await h.call('GET', `/api/v1/deploys/${String(opened.body.id)}`, { token })).body).toMatchObject({ missing: [], missingBytes: 0 });

    const published = await publish(opened.body.id as string);
    expect(published.status).toBe(200);
    expect(published.body).toEqual({
      status: 'ok',
      project: 'docs',
      username: 'inc',
      url: 'https://sites.example.test/inc/docs/',
      release: expect.stringMatching(/^\d{8}T\d{6}Z?/),
    });
    const id = published.body.release as string;
    expect(await live('inc', 'docs')).toBe(`${release('inc', 'docs', id)}/`);
    expect(digestsOf(await releaseFiles(release('inc', 'docs', id)))).toEqual(digestsOf(s));
    const tree = await snapshot(release('inc', 'docs', id));
    for (const [path, what] of Object.entries(tree)) expect(what, path).toMatch(/^(file 644|dir 755)/);
    // The session is over, and what it uploaded went into the store.
    expect((await h.call('GET', `/api/v1/deploys/${String(opened.body.id)}`, { token })).status).toBe(404);
    expect(await readdir(join(h.deploysRoot, '.sessions'))).toEqual([]);
  });

  it('a redeploy asks only for what changed; unchanged files share the bytes of the release before, which stays as it was', async () => {
    const before = (await readdir(join(h.deploysRoot, 'inc', 'docs'))).sort();
    const previous = release('inc', 'docs', before.at(-1)!);
    const old = await releaseFiles(previous);
    const s = site('v2', 60, (i) => i % 20 === 3);
    const { reply, sent } = await deploy('docs', s);
    expect(reply.status).toBe(200);
    const changed = new Set(Object.entries(s).filter(([path, bytes]) => !old[path]?.equals(bytes)).map(([, bytes]) => sha256(bytes)));
    expect(new Set(sent)).toEqual(changed);
    expect(sent.length).toBe(4); // index.html and pages 3, 23, 43
    const current = release('inc', 'docs', reply.body.release as string);
    expect(digestsOf(await releaseFiles(current))).toEqual(digestsOf(s));
    expect(digestsOf(await releaseFiles(previous))).toEqual(digestsOf(old));
    for (const path of Object.keys(s)) {
      if (s[path]!.length === 0) continue;
      const [a, b] = await Promise.all([stat(join(previous, path)), stat(join(current, path))]);
      expect(a.ino === b.ino, path).toBe(old[path]!.equals(s[path]!));
    }
  });

  it('a deploy that sends nothing new publishes from the store alone', async () => {
    const s = site('v2', 60, (i) => i % 20 === 3);
    const { reply, sent } = await deploy('docs', s);
    expect(sent).toEqual([]);
    expect(reply.status).toBe(200);
    expect(digestsOf(await releaseFiles(release('inc', 'docs', reply.body.release as string)))).toEqual(digestsOf(s));
  });

  it('bytes a tarball deploy stored are never asked for again, and the other way round', async () => {
    const s = site('tar', 30);
    const entries: RawEntry[] = Object.entries(s).map(([path, bytes]) => file(path, bytes));
    expect((await h.deploy(token, 'blog', tgz(entries))).status).toBe(200);
    const opened = await open({ project: 'blog', files: manifest({ ...s, 'new.html': Buffer.from('new\n') }) });
    expect(opened.body.missing).toEqual([sha256(Buffer.from('new\n'))]);
    await h.call('DELETE', `/api/v1/deploys/${String(opened.body.id)}`, { token });
  });

  it('an interrupted deploy resumes: asked again, the session names what is still missing', async () => {
    const s = site('resume', 40, () => true);
    const opened = await open({ project: 'resume', files: manifest(s) });
    const id = opened.body.id as string;
    const missing = opened.body.missing as string[];
    const half = missing.slice(0, Math.floor(missing.length / 2));
    const first = await upload(id, objects(s, half));
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const asked = await h.call('GET', `/api/v1/deploys/${id}`, { token });
    expect(asked.status).toBe(200);
    expect(new Set(asked.body.missing as string[])).toEqual(new Set(missing.slice(half.length)));
    // Publishing early is refused with what is missing, and the session stays open.
    const early = await publish(id);
    expect(early.status).toBe(409);
    expect(early.body.error).toBe('objects missing');
    expect(new Set(early.body.missing as string[])).toEqual(new Set(missing.slice(half.length)));
    expect(await live('inc', 'resume')).toBeUndefined();
    expect(await readdir(join(h.deploysRoot, 'inc', 'resume')).catch(() => [])).toEqual([]);
    expect((await upload(id, objects(s, missing.slice(half.length)))).status).toBe(200);
    const done = await publish(id);
    expect(done.status).toBe(200);
    expect(digestsOf(await releaseFiles(release('inc', 'resume', done.body.release as string)))).toEqual(digestsOf(s));
  });

  it('an upload cut short or damaged before the publish (a machine that lost power, and started again) is asked for again, never published', async () => {
    // A large file too, read in pieces, changed past its first.
    const s = { ...site('damaged', 6, () => true), 'video.bin': Buffer.alloc(2_500_000, 9) };
    const opened = await open({ project: 'damaged', files: manifest(s) });
    const id = opened.body.id as string;
    const missing = opened.body.missing as string[];
    expect((await upload(id, objects(s, missing))).status).toBe(200);
    // The uploads were made in this boot of the machine; the power loss started another.
    const mark = join(h.deploysRoot, '.sessions', id, '.boot');
    expect(await readFile(mark, 'utf8')).toBe((await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim());
    await writeFile(mark, '00000000-0000-4000-8000-000000000000');
    const video = sha256(s['video.bin']);
    const [short, changed] = missing.filter((digest) => digest !== video);
    const uploaded = (digest: string) => join(h.deploysRoot, '.sessions', id, objectPath(digest));
    await writeFile(uploaded(short!), '');
    for (const [digest, at] of [[changed!, 0], [video, 2_400_000]] as const) {
      const bytes = await readFile(uploaded(digest));
      bytes[at] = bytes[at]! ^ 1;
      await writeFile(uploaded(digest), bytes);
    }
    // Asked again: the short one is missing (its size says so); the changed ones only their bytes tell.
    expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).body.missing).toEqual([short]);
    // The publish first holds the sizes of what the open found missing against the manifest's, then reads what it links.
    const refused = await publish(id);
    expect(refused.status).toBe(409);
    expect(refused.body.missing).toEqual([short]);
    expect((await upload(id, objects(s, [short!]))).status).toBe(200);
    const again = await publish(id);
    expect(again.status).toBe(409);
    expect(new Set(again.body.missing as string[])).toEqual(new Set([changed, video]));
    expect(await live('inc', 'damaged')).toBeUndefined();
    expect((await upload(id, objects(s, [changed!, video]))).status).toBe(200);
    const done = await publish(id);
    expect(done.status).toBe(200);
    expect(digestsOf(await releaseFiles(release('inc', 'damaged', done.body.release as string)))).toEqual(digestsOf(s));
  });

  it('an upload is written once: the release links the file received, which then joins the store; in the same boot nothing reads it again', async () => {
    const s = site('once', 6, () => true);
    const opened = await open({ project: 'once', files: manifest(s) });
    const id = opened.body.id as string;
    const missing = opened.body.missing as string[];
    expect((await upload(id, objects(s, missing))).status).toBe(200);
    const uploaded = (digest: string) => join(h.deploysRoot, '.sessions', id, objectPath(digest));
    const inodes = new Map(await Promise.all(missing.map(async (digest) => [digest, (await stat(uploaded(digest))).ino] as const)));
    // Changed in place behind the service's back, in this boot: a publish that read it again would refuse it.
    const changed = sha256(s['index.html']!);
    await writeFile(uploaded(changed), Buffer.from('<h1>XXXX</h1>\n'));
    const done = await publish(id);
    expect(done.status).toBe(200);
    const dir = release('inc', 'once', done.body.release as string);
    const served = await releaseFiles(dir);
    expect(served['index.html']!.toString()).toBe('<h1>XXXX</h1>\n');
    // Every file whose bytes were uploaded (the store had the others from earlier tests).
    const fromUploads = Object.entries(s).filter(([, bytes]) => inodes.has(sha256(bytes)));
    expect(fromUploads.length).toBeGreaterThan(6);
    for (const [path, bytes] of fromUploads) expect((await stat(join(dir, path))).ino, path).toBe(inodes.get(sha256(bytes)));
    // After the answer, the uploads join the store, the same inodes; the session keeps none.
    await h.settled();
    for (const [digest, ino] of inodes) expect((await stat(join(h.deploysRoot, 'inc', '.objects', objectPath(digest)))).ino).toBe(ino);
    await expect(stat(join(h.deploysRoot, '.sessions', id))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('two publishes of one session publish once', async () => {
    const s = site('twice', 10);
    const opened = await open({ project: 'twice', files: manifest(s) });
    await upload(opened.body.id as string, objects(s, opened.body.missing as string[]));
    const both = await Promise.all([publish(opened.body.id as string), publish(opened.body.id as string)]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 404]);
    expect(await readdir(join(h.deploysRoot, 'inc', 'twice'))).toHaveLength(1);
  });

  it('a preview through a session moves the preview link, never the live one', async () => {
    const liveBefore = await live('inc', 'docs');
    const s = site('preview', 10);
    const { reply } = await deploy('docs', s, token, { preview: 'pr-7' });
    expect(reply.status).toBe(200);
    expect(reply.body.preview).toBe('pr-7');
    expect(await live('inc', 'docs')).toBe(liveBefore);
    expect(await readlink(join(h.previewsRoot, 'inc', 'docs', 'pr-7'))).toBe(`${release('inc', 'docs', reply.body.release as string)}/`);
  });

  describe('a manifest that breaks a rule is refused whole, with nothing changed', () => {
    const good = () => manifest(site('m', 5));
    const cases: [string, () => unknown, RegExp][] = [
      ['a path with ..', () => [...good(), { path: 'a/../../etc/passwd', size: 1, digest: 'a'.repeat(64) }], /^invalid manifest: path contains '\.\.' component which is not allowed: a\/\.\.\/\.\.\/etc\/passwd$/],
      ['an absolute path', () => [{ path: '/etc/passwd', size: 1, digest: 'a'.repeat(64) }], /^invalid manifest: absolute path not allowed/],
      ['a duplicate path', () => [...good(), good()[0]], /^invalid manifest: duplicate path: /],
      ['a file where a directory is', () => [{ path: 'a', size: 1, digest: 'a'.repeat(64) }, { path: 'a/b', size: 1, digest: 'b'.repeat(64) }], /^invalid manifest: a file and a directory share the path: a$/],
      ['a malformed digest', () => [{ path: 'a', size: 1, digest: 'A'.repeat(64) }], /^invalid manifest: digest must be 64 lowercase hex digits \(SHA-256\): a$/],
      ['a negative size', () => [{ path: 'a', size: -1, digest: 'a'.repeat(64) }], /^invalid manifest: size must be a whole number of bytes: a$/],
      ['a fractional size', () => [{ path: 'a', size: 1.5, digest: 'a'.repeat(64) }], /^invalid manifest: size must be a whole number of bytes: a$/],
      ['an empty file with a digest of bytes', () => [{ path: 'a', size: 0, digest: 'a'.repeat(64) }], /^invalid manifest: an empty file's digest must be e3b0/],
      ["a file of bytes with the empty file's digest", () => [{ path: 'a', size: 1, digest: sha256('') }], /^invalid manifest: a file of bytes cannot have the empty file's digest: a$/],
      ['one digest with two sizes', () => [{ path: 'a', size: 1, digest: 'a'.repeat(64) }, { path: 'b', size: 2, digest: 'a'.repeat(64) }], /^invalid manifest: digest listed with two sizes: b$/],
      ['more files than MAX_FILES', () => Array.from({ length: 301 }, (_, i) => ({ path: `f${i}`, size: 1, digest: 'a'.repeat(64) })), /^invalid manifest: more than 300 files and directories$/],
      ['files and the directories they imply over MAX_FILES', () => Array.from({ length: 101 }, (_, i) => ({ path: `d${i}/e/f`, size: 1, digest: 'a'.repeat(64) })), /^invalid manifest: site has more than 300 files and directories$/],
      ['more bytes than MAX_EXTRACTED_BYTES', () => [{ path: 'a', size: 20 * 1024 * 1024 + 1, digest: 'a'.repeat(64) }], /^invalid manifest: site unpacks to more than 20971520 bytes$/],
      ['a control character in a path', () => [{ path: 'a\nb', size: 1, digest: 'a'.repeat(64) }], /^invalid manifest: path contains a control character: a\\u000ab$/],
      ['half a surrogate pair in a path (no UTF-8 holds it)', () => [{ path: 'a\ud800.html', size: 1, digest: 'a'.repeat(64) }], /^invalid manifest: path is not valid UTF-8: a/],
      ['no files', () => [], /^invalid manifest: site contains no files$/],
      ['files not a list', () => ({ 'index.html': 'x' }), /^invalid manifest: files must be an array/],
      ['an entry not an object', () => ['index.html'], /^invalid manifest: files\[0\] is not an object$/],
      ['the root as a file', () => [{ path: './', size: 1, digest: 'a'.repeat(64) }], /^invalid manifest: a file cannot be the site root/],
    ];
    it.each(cases)('%s', async (_name, files, message) => {
      await h.settled();
      const before = await snapshot(h.root);
      const reply = await open({ project: 'abuse', files: files() });
      expect(reply.status).toBe(400);
      expect(reply.body.error).toMatch(message);
      expect(await snapshot(h.root)).toEqual(before);
    });

    it('a size that lies about bytes the user has stored', async () => {
      const stored = Buffer.from('body{}\n');
      await h.settled();
      const before = await snapshot(h.root);
      const reply = await open({ project: 'abuse', files: [{ path: 'a.css', size: stored.length + 100, digest: sha256(stored) }] });
      expect(reply.status).toBe(400);
      expect(reply.body.error).toBe(`invalid manifest: size does not match the object's: ${sha256(stored)} is not ${stored.length + 100} bytes`);
      expect(await snapshot(h.root)).toEqual(before);
    });

    it('a bad project or preview name, and a body that is not JSON', async () => {
      expect((await open({ project: '../x', files: good() })).body.error).toBe('invalid project name format');
      expect((await open({ project: 'ok', preview: 'Bad Name', files: good() })).body.error).toBe('invalid preview name format');
      const raw = await h.call('POST', '/api/v1/deploys', { token, body: '{not json', headers: { 'content-type': 'application/json' } });
      expect(raw.status).toBe(400);
      expect(raw.body.error).toBe('invalid request body');
    });

    it('a gzip-compressed manifest is read; one that inflates past its limit is refused', async () => {
      const s = site('gz', 3);
      const opened = await h.call('POST', '/api/v1/deploys', {
        token,
        body: gzipSync(JSON.stringify({ project: 'gz', files: manifest(s) })),
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      });
      expect(opened.status).toBe(201);
      await h.call('DELETE', `/api/v1/deploys/${String(opened.body.id)}`, { token });
      // 300 files allow 360 KB of manifest: 10 MB of spaces inflate from a few KB.
      const bomb = gzipSync(Buffer.concat([Buffer.from('{"project":"gz","files":[]'), Buffer.alloc(10 * 1024 * 1024, 0x20), Buffer.from('}')]));
      expect(bomb.length).toBeLessThan(20_000);
      const refused = await h.call('POST', '/api/v1/deploys', { token, body: bomb, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
      expect(refused.status).toBe(413);
    });
  });

  describe('a batch of objects that is not what the session asked for is refused whole', () => {
    let id: string;
    let s: Site;
    let missing: string[];
    beforeAll(async () => {
      s = { 'index.html': Buffer.from('objects test\n'), 'big.bin': Buffer.alloc(300_000, 7), 'a.txt': Buffer.from('a\n'), 'held.txt': Buffer.from('held by the store\n') };
      // One of its files the store holds already: not missing, so not the session's to upload.
      expect((await h.deploy(token, 'objects-held', tgz([file('held.txt', s['held.txt']!)]))).status).toBe(200);
      const opened = await open({ project: 'objects', files: manifest(s) });
      id = opened.body.id as string;
      missing = opened.body.missing as string[];
    });

    const files = async () => ({ deploys: await snapshot(h.deploysRoot), docs: await snapshot(h.docsRoot) });
    /** As the listing shows it: listing keeps no session alive. */
    const expiry = async () => ((await h.call('GET', '/api/v1/deploys', { token })).body.sessions as { id: string; expiresAt: string }[]).find((s) => s.id === id)?.expiresAt;
    const refuses = async (batch: Buffer, message: RegExp): Promise<void> => {
      await h.settled();
      const before = await files();
      const expiresAt = await expiry();
      const reply = await upload(id, batch);
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(reply.body.error).toMatch(message);
      // Kept alive as it began, so that a long batch never expires under it; refused, put back.
      expect(await expiry()).toBe(expiresAt);
      // Nothing of it kept: the session still lacks every object, and the disk is as it was.
      expect(((await h.call('GET', `/api/v1/deploys/${id}`, { token })).body.missing as string[]).sort()).toEqual([...missing].sort());
      await h.trashEmptied();
      expect(await files()).toEqual(before);
    };

    it('bytes that do not hash to the name (small, and large enough to stream)', async () => {
      const [small, big] = [sha256(s['a.txt']!), sha256(s['big.bin']!)];
      await refuses(tgz([file(sha256(s['index.html']!), s['index.html']!), file(small, Buffer.from('b\n'))]), new RegExp(`^invalid objects: object's bytes do not match its name \\(their SHA-256 is ${sha256(Buffer.from('b\n'))}\\): ${small}$`));
      await refuses(tgz([file(big, Buffer.alloc(300_000, 8))]), /^invalid objects: object's bytes do not match its name/);
    });

    it('an object the manifest does not list or the store held, of another size, or not a file at the root', async () => {
      const other = Buffer.from('not in the manifest\n');
      expect(missing).not.toContain(sha256(s['held.txt']!));
      await refuses(tgz([file(sha256(other), other)]), /^invalid objects: not an object this deploy is missing: [0-9a-f]{64}$/);
      // Listed, but found in the store when the manifest was checked: the quota counted nothing for it.
      await refuses(tgz([file(sha256(s['a.txt']!), s['a.txt']!), file(sha256(s['held.txt']!), s['held.txt']!)]), new RegExp(`^invalid objects: not an object this deploy is missing: ${sha256(s['held.txt']!)}$`));
      await refuses(tgz([file(sha256(s['a.txt']!), Buffer.from('a\nand more\n'))]), /^invalid objects: object is 11 bytes, the manifest says 2: /);
      await refuses(tgz([file(`sub/${sha256(s['a.txt']!)}`, s['a.txt']!)]), /^invalid objects: not an object \(a file named by its SHA-256 at the archive's root\): sub\//);
      await refuses(tgz([dir(sha256(s['a.txt']!))]), /^invalid objects: not an object/);
      await refuses(tgz([file(`../${sha256(s['a.txt']!)}`, s['a.txt']!)]), /^invalid objects: path contains '\.\.' component/);
    });

    it('a body that is not a gzip-compressed tar, or is empty', async () => {
      await refuses(Buffer.from('hello'), /^invalid objects: not a valid gzip stream/);
      await refuses(gzipSync(gzipSync(Buffer.alloc(1024))), /^invalid objects: archive is compressed twice/);
      await refuses(Buffer.alloc(0), /^invalid objects: the batch is empty$/);
    });

    it('the same batch, honest, is taken', async () => {
      const reply = await upload(id, objects(s, missing));
      expect(reply.status).toBe(200);
      expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).body.missing).toEqual([]);
      expect((await publish(id)).status).toBe(200);
    });
  });

  describe('sessions belong to their user and their grant', () => {
    it("another user's session is not found, and another user's store is never offered", async () => {
      const other = await h.createUser('other');
      const s = site('mine', 5);
      const opened = await open({ project: 'iso', files: manifest(s) });
      const id = opened.body.id as string;
      for (const [method, path] of [
        ['GET', `/api/v1/deploys/${id}`],
        ['PUT', `/api/v1/deploys/${id}/objects`],
        ['POST', `/api/v1/deploys/${id}/publish`],
        ['DELETE', `/api/v1/deploys/${id}`],
      ] as const) {
        const reply = await h.call(method, path, { token: other, ...(method === 'PUT' ? { body: objects(s, opened.body.missing as string[]) } : {}) });
        expect(reply.status, `${method} ${path}`).toBe(404);
        expect(reply.body.error).toBe('deploy session not found');
      }
      // 'inc' stored every one of these bytes already (site v1 has them): 'other' is still asked for all.
      const theirs = await open({ project: 'iso', files: manifest(site('v1', 60)) }, other);
      expect((theirs.body.missing as string[]).length).toBe(new Set(Object.values(site('v1', 60)).filter((b) => b.length > 0).map(sha256)).size);
      await h.call('DELETE', `/api/v1/deploys/${String(theirs.body.id)}`, { token: other });
      await h.call('DELETE', `/api/v1/deploys/${id}`, { token });
      expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).status).toBe(404);
    });

    it('a user deleted and created again under the same name finds none of the old sessions', async () => {
      const first = await h.createUser('reborn');
      const s = site('old owner', 5);
      const opened = await open({ project: 'site', files: manifest(s) }, first);
      const id = opened.body.id as string;
      expect((await upload(id, objects(s, opened.body.missing as string[]), first)).status).toBe(200);
      expect(await readdir(join(h.deploysRoot, '.sessions'))).toContain(id);
      expect((await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'reborn', files: 'persist' } })).status).toBe(200);
      // Its uploads went with it, not at the next sweep.
      expect(await readdir(join(h.deploysRoot, '.sessions'))).not.toContain(id);
      const again = await h.createUser('reborn');
      for (const [method, path] of [
        ['GET', `/api/v1/deploys/${id}`],
        ['POST', `/api/v1/deploys/${id}/publish`],
      ] as const) {
        const reply = await h.call(method, path, { token: again });
        expect(reply.status, `${method} ${path}`).toBe(404);
        expect(reply.body.error).toBe('deploy session not found');
      }
      expect(await live('reborn', 'site')).toBeUndefined();
    });

    it('a deploy key deploys its own project incrementally and nothing else', async () => {
      const made = await h.call('POST', '/api/v1/projects/docs/keys', { token, json: { name: 'ci', scope: 'deploy' } });
      expect(made.status).toBe(200);
      const key = made.body.token as string;
      const s = site('keyed', 8);
      const { reply } = await deploy('docs', s, key);
      expect(reply.status).toBe(200);
      expect(reply.body.username).toBe('inc');
      expect((await open({ project: 'blog', files: manifest(s) }, key)).status).toBe(401);
      // A session opened with the user's token is not the key's to drive.
      const mine = await open({ project: 'blog', files: manifest(s) });
      expect((await h.call('GET', `/api/v1/deploys/${String(mine.body.id)}`, { token: key })).status).toBe(401);
      // Revoked mid-session: the key can do nothing more with its own session.
      const keyed = await open({ project: 'docs', files: manifest(site('keyed-2', 8)) }, key);
      expect(keyed.status).toBe(201);
      expect((await h.call('DELETE', `/api/v1/projects/docs/keys/${String(made.body.id)}`, { token })).status).toBe(200);
      expect((await publish(keyed.body.id as string, key)).status).toBe(401);
      await h.call('DELETE', `/api/v1/deploys/${String(mine.body.id)}`, { token });
      await h.call('DELETE', `/api/v1/deploys/${String(keyed.body.id)}`, { token });
      expect((await open({ project: 'docs', files: manifest(s) }, ADMIN_TOKEN)).status).toBe(401);
    });

    it('a user may have DEPLOY_SESSIONS_MAX open; the next is refused with Retry-After until one ends', async () => {
      const s = site('many', 2);
      const ids: string[] = [];
      for (let i = 0; i < 3; i += 1) {
        const opened = await open({ project: `many${i}`, files: manifest(s) });
        expect(opened.status).toBe(201);
        ids.push(opened.body.id as string);
      }
      const refused = await open({ project: 'many3', files: manifest(s) });
      expect(refused.status).toBe(429);
      expect(refused.body.error).toBe('too many open deploy sessions, retry later');
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect((await h.call('DELETE', `/api/v1/deploys/${ids[0]!}`, { token })).status).toBe(204);
      const next = await open({ project: 'many3', files: manifest(s) });
      expect(next.status).toBe(201);
      for (const id of [...ids.slice(1), next.body.id as string]) await h.call('DELETE', `/api/v1/deploys/${id}`, { token });
    });
  });
});

/**
 * The SHA-256 of a site's manifest in the canonical form docs/openapi.yaml defines,
 * written here from that text (not with the service's own function): lines
 * `<digest> <size> <path>\n` sorted by the paths' UTF-8 bytes.
 */
function canonicalDigest(s: Site): string {
  const lines = Object.entries(s).map(([path, bytes]) => ({ key: Buffer.from(path, 'utf8'), line: `${sha256(bytes)} ${bytes.length} ${path}\n` }));
  return sha256(lines.sort((a, b) => Buffer.compare(a.key, b.key)).map((l) => l.line).join(''));
}

/** What turns site `from` into site `to`: the entries added or changed, and the paths removed. */
function difference(from: Site, to: Site): { files: ReturnType<typeof manifest>; removed: string[] } {
  const files = manifest(Object.fromEntries(Object.entries(to).filter(([path, bytes]) => !from[path]?.equals(bytes))));
  return { files, removed: Object.keys(from).filter((path) => !(path in to)) };
}

describe('a manifest relative to a release the server has (real server, real directories, real SQLite)', () => {
  let h: Harness;
  let token: string;
  let other: string;
  const open = (body: unknown, as = token) => h.call('POST', '/api/v1/deploys', { token: as, json: body });
  const release = (user: string, project: string, id: string) => join(h.deploysRoot, user, project, id);

  /** Opens, uploads what is missing, publishes; returns the release id. */
  async function publishAll(body: Record<string, unknown>, s: Site, as = token): Promise<{ id: string; opened: Reply }> {
    const opened = await open(body, as);
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const missing = opened.body.missing as string[];
    if (missing.length > 0) expect((await h.call('PUT', `/api/v1/deploys/${String(opened.body.id)}/objects`, { token: as, body: objects(s, missing) })).status).toBe(200);
    const published = await h.call('POST', `/api/v1/deploys/${String(opened.body.id)}/publish`, { token: as });
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    return { id: published.body.release as string, opened };
  }
  const whole = (project: string, s: Site, as = token) => publishAll({ project, files: manifest(s) }, s, as);
  const relative = (project: string, base: { id: string; site: Site }, s: Site, extra: Record<string, unknown> = {}) =>
    open({ project, base: { release: base.id, digest: canonicalDigest(base.site) }, ...difference(base.site, s), ...extra });

  /** What a refused request must leave: every file and link as it was. */
  async function unchangedBy(request: () => Promise<Reply>): Promise<Reply> {
    await h.settled();
    const before = await snapshot(h.root);
    const reply = await request();
    await h.trashEmptied();
    expect(await snapshot(h.root)).toEqual(before);
    return reply;
  }

  const v1 = site('v1', 60);
  let base: { id: string; site: Site };

  beforeAll(async () => {
    h = await startHarness({ RELEASES_KEEP: '3', MAX_FILES: '300', MAX_EXTRACTED_BYTES: String(20 * 1024 * 1024) });
    token = await h.createUser('rel');
    other = await h.createUser('rel-other');
    base = { id: (await whole('docs', v1)).id, site: v1 };
  });
  afterAll(async () => {
    await h.close();
  });

  it('publishes the new site byte for byte (published modes), a removed file gone, asking only for what changed', async () => {
    const v2: Site = { ...site('v2', 60, (i) => i % 20 === 3), 'new/deep/added.html': Buffer.from('added\n'), 'same-a.css': Buffer.from('changed a\n') };
    delete v2['docs/part-1/page-5.html'];
    const { files, removed } = difference(v1, v2);
    expect(removed).toEqual(['docs/part-1/page-5.html']);
    const opened = await relative('docs', base, v2);
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    // The session holds the whole site, not the difference.
    expect(opened.body).toMatchObject({ files: Object.keys(v2).length, bytes: Object.values(v2).reduce((sum, b) => sum + b.length, 0) });
    expect(new Set(opened.body.missing as string[])).toEqual(new Set(files.map((f) => f.digest)));
    expect((await h.call('PUT', `/api/v1/deploys/${String(opened.body.id)}/objects`, { token, body: objects(v2, opened.body.missing as string[]) })).status).toBe(200);
    const published = await h.call('POST', `/api/v1/deploys/${String(opened.body.id)}/publish`, { token });
    expect(published.status).toBe(200);
    const dir = release('rel', 'docs', published.body.release as string);
    expect(digestsOf(await releaseFiles(dir))).toEqual(digestsOf(v2));
    const tree = await snapshot(dir);
    expect(tree['docs/part-1/page-5.html']).toBeUndefined();
    for (const [path, what] of Object.entries(tree)) expect(what, path).toMatch(/^(file 644|dir 755)/);
    // And that release is the next deploy's base: nothing changed, nothing removed.
    const again = await publishAll({ project: 'docs', base: { release: published.body.release, digest: canonicalDigest(v2) }, files: [], removed: [] }, v2);
    expect(again.opened.body.missing).toEqual([]);
    expect(digestsOf(await releaseFiles(release('rel', 'docs', again.id)))).toEqual(digestsOf(v2));
    base = { id: again.id, site: v2 };
  });

  it("a base's file whose bytes the store lost is not looked for at the open (the base links it) but asked for at the publish, then published", async () => {
    const lostPath = 'docs/part-2/page-6.html';
    const lost = sha256(base.site[lostPath]!);
    await rm(join(h.deploysRoot, 'rel', '.objects', objectPath(lost)));
    const v3 = { ...base.site, 'index.html': Buffer.from('v3 lost\n') };
    const opened = await relative('docs', base, v3);
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    expect(opened.body.missing).toEqual([sha256('v3 lost\n')]);
    const id = String(opened.body.id);
    expect((await h.call('PUT', `/api/v1/deploys/${id}/objects`, { token, body: objects(v3, opened.body.missing as string[]) })).status).toBe(200);
    const refused = await h.call('POST', `/api/v1/deploys/${id}/publish`, { token });
    expect(refused.status).toBe(409);
    expect(refused.body.missing).toEqual([lost]);
    expect((await h.call('PUT', `/api/v1/deploys/${id}/objects`, { token, body: objects(v3, [lost]) })).status).toBe(200);
    const published = await h.call('POST', `/api/v1/deploys/${id}/publish`, { token });
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    expect(digestsOf(await releaseFiles(release('rel', 'docs', published.body.release as string)))).toEqual(digestsOf(v3));
    base = { id: published.body.release as string, site: v3 };
  });

  it("a size that lies about a base's content, its file removed so no other entry holds the truth: 400, nothing opened or changed", async () => {
    const bigPath = 'docs/part-0/page-4.html';
    const big = base.site[bigPath]!;
    const digest = sha256(big);
    const files = Array.from({ length: 3 }, (_, i) => ({ path: `lie-${i}.bin`, size: 1, digest }));
    const reply = await unchangedBy(() => open({ project: 'docs', base: { release: base.id, digest: canonicalDigest(base.site) }, files, removed: [bigPath] }));
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe(`invalid manifest: size does not match the object's: ${digest} is not 1 bytes`);
  });

  it('a base digest that is not the release\'s files: 409, nothing opened or changed', async () => {
    const v3 = { ...base.site, 'index.html': Buffer.from('v3\n') };
    const wrong = { ...base.site, 'index.html': Buffer.from('what the client wrongly believes\n') };
    const reply = await unchangedBy(() => open({ project: 'docs', base: { release: base.id, digest: canonicalDigest(wrong) }, ...difference(base.site, v3) }));
    expect(reply.status).toBe(409);
    expect(reply.body).toEqual({ status: 'error', error: 'base release not found or changed: send the whole manifest' });
  });

  it("another project's release, another user's, or none at all: one identical 409", async () => {
    await whole('blog', { 'index.html': Buffer.from('blog\n') });
    const theirs = site('theirs', 5);
    const theirRelease = (await whole('theirs', theirs, other)).id;
    const v3 = { ...base.site, 'index.html': Buffer.from('v3\n') };
    const answers = [
      // This user's docs release, named as if it were one of blog's.
      await unchangedBy(() => relative('blog', base, v3)),
      // Another user's release, named by its true digest: this user has no such project.
      await unchangedBy(() => open({ project: 'theirs', base: { release: theirRelease, digest: canonicalDigest(theirs) }, files: [], removed: [] })),
      // This user's own release and its true digest, asked for by another user.
      await unchangedBy(() => open({ project: 'docs', base: { release: base.id, digest: canonicalDigest(base.site) }, files: [], removed: [] }, other)),
      await unchangedBy(() => relative('docs', { ...base, id: '20200101T000000' }, v3)),
    ];
    for (const reply of answers) {
      expect(reply.status).toBe(409);
      expect(reply.body).toEqual({ status: 'error', error: 'base release not found or changed: send the whole manifest' });
    }
  });

  it.each([
    ['a removed path the base lacks', () => ({ files: [], removed: ['nope.html'] }), 'invalid manifest: removed path is not in the base release: nope.html'],
    ['a path both changed and removed', () => ({ files: manifest({ 'index.html': Buffer.from('x') }), removed: ['index.html'] }), 'invalid manifest: path both changed and removed: index.html'],
    ['a difference whose site breaks MAX_FILES', () => ({ files: Array.from({ length: 200 }, (_, i) => ({ path: `more/${i}/page.html`, size: 1, digest: 'a'.repeat(64) })), removed: [] }), 'invalid manifest: site has more than 300 files and directories'],
    ['removed not a list', () => ({ files: [], removed: 'index.html' }), 'invalid manifest: removed must be an array of paths'],
  ])('%s: 400, nothing changed', async (_name, body, error) => {
    const reply = await unchangedBy(() => open({ project: 'docs', base: { release: base.id, digest: canonicalDigest(base.site) }, ...body() }));
    expect(reply.status).toBe(400);
    expect(reply.body.error).toBe(error);
  });

  it('a malformed base, or removed without one: 400', async () => {
    for (const [body, error] of [
      [{ base: { release: 'latest', digest: canonicalDigest(base.site) }, files: [] }, 'invalid manifest: base.release must be a release id (YYYYMMDDTHHMMSS)'],
      [{ base: { release: base.id, digest: 'x' }, files: [] }, 'invalid manifest: base.digest must be 64 lowercase hex digits (SHA-256)'],
      [{ base: base.id, files: [] }, 'invalid manifest: base must be an object {release, digest}'],
      [{ files: manifest(base.site), removed: ['index.html'] }, 'invalid manifest: removed needs a base'],
      // Checked before the base is looked at: a stale base does not turn these into 409s.
      [{ base: { release: '20000101T000000', digest: '0'.repeat(64) }, files: [], removed: 'index.html' }, 'invalid manifest: removed must be an array of paths'],
      [{ base: { release: '20000101T000000', digest: '0'.repeat(64) }, files: [], removed: ['a/../../x'] }, "invalid manifest: path contains '..' component which is not allowed: a/../../x"],
    ] as const) {
      const reply = await open({ project: 'docs', ...body });
      expect(reply.status, error).toBe(400);
      expect(reply.body.error).toBe(error);
    }
  });

  it('a base whose files link objects still under their old names (a store start-up has not renamed yet): derived, published without a 409, still shared', async () => {
    const old = site('old', 40);
    const deployed = await h.deploy(token, 'legacy', tgz(Object.entries(old).map(([path, bytes]) => file(path, bytes))));
    expect(deployed.status).toBe(200);
    // As a version before base32 names stored them: the base is from an archive, so the open walks it.
    const store = join(h.deploysRoot, 'rel', '.objects');
    for (const shard of await readdir(store)) {
      for (const name of await readdir(join(store, shard))) {
        const digest = digestOfEntry(shard, name)!;
        await rename(join(store, shard, name), join(store, legacyObjectPath(Buffer.from(digest, 'hex'))));
      }
    }
    const oldBase = { id: deployed.body.release as string, site: old };
    const next = { ...old, 'index.html': Buffer.from('next\n'), 'docs/part-1/page-9.html': Buffer.from('changed\n') };
    const opened = await relative('legacy', oldBase, next);
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    expect(new Set(opened.body.missing as string[])).toEqual(new Set([sha256(next['index.html']!), sha256(next['docs/part-1/page-9.html']!)]));
    const id = String(opened.body.id);
    expect((await h.call('PUT', `/api/v1/deploys/${id}/objects`, { token, body: objects(next, opened.body.missing as string[]) })).status).toBe(200);
    const published = await h.call('POST', `/api/v1/deploys/${id}/publish`, { token });
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    const dir = release('rel', 'legacy', published.body.release as string);
    expect(digestsOf(await releaseFiles(dir))).toEqual(digestsOf(next));
    for (const [path, bytes] of Object.entries(next)) {
      if (bytes.length === 0) continue;
      const [now, then] = await Promise.all([stat(join(dir, path)), stat(join(release('rel', 'legacy', oldBase.id), path))]);
      expect(now.ino === then.ino, path).toBe(bytes.equals(old[path]!));
    }
  });

  it('a base pruned by later deploys: 409, and the whole manifest then deploys', async () => {
    const pruned = base;
    // Opened on the base with nothing changed, the session keeps the base by name: its own requests meet the prune too.
    const early = await open({ project: 'docs', base: { release: pruned.id, digest: canonicalDigest(pruned.site) }, files: [], removed: [] });
    expect(early.status, JSON.stringify(early.body)).toBe(201);
    for (let i = 0; i < 3; i += 1) await whole('docs', { ...pruned.site, 'index.html': Buffer.from(`later ${i}\n`) });
    expect(await readdir(join(h.deploysRoot, 'rel', 'docs'))).not.toContain(pruned.id);
    const v4 = { ...pruned.site, 'index.html': Buffer.from('v4\n') };
    const reply = await unchangedBy(() => relative('docs', pruned, v4));
    expect(reply.status).toBe(409);
    expect(reply.body.error).toBe('base release not found or changed: send the whole manifest');
    const session = String(early.body.id);
    const batch = objects(pruned.site, [sha256(pruned.site['index.html']!)]);
    for (const [method, path, body] of [['GET', `/api/v1/deploys/${session}`], ['PUT', `/api/v1/deploys/${session}/objects`, batch], ['POST', `/api/v1/deploys/${session}/publish`]] as const) {
      // The snapshot takes in the database: the session is not kept alive by a request refused.
      const refused = await unchangedBy(() => h.call(method, path, { token, ...(body && { body }) }));
      expect(refused.status, `${method} ${path}`).toBe(409);
      expect(refused.body.error).toBe('base release not found or changed: send the whole manifest');
    }
    expect((await h.call('DELETE', `/api/v1/deploys/${session}`, { token })).status).toBe(204);
    const { id } = await whole('docs', v4);
    expect(digestsOf(await releaseFiles(release('rel', 'docs', id)))).toEqual(digestsOf(v4));
  });
});

describe('an abandoned session expires and its uploads go (real server)', () => {
  it('after DEPLOY_SESSION_SECONDS without use', async () => {
    const h = await startHarness({ DEPLOY_SESSION_SECONDS: '1' });
    try {
      const token = await h.createUser('idle');
      const s = site('idle', 5);
      const opened = await h.call('POST', '/api/v1/deploys', { token, json: { project: 'idle', files: manifest(s) } });
      const id = opened.body.id as string;
      const uploaded = await h.call('PUT', `/api/v1/deploys/${id}/objects`, { token, body: objects(s, (opened.body.missing as string[]).slice(0, 2)) });
      expect(uploaded.status).toBe(200);
      expect(await readdir(join(h.deploysRoot, '.sessions'))).toEqual([id]);
      await until(async () => (await readdir(join(h.deploysRoot, '.sessions'))).length === 0 && (await readdir(join(h.deploysRoot, '.trash'))).length === 0, 'the session to be swept');
      expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).status).toBe(404);
      expect((await h.call('POST', `/api/v1/deploys/${id}/publish`, { token })).status).toBe(404);
      expect(await readdir(join(h.deploysRoot, 'idle')).catch(() => [])).toEqual([]);
    } finally {
      await h.close();
    }
  });
});

describe('a session opened on its base, then given the site (PUT /api/v1/deploys/{id}/manifest; real server, real directories)', () => {
  let h: Harness;
  let token: string;
  let other: string;
  const v1 = site('v1', 40);
  let base: { id: string; site: Site };

  const call = (method: string, path: string, body: unknown, as = token) => h.call(method, path, { token: as, json: body });
  const openOnBase = (b: { id: string; site: Site }, project = 'docs') => call('POST', '/api/v1/deploys', { project, base: { release: b.id, digest: canonicalDigest(b.site) }, files: [], removed: [] });
  const revise = (id: string, body: unknown, as = token) => call('PUT', `/api/v1/deploys/${id}/manifest`, body, as);
  const relativeTo = (b: { id: string; site: Site }, s: Site) => ({ base: { release: b.id, digest: canonicalDigest(b.site) }, ...difference(b.site, s) });
  const release = (id: string) => join(h.deploysRoot, 'early', 'docs', id);
  /** Uploads what the session lacks and publishes it; returns the release. */
  async function finish(id: string, missing: string[], s: Site): Promise<string> {
    if (missing.length > 0) expect((await h.call('PUT', `/api/v1/deploys/${id}/objects`, { token, body: objects(s, missing) })).status).toBe(200);
    const published = await h.call('POST', `/api/v1/deploys/${id}/publish`, { token });
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    return published.body.release as string;
  }
  /** What a refused request must leave: every file and link as it was. */
  async function unchangedBy(request: () => Promise<Reply>): Promise<Reply> {
    await h.settled();
    const before = await snapshot(h.root);
    const reply = await request();
    await h.settled();
    expect(await snapshot(h.root)).toEqual(before);
    return reply;
  }

  beforeAll(async () => {
    h = await startHarness({ RELEASES_KEEP: '3', MAX_FILES: '300', MAX_EXTRACTED_BYTES: String(20 * 1024 * 1024) });
    token = await h.createUser('early');
    other = await h.createUser('early-other');
    const opened = await call('POST', '/api/v1/deploys', { project: 'docs', files: manifest(v1) });
    base = { id: await finish(opened.body.id as string, opened.body.missing as string[], v1), site: v1 };
  });
  afterAll(async () => {
    await h.close();
  });

  it('opens on the base alone (nothing missing), takes the difference, and publishes the site byte for byte; the base is as it was', async () => {
    const before = await snapshot(release(base.id));
    const opened = await openOnBase(base);
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    expect(opened.body).toMatchObject({ files: Object.keys(v1).length, missing: [] });
    const v2: Site = { ...site('v2', 40, (i) => i % 10 === 1), 'new/deep/added.html': Buffer.from('added\n'), 'docs/part-2/ünï code.html': Buffer.from('odd but legal\n') };
    delete v2['docs/part-2/page-6.html'];
    const id = opened.body.id as string;
    const revised = await revise(id, relativeTo(base, v2));
    expect(revised.status, JSON.stringify(revised.body)).toBe(200);
    expect(revised.body).toMatchObject({ id, files: Object.keys(v2).length, bytes: Object.values(v2).reduce((sum, b) => sum + b.length, 0) });
    expect(new Set(revised.body.missing as string[])).toEqual(new Set(difference(v1, v2).files.map((f) => f.digest)));
    expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).body).toMatchObject({ files: Object.keys(v2).length });
    const published = await finish(id, revised.body.missing as string[], v2);
    expect(digestsOf(await releaseFiles(release(published)))).toEqual(digestsOf(v2));
    expect(await snapshot(release(base.id))).toEqual(before);
    // Unchanged files share the base's bytes.
    const [now, then] = await Promise.all([stat(join(release(published), 'docs/part-0/page-0.html')), stat(join(release(base.id), 'docs/part-0/page-0.html'))]);
    expect(now.ino).toBe(then.ino);
    base = { id: published, site: v2 };
  });

  it('an open on a base alone with a digest that is not its files, or on a release not there: 409, nothing opened', async () => {
    for (const body of [
      { project: 'docs', base: { release: base.id, digest: sha256('not the manifest') }, files: [], removed: [] },
      { project: 'docs', base: { release: '20200101T000000', digest: canonicalDigest(base.site) }, files: [], removed: [] },
      { project: 'elsewhere', base: { release: base.id, digest: canonicalDigest(base.site) }, files: [], removed: [] },
    ]) {
      const reply = await unchangedBy(() => call('POST', '/api/v1/deploys', body));
      expect(reply).toMatchObject({ status: 409, body: { error: 'base release not found or changed: send the whole manifest' } });
    }
    expect((await h.call('GET', '/api/v1/deploys', { token })).body.sessions).toEqual([]);
  });

  it('a revision that breaks a rule, moves the session, or comes from another user is refused, leaving the session as it was', async () => {
    const opened = await openOnBase(base);
    const id = opened.body.id as string;
    const files = Object.keys(base.site).length;
    const cases: [unknown, number, string][] = [
      [{ files: [{ path: '../escape.html', size: 1, digest: sha256('x') }] }, 400, 'invalid manifest: '],
      [{ ...relativeTo(base, base.site), removed: ['not/in/the/base.html'] }, 400, 'invalid manifest: '],
      [{ project: 'elsewhere', files: manifest(base.site) }, 400, "invalid manifest: project and preview are the session's: a session's manifest cannot move it"],
      [{ preview: 'pr-1', files: manifest(base.site) }, 400, "invalid manifest: project and preview are the session's: a session's manifest cannot move it"],
    ];
    for (const [body, status, error] of cases) {
      const reply = await unchangedBy(() => revise(id, body));
      expect(reply.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(String(reply.body.error)).toContain(error);
      expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).body).toMatchObject({ files });
    }
    const otherUsers = await revise(id, { files: manifest(base.site) }, other);
    expect(otherUsers).toMatchObject({ status: 404, body: { error: 'deploy session not found' } });
    expect((await h.call('PUT', `/api/v1/deploys/${'f'.repeat(32)}/manifest`, { token, json: { files: manifest(base.site) } })).status).toBe(404);
    // The session is whole still: the same site again, published.
    expect(await finish(id, [], base.site)).toMatch(/^\d{8}T\d{6}$/);
  });

  it('a session with uploads is given no other manifest: 409, the session as it was (a session holds one manifest\'s bytes of uploads)', async () => {
    const v4: Site = { ...base.site, 'big.bin': Buffer.alloc(300_000, 4) };
    const opened = await call('POST', '/api/v1/deploys', { project: 'docs', files: manifest(v4) });
    const id = opened.body.id as string;
    expect((await h.call('PUT', `/api/v1/deploys/${id}/objects`, { token, body: objects(v4, opened.body.missing as string[]) })).status).toBe(200);
    const v5: Site = { ...base.site, 'big.bin': Buffer.alloc(300_000, 5) };
    const reply = await unchangedBy(() => revise(id, { files: manifest(v5) }));
    expect(reply).toMatchObject({ status: 409, body: { error: 'the session has uploads already: open another to send another manifest' } });
    expect(await finish(id, [], v4)).toMatch(/^\d{8}T\d{6}$/);
  });

  it('a base pruned between the open and the difference: one 409, the session as it was; the whole manifest then deploys', async () => {
    const pruned = base;
    const opened = await openOnBase(pruned);
    expect(opened.status).toBe(201);
    const id = opened.body.id as string;
    for (let i = 0; i < 3; i += 1) {
      const later = { ...pruned.site, 'index.html': Buffer.from(`later ${i}\n`) };
      const o = await call('POST', '/api/v1/deploys', { project: 'docs', files: manifest(later) });
      await finish(o.body.id as string, o.body.missing as string[], later);
    }
    expect(await readdir(join(h.deploysRoot, 'early', 'docs'))).not.toContain(pruned.id);
    const v3 = { ...pruned.site, 'index.html': Buffer.from('v3\n') };
    const reply = await unchangedBy(() => revise(id, relativeTo(pruned, v3)));
    expect(reply).toMatchObject({ status: 409, body: { error: 'base release not found or changed: send the whole manifest' } });
    // The session is as it was, its base by name: asked about, it says the same.
    expect(await h.call('GET', `/api/v1/deploys/${id}`, { token })).toMatchObject({ status: 409, body: { error: 'base release not found or changed: send the whole manifest' } });
    const whole = await revise(id, { files: manifest(v3) });
    expect(whole.status).toBe(200);
    const published = await finish(id, whole.body.missing as string[], v3);
    expect(digestsOf(await releaseFiles(release(published)))).toEqual(digestsOf(v3));
  });
});

describe('a session opened on its base and never given its difference (real server)', () => {
  it('expires after DEPLOY_SESSION_SECONDS, and the release built for it is thrown away', async () => {
    const h = await startHarness({ DEPLOY_SESSION_SECONDS: '1' });
    try {
      const token = await h.createUser('early-idle');
      const s = site('idle', 30);
      const first = await h.call('POST', '/api/v1/deploys', { token, json: { project: 'idle', files: manifest(s) } });
      expect((await h.call('PUT', `/api/v1/deploys/${String(first.body.id)}/objects`, { token, body: objects(s, first.body.missing as string[]) })).status).toBe(200);
      const published = await h.call('POST', `/api/v1/deploys/${String(first.body.id)}/publish`, { token });
      const opened = await h.call('POST', '/api/v1/deploys', { token, json: { project: 'idle', base: { release: published.body.release, digest: canonicalDigest(s) }, files: [], removed: [] } });
      expect(opened.status).toBe(201);
      const id = opened.body.id as string;
      const staging = join(h.deploysRoot, '.staging');
      // Built for it from the base: the area is there, with the base's files.
      await until(async () => (await readdir(staging)).length === 1, 'the release built from the base');
      await until(async () => (await readdir(staging)).length === 0 && (await readdir(join(h.deploysRoot, '.trash'))).length === 0, 'the session to be swept');
      expect((await h.call('GET', `/api/v1/deploys/${id}`, { token })).status).toBe(404);
      expect((await h.call('PUT', `/api/v1/deploys/${id}/manifest`, { token, json: { files: manifest(s) } })).status).toBe(404);
      expect(await readlink(join(h.docsRoot, 'early-idle', 'idle'))).toContain(String(published.body.release));
    } finally {
      await h.close();
    }
  });
});
