import { linkSync, lstatSync, mkdirSync, readdirSync, renameSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isShard, objectPath } from '../store/object-names.js';
import { isMissing } from '../threads/fs-errors.js';
import { errorCode } from './object-links.js';
import { readNewObject } from './new-objects.js';
import { CHANGE_BUDGET, type WriterTask } from './writer-task.js';


/** Walks a store's shards and the objects in each, a few entries at a time. */
export abstract class StoreWalk {
  readonly budget: number = CHANGE_BUDGET;
  private shards: string[] | undefined;
  private entries: string[] = [];
  private shard = '';

  constructor(protected readonly root: string) {}

  /** Looks at up to `budget` entries; true once the whole store has been walked. */
  step(budget: number): boolean {
    if (!this.shards) {
      try {
        this.shards = readdirSync(this.root);
      } catch (error) {
        if (isMissing(error)) return true;
        throw error;
      }
    }
    for (let left = budget; left > 0; left -= 1) {
      const name = this.entries.pop();
      if (name === undefined) {
        const shard = this.shards.pop();
        if (shard === undefined) return true;
        this.shard = shard;
        this.entries = this.enter(shard);
        continue;
      }
      this.visit(this.shard, name);
    }
    return false;
  }

  /** The entries of a top-level name of the store to visit. */
  protected abstract enter(shard: string): string[];
  protected abstract visit(shard: string, name: string): void;
}

/**
 * Deletes the objects of one user's store that no release links any more, a few at a
 * time, like tree removal. An object's link count is its reference count: one link
 * (the store's own) means no release, staging area or preview uses it. A release holds
 * its own link to every file it serves, so deleting a store entry can never take a file
 * from a release; racing a deploy that links the object at that moment costs at most
 * the sharing of those bytes (docs/content-store.md).
 */
export class ObjectCollection extends StoreWalk implements WriterTask<'collect'> {
  result(): undefined {
    return undefined;
  }

  protected enter(shard: string): string[] {
    const path = join(this.root, shard);
    try {
      if (lstatSync(path).isDirectory()) return readdirSync(path);
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
    collectIfUnlinked(path);
    return [];
  }

  protected visit(shard: string, name: string): void {
    collectIfUnlinked(join(this.root, shard, name));
  }
}

/** rename(2) into a shard, making it first if it is not there (set aside meanwhile). */
export function renameInto(from: string, to: string): void {
  try {
    renameSync(from, to);
    return;
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  mkdirSync(dirname(to), { recursive: true, mode: 0o755 });
  renameSync(from, to);
}

export function listed(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

function collectIfUnlinked(path: string): void {
  try {
    const info = lstatSync(path);
    if (info.isFile() && info.nlink === 1) unlinkSync(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
}

/**
 * Moves a checked batch's objects (the walk's root) into its session's uploads, a few at
 * a time: one rename(2) each, or one for a whole shard the uploads lack. An object the
 * uploads have already (sent again after a crash cut it short) is replaced by the same
 * bytes; a release linking the other copy keeps its own link.
 */
export class ObjectAdoption extends StoreWalk implements WriterTask<'adopt'> {
  constructor(
    fresh: string,
    private readonly store: string,
  ) {
    super(fresh);
  }

  result(): undefined {
    return undefined;
  }

  protected enter(shard: string): string[] {
    // Only shards hold objects: not a temporary link the writer made on the way to a rename, nor an uploads' mark.
    if (!isShard(shard)) return [];
    mkdirSync(this.store, { recursive: true, mode: 0o755 });
    try {
      // A shard the store has not got yet (a user's first deploy: all sixteen) moves
      // whole, one rename instead of one per object.
      renameSync(join(this.root, shard), join(this.store, shard));
      return [];
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
    }
    return readdirSync(join(this.root, shard));
  }

  protected visit(shard: string, name: string): void {
    // The shard can go between the listing and here: another replica set it aside to rename its objects.
    renameInto(join(this.root, shard, name), join(this.store, shard, name));
  }
}

/**
 * Links a published release's new objects (NewObjects, packed) into the user's store, a
 * few at a time: one link(2) each, after the deploy has answered (and at start-up, after a
 * crash, from its list). Until then a file of the release is its only link, which costs a
 * later deploy the sharing of its bytes, never a file. An object the store already has (another deploy's,
 * meanwhile) gives way to this release's copy; a release gone meanwhile (pruned) ends the task.
 */
export class ReleaseAdoption implements WriterTask<'adopt-release'> {
  readonly budget = CHANGE_BUDGET;
  private at = 0;
  private spares = 0;

  constructor(
    private readonly release: string,
    private readonly store: string,
    private readonly objects: Uint8Array,
  ) {}

  result(): undefined {
    return undefined;
  }

  step(budget: number): boolean {
    for (let left = budget; left > 0 && this.at < this.objects.length; left -= 1) {
      const { digest, path, next } = readNewObject(this.objects, this.at);
      this.at = next;
      if (!this.adopt(join(this.release, path), join(this.store, objectPath(digest)))) return true;
    }
    return this.at >= this.objects.length;
  }

  /** False once the release is gone. */
  private adopt(file: string, object: string): boolean {
    const linked = this.link(file, object);
    if (linked !== 'missing') return linked;
    // The store's shard is not there yet, or the release's file is gone.
    try {
      lstatSync(file);
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
    mkdirSync(dirname(object), { recursive: true, mode: 0o755 });
    return this.link(file, object) === true;
  }

  private link(file: string, object: string): boolean | 'missing' {
    try {
      linkSync(file, object);
      return true;
    } catch (error) {
      const code = errorCode(error);
      if (code === 'EEXIST') return this.replace(file, object);
      // This copy has all the links it may; the job's next copy of the same bytes is listed after it.
      if (code === 'EMLINK') return true;
      if (isMissing(error)) return 'missing';
      throw error;
    }
  }

  /**
   * The store has these bytes already (another deploy's copy, or one with all the links it
   * may): this release's copy takes its place, by rename(2), so that the name is never
   * missing. The releases linking either copy keep their own links.
   */
  private replace(file: string, object: string): boolean {
    // Linked already (a list resumed after a crash): rename(2) between two names of one
    // inode does nothing, and would leave the spare as a second name no collection removes.
    if (sameInode(file, object)) return true;
    const spare = join(dirname(object), `.adopting+${process.pid}+${(this.spares += 1)}`);
    try {
      linkSync(file, spare);
    } catch (error) {
      if (isMissing(error)) return false;
      throw error;
    }
    renameSync(spare, object);
    return true;
  }
}

/** Whether both paths name one inode; false where either is missing. */
function sameInode(a: string, b: string): boolean {
  const first = lstatSync(a, { throwIfNoEntry: false });
  const second = first && lstatSync(b, { throwIfNoEntry: false });
  return second !== undefined && first!.ino === second.ino && first!.dev === second.dev;
}
