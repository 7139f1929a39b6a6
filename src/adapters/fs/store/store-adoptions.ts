import { readdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inject, injectable } from 'inversify';
import type { ProjectName } from '../../../domain/project-name.js';
import { ReleaseId } from '../../../domain/release-id.js';
import { isResourceName } from '../../../domain/resource-name.js';
import type { Username } from '../../../domain/username.js';
import { LOGGER, type Logger } from '../../log/logger.js';
import { DeploysTree } from '../layout/deploys-tree.js';
import { isMissing } from '../threads/fs-errors.js';
import { WRITER_TASKS, type WriterTasks } from '../threads/writer-tasks.js';

/**
 * A release's new files (a tarball's, or the uploads an assembly linked) join the user's
 * store after the deploy has answered, one link each from the release on the writer
 * (write/new-objects.ts, ReleaseAdoption): the deploy writes each new file once, as tar
 * does, and the store takes only bytes a release holds, flushed with it. Until the commit they
 * are held by staging area; just before the area is renamed into its release they are listed
 * in DEPLOYS_ROOT/.adopt under that release's name and the area's inode, so that a start-up
 * finishes what a crash cut at any instant after the rename (a list whose release never
 * came, or is another directory, is dropped). A
 * deploy of the same user waits for it first (`settled`): it would write those bytes again.
 */
@injectable()
export class StoreAdoptions {
  private readonly staged = new Map<string, Uint8Array>();
  /** By staging area, the list written for the release it is becoming. */
  private readonly listed = new Map<string, string>();
  /** The lists this process is working through: a resume leaves them to it. */
  private readonly lists = new Set<string>();
  /** By store, the adoptions under way. */
  private readonly running = new Map<string, Set<Promise<void>>>();

  constructor(
    @inject(DeploysTree) private readonly tree: DeploysTree,
    @inject(WRITER_TASKS) private readonly tasks: WriterTasks,
    @inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** The staging area `handle` holds these new objects (packed), none of them in the store yet. */
  stage(handle: string, objects: Uint8Array): void {
    if (objects.length > 0) this.staged.set(handle, objects);
  }

  /** The staging area was thrown away: its objects go with it, and so does a list written for it. */
  async forget(handle: string): Promise<void> {
    this.staged.delete(handle);
    const list = this.listed.get(handle);
    this.listed.delete(handle);
    // Never in the way of the deploy's own failure: a list left behind is dropped at start-up.
    if (list !== undefined) await unlinkIfThere(list).catch((error: unknown) => this.logger.warn("removing a discarded release's list of new objects failed", { error: (error as Error).message }));
  }

  /**
   * The staging area `handle` is about to be renamed into `project`'s release `id`: its new
   * objects are listed under that release first. Never throws; a failure costs only the
   * sharing of those bytes.
   */
  async list(handle: string, user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    const objects = this.staged.get(handle);
    if (objects === undefined) return;
    try {
      // Named by the area's inode, which the rename keeps: should the rename never come, another
      // release made under the same id (another replica's, the same second) is not this one.
      const { ino } = await stat(handle);
      const list = join(this.tree.adoptionsRoot, `${this.tree.roots.replica}+${user}+${project}+${id}+${ino}`);
      // Not flushed: the list is lost only with power, which costs those bytes' sharing, never a file.
      await writeFile(list, objects);
      this.listed.set(handle, list);
    } catch (error) {
      this.staged.delete(handle);
      this.logger.warn("listing a release's new objects for the store failed", { user, error: (error as Error).message });
    }
  }

  /** The staging area listed as release `id` is now that release: its objects are adopted in the background. */
  adopt(handle: string, user: Username, project: ProjectName, id: ReleaseId): void {
    const objects = this.staged.get(handle);
    const list = this.listed.get(handle);
    this.staged.delete(handle);
    this.listed.delete(handle);
    if (objects === undefined || list === undefined) return;
    this.track(user, () => this.run(list, user, project, id, objects));
  }

  /** Resolves once no adoption is under way (tests, shutdown). */
  async idle(): Promise<void> {
    await Promise.all([...this.running.values()].flatMap((running) => [...running]));
  }

  /** Resolves once no adoption into `user`'s store is under way. */
  async settled(user: Username): Promise<void> {
    const running = this.running.get(this.tree.objectsDir(user));
    if (running) await Promise.all(running);
  }

  /** Start-up: finishes the adoptions a crash cut, this replica's; returns their lists. */
  async resume(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.tree.adoptionsRoot);
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
    const resumed: string[] = [];
    for (const name of names) {
      const [replica, user, project, id, ino, ...rest] = name.split('+');
      if (replica !== this.tree.roots.replica) continue;
      const list = join(this.tree.adoptionsRoot, name);
      if (this.lists.has(list)) continue;
      if (rest.length > 0 || !isResourceName(user ?? '') || !isResourceName(project ?? '') || !ReleaseId.isReleaseId(id ?? '') || !/^[0-9]+$/.test(ino ?? '0')) {
        await unlink(list);
        continue;
      }
      // A list of the release its area was to become: not of another made under that id since
      // (a list without an inode was written after its rename, so its release is its own).
      if (ino !== undefined && !(await this.isRelease(user as Username, project as ProjectName, id as ReleaseId, ino))) {
        await unlinkIfThere(list);
        continue;
      }
      let objects: Uint8Array;
      try {
        objects = new Uint8Array(await readFile(list));
      } catch (error) {
        if (isMissing(error)) continue; // finished meanwhile
        throw error;
      }
      await this.run(list, user as Username, project as ProjectName, id as ReleaseId, objects);
      resumed.push(list);
    }
    return resumed;
  }

  private async isRelease(user: Username, project: ProjectName, id: ReleaseId, ino: string): Promise<boolean> {
    const found = await stat(join(this.tree.projectDir(user, project), id)).catch((error: unknown) => {
      if (isMissing(error)) return undefined;
      throw error;
    });
    return found !== undefined && String(found.ino) === ino;
  }

  private async run(list: string, user: Username, project: ProjectName, id: ReleaseId, objects: Uint8Array): Promise<void> {
    this.lists.add(list);
    try {
      // A release that never came (a crash between the list and the rename) ends the task at its first file.
      await this.tasks.adoptReleaseObjects(join(this.tree.projectDir(user, project), id), this.tree.objectsDir(user), objects);
      await unlinkIfThere(list);
    } finally {
      this.lists.delete(list);
    }
  }

  private track(user: Username, work: () => Promise<void>): void {
    const store = this.tree.objectsDir(user);
    const running = this.running.get(store) ?? new Set<Promise<void>>();
    this.running.set(store, running);
    const done: Promise<void> = work()
      .catch((error: unknown) => this.logger.warn("adopting a release's new objects into the store failed", { user, error: (error as Error).message }))
      .finally(() => {
        running.delete(done);
        if (running.size === 0 && this.running.get(store) === running) this.running.delete(store);
      });
    running.add(done);
  }
}

async function unlinkIfThere(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
}
