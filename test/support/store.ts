import { randomBytes } from 'node:crypto';
import { lstat, readdir, readFile, readlink, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { digestOfEntry, objectPath as objectPathInStore } from '../../src/adapters/fs/store/object-names.js';
import { file, tgz } from './tar-builder.js';
import { sha256 } from './sha256.js';
import { until } from './until.js';

/**
 * Helpers for tests of the per-user store of shared files (docs/content-store.md):
 * `DEPLOYS_ROOT/<user>/.objects/<first hex digit>/<the digest in base32>`, one file per
 * SHA-256 digest, whose link count is its reference count.
 */

export const EMPTY_DIGEST = sha256('');

/** Resolves once the service has adopted every published tarball's new objects into its users' stores (DEPLOYS_ROOT/.adopt empty). */
export async function adoptionsDone(deploysRoot: string, timeoutMs = 10_000): Promise<void> {
  await until(async () => (await readdir(join(deploysRoot, '.adopt')).catch(() => [])).length === 0, 'the adoption of new objects into the store', timeoutMs);
}

export const storeOf = (deploysRoot: string, user: string): string => join(deploysRoot, user, '.objects');
export const objectPath = (store: string, digest: string): string => join(store, objectPathInStore(digest));

export interface StoredObject {
  readonly digest: string;
  readonly path: string;
  readonly nlink: number;
}

/** Every object in a store (none if there is no store), under either name (object-names.ts), with its link count. */
export async function storeObjects(store: string): Promise<StoredObject[]> {
  const objects: StoredObject[] = [];
  for (const shard of await readdir(store).catch(() => [])) {
    for (const rest of await readdir(join(store, shard)).catch(() => [])) {
      const path = join(store, shard, rest);
      const info = await stat(path).catch(() => undefined);
      if (info) objects.push({ digest: digestOfEntry(shard, rest) ?? `not an object: ${shard}/${rest}`, path, nlink: info.nlink });
    }
  }
  return objects;
}

/** The objects no release links (link count 1): what a collection must delete. */
export async function unlinkedObjects(store: string): Promise<string[]> {
  return (await storeObjects(store)).filter((o) => o.nlink === 1).map((o) => o.path);
}

/**
 * Waits until the store holds no object that no release links: the collection runs in
 * the background (after a prune, once the trash it follows is empty; at start-up).
 */
export async function storeCollected(store: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const unlinked = await unlinkedObjects(store);
    if (unlinked.length === 0) return;
    if (Date.now() > deadline) throw new Error(`${unlinked.length} objects were never collected, e.g. ${unlinked[0]}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Every file below `dir` (relative path) with its content's SHA-256. */
export async function fileDigests(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(sub: string): Promise<void> {
    for (const entry of await readdir(join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(rel);
      else out[rel] = sha256(await readFile(join(dir, rel)));
    }
  }
  await walk('');
  return out;
}

/** A site as a test holds it: every file's path and bytes. */
export type Site = ReadonlyMap<string, Buffer>;

export const siteArchive = (site: Site): Buffer => tgz([...site].map(([path, bytes]) => file(path, bytes)));

/**
 * How the release at `dir` differs from `site` (empty when it is complete and byte for
 * byte the same): missing, extra and changed files, anything but a plain file with the
 * published mode.
 */
export async function releaseDifferences(dir: string, site: Site): Promise<string[]> {
  const problems: string[] = [];
  const seen = new Set<string>();
  async function walk(sub: string): Promise<void> {
    for (const entry of await readdir(join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        await walk(rel);
        continue;
      }
      seen.add(rel);
      const expected = site.get(rel);
      const info = await lstat(join(dir, rel));
      if (expected === undefined) problems.push(`${rel}: not in the site`);
      else if (!info.isFile() || (info.mode & 0o777) !== 0o644) problems.push(`${rel}: mode ${info.mode.toString(8)}`);
      else if (!(await readFile(join(dir, rel))).equals(expected)) problems.push(`${rel}: other bytes`);
    }
  }
  await walk('').catch((error: unknown) => problems.push(`${dir}: ${(error as Error).message}`));
  for (const path of site.keys()) if (!seen.has(path)) problems.push(`${path}: missing`);
  return problems;
}

const bodies = new Map<number, Buffer>();

/**
 * File body number `n` of an endless pool: the same bytes every time this process asks
 * for it, different bytes from every other number. About one in 97 is 150 KB, which the
 * service streams rather than sends whole (a different path into the store).
 */
export function poolBody(n: number): Buffer {
  let body = bodies.get(n);
  if (!body) {
    // Random, so archives do not shrink to nothing: a test that sends half of one
    // sends half of its files.
    body = Buffer.concat([Buffer.from(`${n}:`), randomBytes(n % 97 === 0 ? 150_000 + (n % 1000) : 200 + ((n * 37) % 3000))]);
    bodies.set(n, body);
  }
  return body;
}

/**
 * Version `version` of a site of `files` files whose file i holds pool body
 * `version * shift + i`: versions `shift * k` apart share all but `shift * k` of their
 * bytes (under other names), so deploys of nearby versions link the same objects. One
 * body is there twice (the same bytes twice in one archive), and there is an empty file.
 */
export function overlappingSite(version: number, files: number, shift: number): Site {
  const site = new Map<string, Buffer>();
  for (let i = 0; i < files; i += 1) site.set(`d${i % 8}/f${i}.bin`, poolBody(version * shift + i));
  site.set('again.bin', poolBody(version * shift));
  site.set('empty.txt', Buffer.alloc(0));
  site.set('index.html', Buffer.from(`version ${version}\n`));
  return site;
}

const archives = new Map<string, Buffer>();

/**
 * `siteArchive(overlappingSite(...))`, built once per process. Tests build theirs before
 * their first request: seconds of synchronous building between two requests, on a busy
 * machine, can outlast the server's keep-alive, and the next request then meets a
 * connection the server is closing (ECONNRESET, EPIPE).
 */
export function overlappingArchive(version: number, files: number, shift: number): Buffer {
  const key = `${version}/${files}/${shift}`;
  let archive = archives.get(key);
  if (!archive) {
    archive = siteArchive(overlappingSite(version, files, shift));
    archives.set(key, archive);
  }
  return archive;
}

/** The release a live link names, by its directory's name. */
export const liveReleaseOf = async (link: string): Promise<string> => basename(await readlink(link));

/** The digests of the non-empty files of these sites: the objects a store must hold for them. */
export const digestsOf = (sites: Iterable<Site>): Set<string> =>
  new Set([...sites].flatMap((site) => [...site.values()].map(sha256)).filter((digest) => digest !== EMPTY_DIGEST));

/** Which of these sites' bytes the store does not hold, under their digest, byte for byte. */
export async function missingObjects(store: string, sites: Iterable<Site>): Promise<string[]> {
  const missing: string[] = [];
  for (const digest of digestsOf(sites)) {
    const bytes = await readFile(objectPath(store, digest)).catch(() => undefined);
    if (bytes === undefined || sha256(bytes) !== digest) missing.push(digest);
  }
  return missing;
}

export interface CheckedRelease {
  readonly id: string;
  readonly site: Site;
  /** How it differs from the version its index.html names; empty when whole and the same. */
  readonly problems: string[];
}

/**
 * Every release of a project deployed from `overlappingSite(version, files, shift)`,
 * compared byte for byte with the version its index.html names.
 */
export async function overlappingReleases(projectDir: string, files: number, shift: number): Promise<CheckedRelease[]> {
  const checked: CheckedRelease[] = [];
  for (const id of await readdir(projectDir).catch(() => [])) {
    const index = await readFile(join(projectDir, id, 'index.html'), 'utf8').catch(() => '');
    const version = /^version (\d+)\n$/.exec(index)?.[1];
    if (version === undefined) {
      checked.push({ id, site: new Map(), problems: [`index.html: ${JSON.stringify(index)}`] });
      continue;
    }
    const site = overlappingSite(Number(version), files, shift);
    checked.push({ id, site, problems: await releaseDifferences(join(projectDir, id), site) });
  }
  return checked;
}
