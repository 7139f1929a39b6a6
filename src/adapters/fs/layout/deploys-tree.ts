import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import { basename, join } from 'node:path';
import { inject, injectable, optional, type ServiceIdentifier } from 'inversify';
import type { ProjectName } from '../../../domain/project-name.js';
import { isResourceName } from '../../../domain/resource-name.js';
import type { Username } from '../../../domain/username.js';
import { WRITER_TASKS, type WriterTasks } from '../threads/writer-tasks.js';
import { TrashCollector } from '../store/trash-collector.js';
import { originOf } from './directory-origin.js';
import { isMissing } from '../threads/fs-errors.js';

/** The ids KyselyDeploySessions makes: 16 random bytes in hex. */
const SESSION_ID = /^[0-9a-f]{32}$/;

export interface ReleaseRoots {
  /** Live symlinks: <docsRoot>/<user>/<project>. */
  readonly docsRoot: string;
  /** Releases: <deploysRoot>/<user>/<project>/<release>/. */
  readonly deploysRoot: string;
  /**
   * This replica's name on shared storage: its staging areas, trash and temporary links
   * carry it, so a replica starting up removes its own leftovers and never another's
   * work in progress.
   */
  readonly replica: string;
}

export const RELEASE_ROOTS = Symbol.for('sitedrop.ReleaseRoots') as ServiceIdentifier<ReleaseRoots>;

/** Resolves when background work may take the writer: no deploy for a while, or waited long enough. */
export type BackgroundQuiet = () => Promise<void>;
export const BACKGROUND_QUIET = Symbol.for('sitedrop.BackgroundQuiet') as ServiceIdentifier<BackgroundQuiet>;

// Names no user or project can take (they must start with a letter or digit).
const STAGING = '.staging';
const TRASH = '.trash';
const OBJECTS = '.objects';
/** Incremental deploys' uploaded objects, a directory per session, shared by every replica. */
const SESSIONS = '.sessions';
/** Lists of published releases' new objects the store is still to adopt (store-adoptions.ts). */
const ADOPTIONS = '.adopt';
/**
 * Beside each staging area, under its name, a directory of its own for its writer's
 * temporary links (so that the staging directory holds staging areas only); and scratch
 * directories made whole before they are renamed into place. Start-up removes what a crash left.
 */
const FRESH = '.fresh';


/** A staging area: where its files go, and a directory of its own beside it for its writer's temporary links. */
export interface StagingArea {
  readonly dir: string;
  readonly fresh: string;
  /** Whether the process umask would strip the modes the web server needs, so each entry is chmod'ed. */
  readonly chmod: boolean;
}

/**
 * DEPLOYS_ROOT as staging, the release store and session objects share it: where each
 * thing lives, staging areas, and the trash every removal goes through. Staging and
 * trash live inside DEPLOYS_ROOT so that every move into or out of a release is one
 * rename(2).
 */
@injectable()
export class DeploysTree {
  private readonly stagingRoot: string;
  private readonly freshRoot: string;
  private readonly sessionsRoot: string;
  private readonly trashRoot: string;
  readonly adoptionsRoot: string;
  // '+' separates the replica's name: it cannot occur in one (hostname characters only).
  private readonly stagingPrefix: string;
  private readonly trash: TrashCollector;
  private rootsMade: Promise<boolean> | undefined;

  constructor(
    @inject(RELEASE_ROOTS) readonly roots: ReleaseRoots,
    @inject(WRITER_TASKS) private readonly tasks: WriterTasks,
    @inject(BACKGROUND_QUIET) @optional() quiet?: BackgroundQuiet,
  ) {
    this.stagingRoot = join(roots.deploysRoot, STAGING);
    this.freshRoot = join(roots.deploysRoot, FRESH);
    this.sessionsRoot = join(roots.deploysRoot, SESSIONS);
    this.trashRoot = join(roots.deploysRoot, TRASH);
    this.adoptionsRoot = join(roots.deploysRoot, ADOPTIONS);
    this.stagingPrefix = `deploy+${roots.replica}+`;
    this.trash = new TrashCollector(this.trashRoot, `${roots.replica}+`, tasks, quiet);
  }

  projectDir(user: Username, project: ProjectName): string {
    return join(this.roots.deploysRoot, user, project);
  }

  /** The user's content-addressed store (docs/content-store.md); no project name starts with a dot. */
  objectsDir(user: Username): string {
    return join(this.roots.deploysRoot, user, OBJECTS);
  }

  /** A session id is the service's own (hex), never a client's path. */
  uploadsDir(session: string): string {
    if (!SESSION_ID.test(session)) throw new Error(`not a session id: ${session}`);
    return join(this.sessionsRoot, session);
  }

  async sessionsWithUploads(): Promise<string[]> {
    await this.ensureRoots();
    return (await readdir(this.sessionsRoot)).filter((name) => SESSION_ID.test(name));
  }

  /** A new path beside the staging areas' own directories, for a directory made whole there and then renamed into place; start-up removes what a crash left. */
  scratchPath(): string {
    return join(this.freshRoot, `${this.stagingPrefix}scratch-${randomBytes(6).toString('hex')}`);
  }

  /** The directory of the staging area `dir`'s own, beside it, for its writer's temporary links. */
  freshObjectsOf(dir: string): string {
    return join(this.freshRoot, basename(dir));
  }

  async openStagingArea(): Promise<StagingArea> {
    const chmod = await this.umaskStripsModes();
    const dir = await mkdtemp(join(this.stagingRoot, this.stagingPrefix));
    const fresh = this.freshObjectsOf(dir);
    try {
      await mkdir(fresh, { mode: 0o755 });
    } catch (error) {
      await this.throwAway(dir).catch(() => undefined);
      throw error;
    }
    return { dir, fresh, chmod };
  }

  /**
   * Throws a staging area away with its own directory beside it, both tried; what cannot be moved now
   * stays for start-up to remove.
   */
  async throwAwayStagingArea(dir: string): Promise<void> {
    const failures: unknown[] = [];
    for (const path of [dir, this.freshObjectsOf(dir)]) await this.throwAway(path).catch((error: unknown) => failures.push(error));
    if (failures.length > 0) throw failures[0];
  }

  /** Removes this replica's staging areas, the directories beside them and its scratch, which only a crash leaves; returns the areas. */
  async removeStagingAreas(): Promise<string[]> {
    await this.ensureRoots();
    const removed: string[] = [];
    for (const root of [this.stagingRoot, this.freshRoot]) {
      for (const name of await readdir(root)) {
        if (!name.startsWith(this.stagingPrefix)) continue;
        const path = join(root, name);
        await this.tasks.remove(path);
        if (root === this.stagingRoot) removed.push(path);
      }
    }
    return removed;
  }

  /**
   * Renames a tree into the trash, where the collector deletes it in the background: it
   * stops being a release (or a user's files) at once, and a crash part-way leaves a
   * half-deleted tree only in the trash (emptied at start-up), never a partial release.
   */
  async throwAway(path: string): Promise<void> {
    const doomed = join(this.trashRoot, `${this.roots.replica}+${basename(path)}+${randomBytes(6).toString('hex')}`);
    try {
      await rename(path, doomed);
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    this.trash.collect(doomed);
  }

  /** Queues the collection of the objects of the user's store that no release links any more, once deploys are quiet. */
  collectObjects(user: Username): void {
    this.trash.collectObjectsWhenQuiet(this.objectsDir(user));
  }

  /**
   * A crash leaves objects no release links: between a deploy's adoption and its
   * release's rename, or with a pruned release's trash half deleted. The writer collects
   * every user's store once, in the background, after the removals queued so far, and
   * then renames what is still under an old name (a store made before base32 names, or
   * a renaming a crash cut short: object-names.ts); the service does not wait for either
   * to listen. Collected first, so that no garbage is renamed.
   */
  async collectAndMigrateEveryStore(): Promise<void> {
    for (const user of await readdir(this.roots.deploysRoot, { withFileTypes: true })) {
      if (!user.isDirectory() || !isResourceName(user.name)) continue;
      // Now, not when quiet: the renaming after it must find no garbage.
      this.trash.collectObjects(this.objectsDir(user.name as Username));
      this.trash.migrateObjectNames(this.objectsDir(user.name as Username));
    }
  }

  /** Empties whatever is in this replica's trash now (a crash's leftovers); returns what it removed. */
  async emptyTrash(): Promise<string[]> {
    await this.ensureRoots();
    return this.trash.emptyNow();
  }

  /** Waits for the background deletions queued so far; returns any that failed. */
  settle(): Promise<string[]> {
    return this.trash.drain();
  }

  /** Waits for the background deletions and collections queued so far, their failures left for settle(). */
  idle(): Promise<void> {
    return this.trash.idle();
  }

  /** Creates the roots, once; every method that lists or writes under them waits for it. */
  async ensureRoots(): Promise<void> {
    await this.umaskStripsModes();
  }

  /**
   * Whether the process umask strips the 0644/0755 modes a web server needs, so that the
   * writer must chmod each entry; found out once, with the roots created first.
   */
  umaskStripsModes(): Promise<boolean> {
    this.rootsMade ??= (async () => {
      // mkdir -p of the roots: on shared storage another replica may create them first.
      for (const dir of [this.roots.docsRoot, this.roots.deploysRoot, this.stagingRoot, this.freshRoot, this.sessionsRoot, this.trashRoot, this.adoptionsRoot]) {
        await mkdir(dir, { recursive: true, mode: 0o755 });
      }
      // Named as a staging area: one a crash leaves goes with them at the next start.
      const probe = join(this.stagingRoot, `${this.stagingPrefix}umask-probe-${process.pid}`);
      const handle = await open(probe, 'w', 0o644);
      await handle.close();
      const mode = (await stat(probe)).mode & 0o777;
      await unlink(probe);
      return mode !== 0o644;
    })();
    this.rootsMade.catch(() => (this.rootsMade = undefined));
    return this.rootsMade;
  }
}

/**
 * What tells a release directory from another made under the same path, or from itself
 * before it changed: one removed (by any replica) and committed again under the same id
 * is another directory, with another inode and ctime; a release's only change once
 * committed, its compressed siblings (precompress/), changes its ctime. Undefined if
 * there is none.
 */
export function directoryIdentity(dir: string): Promise<string | undefined> {
  return describeDirectory(dir, (info) => `${info.dev}:${info.ino}:${info.ctimeNs}`);
}

/** The directory's origin (directory-origin.ts), or undefined if there is none. */
export function directoryOrigin(dir: string): Promise<string | undefined> {
  return describeDirectory(dir, originOf);
}

/** `describe` of the directory's stat, or undefined if there is none. */
async function describeDirectory(dir: string, describe: (info: BigIntStats) => string): Promise<string | undefined> {
  try {
    return describe(await stat(dir, { bigint: true }));
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}
