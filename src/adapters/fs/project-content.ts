import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { inject, injectable } from 'inversify';
import type { ProjectName } from '../../domain/project-name.js';
import { ReleaseId } from '../../domain/release-id.js';
import type { Username } from '../../domain/username.js';
import { DeploysTree, directoryIdentity, isMissing } from './deploys-tree.js';
import type { Probed } from './fs-protocol.js';
import { FS_THREADS, type FsThreads } from './fs-threads.js';

/**
 * Bytes of releases' inode lists held at most, 8 a file: the five kept releases of a
 * 40,000-file site take 1.6 MB. Past it the least recently used go (and are walked again).
 */
export const REMEMBERED_INODES_BYTES_MAX = 4 * 1024 * 1024;

/**
 * Which objects of a user's store a project's releases hold (issue 26, point 5). A
 * release's files are hard links into the store, so an object is the project's if its
 * inode is one of a release's files': live, older, or a preview's (all under the
 * project's directory). Each release's inodes are listed once (a walk of its files on the
 * writer thread, 40,000 lstats in some 100 ms) and remembered with the identity of its
 * directory: a committed release never changes. Nothing here depends on the objects asked
 * about, so the time taken says nothing of what other projects hold.
 *
 * Only ever on the safe side: a release committed meanwhile, or an object whose stored
 * copy is not the one a release links (an EMLINK copy, a store entry another deploy
 * replaced with the same bytes), counts as not the project's, which costs an upload.
 */
@injectable()
export class ProjectContent {
  /** By release directory, in order of use (a Map iterates in insertion order); `held` counts their bytes. */
  private readonly remembered = new Map<string, { identity: string; inodes: Float64Array }>();
  private held = 0;
  /** Walks under way, by directory and identity: sessions opened at once walk a release once. */
  private readonly walking = new Map<string, Promise<Float64Array | undefined>>();

  constructor(
    @inject(DeploysTree) private readonly tree: DeploysTree,
    @inject(FS_THREADS) private readonly threads: FsThreads,
  ) {}

  /**
   * Which of `objects` (digest to size) neither the project's releases nor `uploads` hold,
   * and which the releases hold at another size (ObjectProbe, `within`). The releases are
   * listed first, whatever is asked: an object the store holds for another project is
   * missing as one it lacks is, in the same time and at the same place in the answer.
   */
  async probe(user: Username, project: ProjectName, uploads: string | undefined, objects: ReadonlyMap<string, number>): Promise<Probed> {
    const within = await this.releaseInodes(user, project);
    return this.threads.probeObjects(this.tree.objectsDir(user), uploads, objects, within);
  }

  private async releaseInodes(user: Username, project: ProjectName): Promise<Float64Array[]> {
    const dir = this.tree.projectDir(user, project);
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
    const lists = await Promise.all(names.filter((name) => ReleaseId.isReleaseId(name)).map((name) => this.inodesOf(join(dir, name))));
    return lists.filter((inodes) => inodes !== undefined);
  }

  /** The release's inodes, remembered or walked; undefined if it is gone. */
  private async inodesOf(release: string): Promise<Float64Array | undefined> {
    const identity = await directoryIdentity(release);
    if (identity === undefined) return undefined;
    const known = this.remembered.get(release);
    if (known?.identity === identity) {
      this.remembered.delete(release);
      this.remembered.set(release, known);
      return known.inodes;
    }
    const key = `${release}\n${identity}`;
    let walk = this.walking.get(key);
    if (walk === undefined) {
      walk = this.threads.releaseInodes(release).finally(() => this.walking.delete(key));
      this.walking.set(key, walk);
      const inodes = await walk;
      if (inodes) this.remember(release, identity, inodes);
    }
    return walk;
  }

  private remember(release: string, identity: string, inodes: Float64Array): void {
    this.forget(release);
    if (inodes.byteLength > REMEMBERED_INODES_BYTES_MAX) return;
    this.remembered.set(release, { identity, inodes });
    this.held += inodes.byteLength;
    for (const [oldest] of this.remembered) {
      if (this.held <= REMEMBERED_INODES_BYTES_MAX) break;
      this.forget(oldest);
    }
  }

  private forget(release: string): void {
    const known = this.remembered.get(release);
    if (known === undefined) return;
    this.remembered.delete(release);
    this.held -= known.inodes.byteLength;
  }
}
