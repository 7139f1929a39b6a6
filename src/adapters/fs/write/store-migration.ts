import { lstatSync, renameSync, rmdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { asideOf, digestOfEntry, isAsideShard, isLegacyName, isShard, objectPath } from '../store/object-names.js';
import { isMissing } from '../threads/fs-errors.js';
import { listed, renameInto, StoreWalk } from './store-objects.js';
import type { WriterTask } from './writer-task.js';

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

/** rmdir(2) if nothing is left in it; what another replica put there meanwhile waits for the next start. */
function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
  }
}
