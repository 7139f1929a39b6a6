import { lstatSync, statfsSync, type BigIntStats } from 'node:fs';
import { join } from 'node:path';
import type { ManifestFile } from '../../domain/manifest.js';
import { hashSiteFolder, type SiteFolder } from './folder-manifest.js';

/**
 * What says a file's bytes are the ones hashed before, without reading them: its device,
 * inode, size, and modification and change times in nanoseconds. Writing to a file, or
 * putting another in its place, changes its ctime, which no program can set back, on
 * the filesystems KEEPS_CTIME lists.
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

/**
 * Linux filesystems (statfs f_type) that keep a ctime of their own, set by the kernel at
 * every change. Not vfat or exfat, whose ctime is the mtime (touch -r, or a build that
 * pins times, would put a whole stamp back on other bytes), nor network filesystems,
 * whose times come from another machine's clock. Anywhere else every file is read.
 */
const KEEPS_CTIME = new Set([
  0xef53, // ext2, ext3, ext4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x01021994, // tmpfs
  0x794c7630, // overlayfs (containers)
  0x2fc12fc1, // zfs
  0xf2f52010, // f2fs
]);

/** Whether stamps can be trusted for files under `root`. */
export function stampsHoldUnder(root: string): boolean {
  if (process.platform !== 'linux') return false;
  try {
    return KEEPS_CTIME.has(statfsSync(root).type);
  } catch {
    return false;
  }
}

export const stampOf = (stats: BigIntStats): FileStamp => `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;

export interface QuickCheckOptions {
  /** When this deploy started (this machine's clock, which is the filesystem's), for the racy margin. */
  readonly nowMs?: number;
  /** Whether the folder's filesystem keeps a true ctime (stampsHoldUnder); if not, every file is read and none stamped. */
  readonly stampsHold?: boolean;
}

/**
 * rsync's and git's quick check for a redeploy from the same machine: a file whose stamp
 * is the one remembered keeps its remembered digest, unread; every other file is hashed.
 * Each file is stamped before it is read and stamped again after: a stamp is kept only
 * if the two agree, so a file changed, or swapped for another and back, while it was read
 * is read again next time.
 */
export async function hashChangedFiles(
  folder: SiteFolder,
  remembered: RememberedFiles | undefined,
  onHashed: (file: ManifestFile) => void = () => undefined,
  { nowMs = Date.now(), stampsHold = stampsHoldUnder(folder.root) }: QuickCheckOptions = {},
): Promise<CheckedFolder> {
  const trustedBefore = BigInt(nowMs) * 1_000_000n - RACY_MARGIN_NS;
  const known = new Map<string, { file: ManifestFile; stamp: FileStamp }>();
  if (stampsHold) remembered?.files.forEach((file, i) => {
    const stamp = remembered.stamps?.[i];
    if (stamp) known.set(file.path, { file, stamp });
  });
  const files = new Array<ManifestFile>(folder.files.length);
  const stamps = new Array<FileStamp | null>(folder.files.length);
  const unread: number[] = [];
  // The filesystem was judged at the root: a file on another one mounted inside is never stamped.
  const device = stampsHold ? lstatSync(folder.root, { bigint: true }).dev : undefined;
  const stampAt = (path: string): FileStamp | null => {
    // Anything not a plain file here is left to the hashing, which refuses it by name.
    const stats = stampsHold ? lstatSync(join(folder.root, path), { bigint: true, throwIfNoEntry: false }) : undefined;
    return stats?.isFile() && stats.dev === device && stats.ctimeNs < trustedBefore ? stampOf(stats) : null;
  };
  let sliceStart = performance.now();
  for (const [i, path] of folder.files.entries()) {
    const stamp = stampAt(path);
    stamps[i] = stamp;
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
  unread.forEach((fileIndex, k) => {
    files[fileIndex] = hashed[k]!;
    if (stamps[fileIndex] !== null && stampAt(folder.files[fileIndex]!) !== stamps[fileIndex]) stamps[fileIndex] = null;
  });
  return { files, stamps, hashed: unread.length };
}
