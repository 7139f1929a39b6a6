import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { LOOKUP_BUDGET, type WriterTask } from './writer-task.js';

const isGone = (error: unknown): boolean => ['ENOENT', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '');

/**
 * The inode numbers of a release's files, sorted: a release's files are hard links into
 * the user's store, so an object is one of the release's if its inode is among these
 * (project-content.ts). One lstat per file and a readdir per directory, a few thousand a
 * step, on the writer thread between the deploys' batches, as a manifest walk is.
 */
export class ReleaseInodesWalk implements WriterTask<'inodes'> {
  readonly budget = LOOKUP_BUDGET;
  private readonly dirs: string[] = [''];
  private files: string[] = [];
  private readonly inodes: number[] = [];
  /** Sorted, once `step` returns true; undefined when the release is not there (or went while it was walked). */
  private sorted: Float64Array | undefined;

  constructor(private readonly release: string) {}

  /** Does up to `budget` syscalls' worth of work; true once the inodes are known. */
  step(budget: number): boolean {
    try {
      for (let left = budget; left > 0; left -= 1) {
        const file = this.files.pop();
        if (file !== undefined) {
          // Beyond 2^53 an inode number would not compare exactly: left out, so its object counts as not the release's.
          const { ino } = lstatSync(join(this.release, file));
          if (Number.isSafeInteger(ino)) this.inodes.push(ino);
          continue;
        }
        const dir = this.dirs.pop();
        if (dir === undefined) {
          this.sorted = Float64Array.from(this.inodes).sort();
          return true;
        }
        for (const entry of readdirSync(join(this.release, dir), { withFileTypes: true })) {
          const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
          if (entry.isDirectory()) this.dirs.push(path);
          else if (entry.isFile()) this.files.push(path);
        }
      }
    } catch (error) {
      // A release removed while it was walked is no longer the project's: none of its files count.
      if (!isGone(error)) throw error;
      this.sorted = undefined;
      return true;
    }
    return false;
  }

  result(): Float64Array | 'gone' {
    return this.sorted ?? 'gone';
  }
}

/** Whether the sorted `inodes` hold `inode` (a binary search: no set built per question). */
export function includes(inodes: Float64Array, inode: number): boolean {
  let low = 0;
  let high = inodes.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const at = inodes[middle]!;
    if (at === inode) return true;
    if (at < inode) low = middle + 1;
    else high = middle - 1;
  }
  return false;
}
