import { linkSync, lstatSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { digestOfEntry, isShard, objectPath } from '../store/object-names.js';
import type { Probed } from '../threads/fs-protocol.js';
import { includes } from './release-inodes.js';
import { listed, StoreWalk } from './store-objects.js';
import { LOOKUP_BUDGET, type WriterTask } from './writer-task.js';

/**
 * Which of an incremental deploy's objects the user lacks, a few at a time: an object
 * is had if the store or the session's uploads hold a file of that name and size. One
 * the store holds at another size than the manifest gives is a lie about the size (the
 * name fixes the bytes), which the manifest's check reports.
 *
 * `within` (a deploy key's session, project-content.ts): the store answers only for an
 * object whose inode one of these sorted lists holds (its project's releases' files);
 * any other is missing, and no size is held against it. Every object then costs the same
 * lookups, uploads first, whether the store holds it or not, and the missing are listed
 * in the order looked at, whichever the reason.
 */
export class ObjectProbe implements WriterTask<'probe'> {
  readonly budget = LOOKUP_BUDGET;
  private readonly pending: [string, number][];
  readonly missing: string[] = [];
  readonly wrongSize: string[] = [];

  constructor(
    private readonly store: string,
    private readonly uploads: string | undefined,
    objects: ReadonlyMap<string, number>,
    private readonly within?: readonly Float64Array[],
  ) {
    this.pending = [...objects];
  }

  step(budget: number): boolean {
    for (let left = budget; left > 0; left -= 1) {
      const next = this.pending.pop();
      if (next === undefined) return true;
      if (this.within) this.lookWithin(next[0], next[1], this.within);
      else this.look(next[0], next[1]);
    }
    return this.pending.length === 0;
  }

  result(): Probed {
    return { missing: this.missing, wrongSize: this.wrongSize };
  }

  private look(digest: string, size: number): void {
    const stored = objectInfo(join(this.store, objectPath(digest)));
    if (stored !== undefined) {
      if (stored.size !== size) this.wrongSize.push(digest);
      return;
    }
    // An upload of another size is one a crash cut short (only a size the manifest
    // agreed to is ever taken): asked for again, not held against the manifest.
    if (this.uploaded(digest) !== size) this.missing.push(digest);
  }

  private lookWithin(digest: string, size: number, within: readonly Float64Array[]): void {
    if (this.uploaded(digest) === size) return;
    const stored = objectInfo(join(this.store, objectPath(digest)));
    // Searched for whether or not the store holds it (-1 is no inode), so that one held for
    // another project costs what an absent one does. Beyond 2^53 an inode number would not
    // compare exactly: never the project's, so asked for.
    const inode = stored !== undefined && Number.isSafeInteger(stored.ino) ? stored.ino : -1;
    const ours = within.some((inodes) => includes(inodes, inode));
    if (!ours || stored === undefined) this.missing.push(digest);
    else if (stored.size !== size) this.wrongSize.push(digest);
  }

  private uploaded(digest: string): number | undefined {
    return this.uploads === undefined ? undefined : objectInfo(join(this.uploads, objectPath(digest)))?.size;
  }
}

/**
 * Links into another session's uploads (`into`) what one session uploaded (the walk's
 * root) of `objects`, at the size given: a deploy key's new session keeps its earlier
 * sessions' uploads, whatever becomes of those sessions.
 */
export class UploadSharing extends StoreWalk implements WriterTask<'share'> {
  readonly shared: string[] = [];

  constructor(
    from: string,
    private readonly into: string,
    private readonly objects: ReadonlyMap<string, number>,
  ) {
    super(from);
  }

  result(): string[] {
    return this.shared;
  }

  protected enter(shard: string): string[] {
    return isShard(shard) ? listed(join(this.root, shard)) : [];
  }

  protected visit(shard: string, name: string): void {
    const digest = digestOfEntry(shard, name);
    const size = digest === undefined ? undefined : this.objects.get(digest);
    const from = join(this.root, shard, name);
    if (size === undefined || objectInfo(from)?.size !== size) return;
    const to = join(this.into, objectPath(digest!));
    try {
      linkSync(from, to);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return;
      if (code !== 'ENOENT') throw error;
      mkdirSync(dirname(to), { recursive: true, mode: 0o755 });
      try {
        linkSync(from, to);
      } catch (again) {
        // Gone meanwhile: that session's uploads were removed.
        if ((again as NodeJS.ErrnoException).code !== 'ENOENT') throw again;
        return;
      }
    }
    this.shared.push(digest!);
  }
}

/** A file's size and inode; undefined if there is none (ENOENT) or it is not a file. */
function objectInfo(path: string): { size: number; ino: number } | undefined {
  const info = lstatSync(path, { throwIfNoEntry: false });
  return info?.isFile() ? info : undefined;
}
