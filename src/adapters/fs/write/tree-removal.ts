import { lstatSync, readdirSync, rmdirSync, unlinkSync, type Dirent } from 'node:fs';
import { join } from 'node:path';
import { CHANGE_BUDGET, type WriterTask } from './writer-task.js';
import { isMissing } from '../threads/fs-errors.js';


interface Level {
  readonly path: string;
  entries: Dirent[] | undefined;
  relisted?: boolean;
}

/**
 * rm -rf of one tree, a few entries at a time. The writer thread runs it between the
 * batches of the deploys it is writing, so deleting a pruned 40,000-file release never
 * holds a deploy's files back for the seconds it takes; and each step is one synchronous
 * syscall, not a promise per file on the thread pool (which cost a 50,000-file release
 * some 130 MiB at once). A tree that is already gone is removed.
 */
export class TreeRemoval implements WriterTask<'remove'> {
  readonly budget = CHANGE_BUDGET;
  /** Directories entered, deepest last, with the entries still to remove. */
  private readonly stack: Level[];

  constructor(root: string) {
    this.stack = [{ path: root, entries: undefined }];
  }

  result(): undefined {
    return undefined;
  }

  /** Removes up to `budget` entries; true once the whole tree is gone. */
  step(budget: number): boolean {
    for (let left = budget; left > 0 && this.stack.length > 0; ) {
      const top = this.stack.at(-1)!;
      // Listing a directory (or removing a root that is not one) is a step too.
      left -= 1;
      if (!top.entries) {
        this.enter(top);
        continue;
      }
      const next = top.entries.pop();
      if (!next) {
        this.removeEmptied(top);
      } else if (next.isDirectory()) {
        this.stack.push({ path: join(top.path, next.name), entries: undefined });
      } else {
        unlinkIfThere(join(top.path, next.name));
      }
    }
    return this.stack.length === 0;
  }

  /**
   * Removes a directory whose listed entries are gone. Another process may have removed
   * it meanwhile (fine), or added an entry since it was listed: then it is listed once
   * more, as rm -rf does, rather than left behind.
   */
  private removeEmptied(top: Level): void {
    try {
      rmdirSync(top.path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' && !top.relisted) {
        top.entries = undefined;
        top.relisted = true;
        return;
      }
      if (code !== 'ENOENT') throw error;
    }
    this.stack.pop();
  }

  /** Lists a directory to empty; anything else on top (the root a file, or gone) is removed now. */
  private enter(top: Level): void {
    let isDirectory: boolean;
    try {
      isDirectory = lstatSync(top.path).isDirectory();
    } catch (error) {
      if (!isMissing(error)) throw error;
      this.stack.pop();
      return;
    }
    if (isDirectory) {
      try {
        top.entries = readdirSync(top.path, { withFileTypes: true });
      } catch (error) {
        if (!isMissing(error)) throw error;
        this.stack.pop();
      }
    } else {
      unlinkIfThere(top.path);
      this.stack.pop();
    }
  }
}

function unlinkIfThere(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
}
