import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { inject, injectable } from 'inversify';
import type { ProjectName } from '../../../domain/project-name.js';
import { ReleaseId } from '../../../domain/release-id.js';
import type { Username } from '../../../domain/username.js';
import { DeploysTree, directoryIdentity } from '../layout/deploys-tree.js';
import type { Probed } from '../threads/fs-protocol.js';
import { WRITER_TASKS, type WriterTasks } from '../threads/writer-tasks.js';
import { isMissing } from '../threads/fs-errors.js';
import { ProjectInodes } from './project-inodes.js';

/**
 * Bytes of projects' inodes held at most (project-inodes.ts): a 40,000-file site with 25
 * releases (five kept, twenty previews) takes about 1 MB. Past it the least recently used
 * projects go, and their releases are walked again when next asked about.
 */
export const REMEMBERED_INODES_BYTES_MAX = 8 * 1024 * 1024;

/**
 * Which objects of a user's store a project's releases hold, for a deploy key's session. A
 * release's files are hard links into the store, so an object is the project's if its
 * inode is one of a release's files': live, older, or a preview's (all under the
 * project's directory). Each release's inodes are listed once (a walk of its files on the
 * writer thread, 40,000 lstats in some 100 ms) and kept with the identity of its
 * directory, a committed release never changing; a release gone takes its inodes with it.
 * Nothing here depends on the objects asked about, so the time taken says nothing of what
 * other projects hold.
 *
 * Only ever on the safe side: a release committed meanwhile, or an object whose stored
 * copy is not the one a release links (an EMLINK copy, a store entry another deploy
 * replaced with the same bytes), counts as not the project's, which costs an upload.
 */
@injectable()
export class ProjectContent {
  /** By project directory, in order of use (a Map iterates in insertion order). */
  private readonly projects = new Map<string, ProjectInodes>();
  /** Walks under way, by release directory and identity: sessions opened at once walk a release once. */
  private readonly walking = new Map<string, Promise<Float64Array | undefined>>();

  constructor(
    @inject(DeploysTree) private readonly tree: DeploysTree,
    @inject(WRITER_TASKS) private readonly tasks: WriterTasks,
  ) {}

  /**
   * Which of `objects` (digest to size) neither the project's releases nor `uploads` hold,
   * and which the releases hold at another size (ObjectProbe, `within`). The releases are
   * listed first, whatever is asked: an object the store holds for another project is
   * missing as one it lacks is, in the same time and at the same place in the answer.
   */
  async probe(user: Username, project: ProjectName, uploads: string | undefined, objects: ReadonlyMap<string, number>): Promise<Probed> {
    const within = await this.releaseInodes(this.tree.projectDir(user, project));
    return this.tasks.probeObjects(this.tree.objectsDir(user), uploads, objects, [within]);
  }

  /** Every inode the project's releases' files have, sorted. */
  private async releaseInodes(dir: string): Promise<Float64Array> {
    const releases = await releasesIn(dir);
    const inodes = this.projects.get(dir) ?? new ProjectInodes();
    // Kept at once: a session opened meanwhile adds to the same one.
    this.projects.set(dir, inodes);
    for (const [name, identity] of inodes.known()) if (releases.get(name) !== identity) inodes.remove(name);
    await Promise.all(
      [...releases].map(async ([name, identity]) => {
        if (inodes.known().get(name) === identity) return;
        const walked = await this.walk(join(dir, name), identity);
        if (walked) inodes.add(name, identity, walked);
      }),
    );
    this.keep(dir, inodes);
    return inodes.held();
  }

  private walk(release: string, identity: string): Promise<Float64Array | undefined> {
    const key = `${release}\n${identity}`;
    let walk = this.walking.get(key);
    if (walk === undefined) {
      walk = this.tasks.releaseInodes(release).finally(() => this.walking.delete(key));
      this.walking.set(key, walk);
    }
    return walk;
  }

  /** Keeps the project's inodes as the most recently used, within REMEMBERED_INODES_BYTES_MAX. */
  private keep(dir: string, inodes: ProjectInodes): void {
    this.projects.delete(dir);
    this.projects.set(dir, inodes);
    let held = 0;
    for (const kept of this.projects.values()) held += kept.bytes;
    for (const [oldest, kept] of this.projects) {
      if (held <= REMEMBERED_INODES_BYTES_MAX) break;
      this.projects.delete(oldest);
      held -= kept.bytes;
    }
  }
}

/** The project's releases, by directory name, with each directory's identity; none if there is no project. */
async function releasesIn(dir: string): Promise<Map<string, string>> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((name) => ReleaseId.isReleaseId(name));
  } catch (error) {
    if (isMissing(error)) return new Map();
    throw error;
  }
  const identities = await Promise.all(names.map((name) => directoryIdentity(join(dir, name))));
  return new Map(names.flatMap((name, i) => (identities[i] === undefined ? [] : [[name, identities[i]]])));
}
