import { createHash } from 'node:crypto';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileChunks, linkRefused, notRegular } from './file-chunks.js';
import { UsageError } from './usage-error.js';

/** One file of a site as the protocol's manifest lists it: where, how big, SHA-256 of its bytes. */
export interface ManifestFile {
  readonly path: string;
  readonly size: number;
  readonly digest: string;
}

export interface SiteFolder {
  readonly root: string;
  /** Relative '/'-separated paths of every regular file, sorted. */
  readonly files: string[];
  /** The folder's own entries: what a tarball of its contents names. */
  readonly top: string[];
  readonly warnings: string[];
}

/** Files hashed or measured at once: enough to keep a disk and a core busy, few enough to bound open files and buffers. */
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
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(join(root, relative), { withFileTypes: true });
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const path = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isSymbolicLink()) throw linkRefused(path);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) files.push(path);
      else throw notRegular(path);
    }
  };
  await walk('');
  const warnings = top.includes('index.html') ? [] : [`${root} has no index.html at its root: the site's address will show no page`];
  return { root, files, top, warnings };
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

/** Size and SHA-256 of one file, from the bytes actually read: a file that changes while it is read is described as read. */
async function hashFile(root: string, path: string): Promise<ManifestFile> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of fileChunks(root, path)) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { path, size, digest: hash.digest('hex') };
}

/** Every file of the folder hashed, a few at a time; `onHashed` hears each one as it finishes. */
export function hashSiteFolder(folder: SiteFolder, onHashed: (file: ManifestFile) => void = () => undefined): Promise<ManifestFile[]> {
  return pooled(folder.files, CONCURRENCY, async (path) => {
    const file = await hashFile(folder.root, path);
    onHashed(file);
    return file;
  });
}

/** The bytes of every file, for a deploy that sends them all and so never hashes them. */
export async function measureSiteFolder(folder: SiteFolder): Promise<number> {
  const sizes = await pooled(folder.files, CONCURRENCY, async (path) => (await lstat(join(folder.root, path))).size);
  return sizes.reduce((sum, size) => sum + size, 0);
}
