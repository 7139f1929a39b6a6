import { lstatSync, type BigIntStats } from 'node:fs';
import { join } from 'node:path';
import { hashSiteFolder, type ManifestFile, type SiteFolder } from './folder-manifest.js';

/**
 * What says a file's bytes are the ones hashed before, without reading them: its device,
 * inode, size, and modification and change times in nanoseconds. Writing to a file, or
 * putting another in its place, changes its ctime, which no program can set back.
 */
export type FileStamp = string;

/** The last published manifest, with each file's stamp where it could be trusted (null where not). */
export interface RememberedFiles {
  readonly files: readonly ManifestFile[];
  readonly stamps?: readonly (FileStamp | null)[];
}

export interface CheckedFolder {
  /** Every file of the folder, in its order: a remembered digest where the stamp matched, else one just computed. */
  readonly files: ManifestFile[];
  /** Parallel to `files`: the stamp to remember for the next deploy, or null where it cannot be trusted. */
  readonly stamps: (FileStamp | null)[];
  /** How many files were read and hashed (the others matched their stamps). */
  readonly hashed: number;
}

/**
 * A file changed this close before hashing began is not stamped: a second write within
 * one tick of the filesystem's clock (coarse: up to 2 s on FAT, a jiffy on ext4) would
 * leave the same stamp on other bytes. Git calls such an entry "racily clean".
 */
export const RACY_MARGIN_NS = 2_000_000_000n;

/** How long the stat calls hold the event loop before letting progress and Ctrl-C through (as the hashing does). */
const SLICE_MS = 20;

export const stampOf = (stats: BigIntStats): FileStamp => `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;

/**
 * rsync's and git's quick check for a redeploy from the same machine: a file whose stamp
 * is the one remembered keeps its remembered digest, unread; every other file is hashed.
 * Each file is stamped before it is read, so a change during or after the read leaves a
 * stamp the next deploy will not match. `nowMs` is when this deploy started (this
 * machine's clock), for the racy margin.
 */
export async function hashChangedFiles(
  folder: SiteFolder,
  remembered: RememberedFiles | undefined,
  onHashed: (file: ManifestFile) => void = () => undefined,
  nowMs = Date.now(),
): Promise<CheckedFolder> {
  const trustedBefore = BigInt(nowMs) * 1_000_000n - RACY_MARGIN_NS;
  const known = new Map<string, { file: ManifestFile; stamp: FileStamp }>();
  remembered?.files.forEach((file, i) => {
    const stamp = remembered.stamps?.[i];
    if (stamp) known.set(file.path, { file, stamp });
  });
  const files = new Array<ManifestFile>(folder.files.length);
  const stamps = new Array<FileStamp | null>(folder.files.length);
  const unread: number[] = [];
  let sliceStart = performance.now();
  for (const [i, path] of folder.files.entries()) {
    // Anything not a plain file here is left to the hashing, which refuses it by name.
    const stats = lstatSync(join(folder.root, path), { bigint: true, throwIfNoEntry: false });
    const stamp = stats?.isFile() ? stampOf(stats) : null;
    stamps[i] = stamp !== null && stats!.ctimeNs < trustedBefore ? stamp : null;
    const before = known.get(path);
    if (stamp !== null && before?.stamp === stamp) {
      files[i] = before.file;
      onHashed(before.file);
    } else unread.push(i);
    if (performance.now() - sliceStart > SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
  const hashed = await hashSiteFolder({ ...folder, files: unread.map((i) => folder.files[i]!) }, onHashed);
  unread.forEach((fileIndex, k) => (files[fileIndex] = hashed[k]!));
  return { files, stamps, hashed: unread.length };
}
