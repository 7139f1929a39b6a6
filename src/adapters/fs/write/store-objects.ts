import { linkSync, lstatSync, mkdirSync, readdirSync, renameSync, rmdirSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { asideOf, digestOfEntry, isAsideShard, isLegacyName, isShard, objectPath } from '../store/object-names.js';
import type { Probed } from '../threads/fs-protocol.js';
import { includes } from './release-inodes.js';
import { CHANGE_BUDGET, LOOKUP_BUDGET, type WriterTask } from './writer-task.js';

const isMissing = (error: unknown): boolean => (error as NodeJS.ErrnoException).code === 'ENOENT';

/** Walks a store's shards and the objects in each, a few entries at a time. */
abstract class StoreWalk {
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

/**
 * Renames the objects of a store made before base32 names (object-names.ts) to their new
 * names, a few at a time, like the collection; start-up runs it on every store. rename(2)
 * keeps the inode, so no release is touched: each holds its own links. Where the new
 * name is taken already (a deploy since the upgrade stored the same bytes), that object
 * stays and the old name goes: the releases linking either keep their bytes, only their
 * sharing is lost. A shard that holds old names is first set aside whole (`<shard>.old`),
 * since ext4 never shrinks a directory: the shard's new names go into a fresh directory
 * of its name, and the old one is removed once empty. A crash part-way leaves both kinds
 * of names, and shards set aside, which every reader takes (object-names.ts) and the next
 * start finishes renaming. Another replica's deploy that adds an object meanwhile finds
 * its shard made again (ObjectAdoption); one of a version before base32 names adds old
 * names, which the next start renames.
 */
export class ObjectNameMigration extends StoreWalk implements WriterTask<'migrate'> {
  /** Where the names the walk is visiting are: the shard entered, or where it was set aside. */
  private dir = '';
  private readonly setAside: string[] = [];

  override step(budget: number): boolean {
    if (!super.step(budget)) return false;
    for (const aside of this.setAside.splice(0)) removeIfEmpty(join(this.root, aside));
    return true;
  }

  result(): undefined {
    return undefined;
  }

  protected enter(shard: string): string[] {
    if (isAsideShard(shard)) return this.emptying(shard);
    if (!isShard(shard)) return [];
    const names = listed(join(this.root, shard));
    if (!names.some(isLegacyName)) return [];
    try {
      renameSync(join(this.root, shard), join(this.root, asideOf(shard)));
      return this.emptying(asideOf(shard));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
    }
    // Set aside already, and not yet emptied (a crash): these few are renamed where they are.
    this.dir = shard;
    return names.filter(isLegacyName);
  }

  protected visit(_shard: string, name: string): void {
    const digest = digestOfEntry(this.dir, name);
    // Not an object: left where it is (a shard set aside then stays, and is walked as one).
    if (digest === undefined) return;
    const from = join(this.root, this.dir, name);
    const [shard, newName] = objectPath(digest).split('/') as [string, string];
    const to = join(this.root, shard, newName);
    // An old name goes if its new one is taken: in the shard, or still in the shard set
    // aside, whichever of the two is walked first (an object stored since the upgrade).
    const taken = isLegacyName(name) ? [to, join(this.root, asideOf(shard), newName)] : [to];
    try {
      if (taken.some((path) => lstatSync(path, { throwIfNoEntry: false }))) unlinkSync(from);
      else renameInto(from, to);
    } catch (error) {
      // Gone meanwhile: another replica's collection or migration took it.
      if (!isMissing(error)) throw error;
    }
  }

  private emptying(aside: string): string[] {
    this.dir = aside;
    this.setAside.push(aside);
    return listed(join(this.root, aside));
  }
}

/** rename(2) into a shard, making it first if it is not there (set aside meanwhile). */
function renameInto(from: string, to: string): void {
  try {
    renameSync(from, to);
    return;
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  mkdirSync(dirname(to), { recursive: true, mode: 0o755 });
  renameSync(from, to);
}

function listed(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

/** rmdir(2) if nothing is left in it; what another replica put there meanwhile waits for the next start. */
function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
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
 * Moves a deploy's new objects, kept beside its staging area while it was unpacked,
 * into the user's store, a few at a time: one rename(2) each. It runs at the commit,
 * under the project's lock: a deploy refused before then leaves the store as it was.
 * An object the store already has (another deploy's, meanwhile) is replaced by the same
 * bytes; the releases linking either copy keep their own links.
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
    // A temporary link the writer made on the way to a rename is no object.
    if (shard.startsWith('tmp+')) return [];
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
