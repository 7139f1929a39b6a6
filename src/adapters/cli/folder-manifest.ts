import { readdirSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { linkRefused, notRegular } from './file-chunks.js';
import type { ManifestFile } from '../../domain/manifest.js';
import { CHUNK_BYTES, hashFile, hashOnThreads, hashThreadCount } from './hash-threads.js';
import { UsageError } from './usage-error.js';


export interface SiteFolder {
  readonly root: string;
  /** Relative '/'-separated paths of every regular file, sorted. */
  readonly files: string[];
  /** Relative '/'-separated paths of every directory, each before the directories in it. */
  readonly directories: string[];
  readonly warnings: string[];
}

/** Files measured at once: enough to keep a disk busy, few enough to bound open files. */
const CONCURRENCY = 12;

/**
 * Checks a build folder the way the server will, so mistakes are named here: links are
 * refused (the server rejects them), so is anything that is not a file or a directory
 * and an empty folder; a missing index.html is worth a warning. Nothing is skipped silently.
 */
export async function readSiteFolder(root: string): Promise<SiteFolder> {
  const top = (await readdir(root)).sort();
  if (top.length === 0) throw new UsageError(`${root} is empty: there is nothing to deploy`);
  const files: string[] = [];
  const directories: string[] = [];
  // Synchronous, as the hashing is: a directory listing is one quick call, and nothing else runs meanwhile.
  const walk = (relative: string): void => {
    const entries = readdirSync(join(root, relative), { withFileTypes: true });
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const path = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isSymbolicLink()) throw linkRefused(path);
      if (entry.isDirectory()) {
        directories.push(path);
        walk(path);
      } else if (entry.isFile()) files.push(path);
      else throw notRegular(path);
    }
  };
  walk('');
  const warnings = top.includes('index.html') ? [] : [`${root} has no index.html at its root: the site's address will show no page`];
  return { root, files, directories, warnings };
}

/** Runs `work` on every item, at most `limit` at a time, keeping the items' order in the results. */
async function pooled<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** How long hashing on the main thread holds the event loop before letting progress and Ctrl-C through. */
const SLICE_MS = 20;
/**
 * Below this many files, starting threads costs more than it saves: each starts a Node
 * environment of its own before it hashes, while this thread hashes a small cached file in
 * microseconds; on two cores two threads win from about 20,000 files (docs/performance.md,
 * the CLI's hashing threshold, measured when each thread loaded the whole CLI).
 */
const THREADED_FROM = 20_000;

/**
 * Size and SHA-256 of every file of the folder, in the folder's order; `onHashed` hears
 * each one as it finishes. A large site is hashed on several threads at once; a small one
 * on this thread, in slices of a few milliseconds. Files are read synchronously
 * (file-chunks.ts says why).
 */
export async function hashSiteFolder(folder: SiteFolder, onHashed: (file: ManifestFile) => void = () => undefined, threads = hashThreadCount()): Promise<ManifestFile[]> {
  if (folder.files.length >= THREADED_FROM && threads > 1) return hashOnThreads(folder.root, folder.files, threads, onHashed);
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  const results: ManifestFile[] = [];
  let sliceStart = performance.now();
  for (const path of folder.files) {
    const file = hashFile(folder.root, path, buffer);
    results.push(file);
    onHashed(file);
    if (performance.now() - sliceStart > SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
  return results;
}

/** The bytes of every file, for a deploy that sends them all and so never hashes them. */
export async function measureSiteFolder(folder: SiteFolder): Promise<number> {
  const sizes = await pooled(folder.files, CONCURRENCY, async (path) => (await lstat(join(folder.root, path))).size);
  return sizes.reduce((sum, size) => sum + size, 0);
}
