import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, open, readdir, readlink, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { inject, injectable, type ServiceIdentifier } from 'inversify';
import type { ReleaseFs, StagedRelease } from '../../application/ports/release-fs.js';
import type { SessionObjects } from '../../application/ports/session-objects.js';
import type { ArchiveLimits } from '../../domain/archive-policy.js';
import { ArchiveRejected, ManifestRejected, MissingArchive, ObjectsRejected } from '../../domain/errors.js';
import type { Digest, ManifestFile } from '../../domain/manifest.js';
import type { ProjectName } from '../../domain/project-name.js';
import { ReleaseId } from '../../domain/release-id.js';
import { isResourceName } from '../../domain/resource-name.js';
import type { Username } from '../../domain/username.js';
import { LOGGER, type Logger } from '../log/logger.js';
import { ArchiveExtractor } from './archive-extractor.js';
import { fsyncDirectory, mkdirDurable, syncFilesystem } from './durability.js';
import { swapLink, temporaryLinkOf } from './link-swap.js';
import { treeBytes } from './tree-bytes.js';
import { TrashCollector } from './trash-collector.js';
import type { FsThreads } from './fs-threads.js';

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
export const ARCHIVE_EXTRACTOR = Symbol.for('sitedrop.ArchiveExtractor') as ServiceIdentifier<ArchiveExtractor>;
export const FS_THREADS = Symbol.for('sitedrop.FsThreads') as ServiceIdentifier<FsThreads>;

// Names no user or project can take (they must start with a letter or digit).
const STAGING = '.staging';
const TRASH = '.trash';
const OBJECTS = '.objects';
/** Incremental deploys' uploaded objects, a directory per session, shared by every replica. */
const SESSIONS = '.sessions';
/**
 * A staging area's new objects, under the same name in a directory of their own (so
 * that the staging directory holds staging areas only); start-up removes them too.
 */
const FRESH = '.fresh';
const freshObjects = (stagingDir: string): string => join(dirname(dirname(stagingDir)), FRESH, basename(stagingDir));
// '+' separates the replica's name: it cannot occur in one (hostname characters only).
const mine = (replica: string) => ({
  staging: `deploy+${replica}+`,
  trash: `${replica}+`,
  tempLink: temporaryLinkOf(replica),
});

const isMissing = (error: unknown): boolean => (error as NodeJS.ErrnoException).code === 'ENOENT';

/** Releases whose size is remembered; past this the oldest measurements are forgotten. */
const MEASURED_MAX = 10_000;

/**
 * The release tree on a local or shared POSIX filesystem. Staging and trash live
 * inside DEPLOYS_ROOT so that every move into or out of a release is one rename(2).
 */
@injectable()
export class NodeReleaseFs implements ReleaseFs, SessionObjects {
  private readonly stagingRoot: string;
  private readonly trashRoot: string;
  private readonly trash: TrashCollector;
  private readonly names: ReturnType<typeof mine>;
  private prepared: Promise<boolean> | undefined;
  /** Sizes of releases measured on disk, by path, with the identity of the directory measured. */
  private readonly measured = new Map<string, { identity: string; bytes: number }>();

  constructor(
    @inject(RELEASE_ROOTS) private readonly roots: ReleaseRoots,
    @inject(ARCHIVE_EXTRACTOR) private readonly extractor: ArchiveExtractor,
    @inject(FS_THREADS) private readonly threads: FsThreads,
    @inject(LOGGER) private readonly logger: Logger,
  ) {
    this.stagingRoot = join(roots.deploysRoot, STAGING);
    this.trashRoot = join(roots.deploysRoot, TRASH);
    this.names = mine(roots.replica);
    this.trash = new TrashCollector(this.trashRoot, this.names.trash, threads);
  }

  async stage(user: Username, archive: AsyncIterable<Uint8Array>, limits: ArchiveLimits, signal: AbortSignal): Promise<StagedRelease> {
    const needsChmod = await this.prepare();
    const dir = await mkdtemp(join(this.stagingRoot, this.names.staging));
    const started = performance.now();
    try {
      await mkdir(freshObjects(dir), { mode: 0o755 });
      const objects = { store: this.objectsDir(user), fresh: freshObjects(dir) };
      const extracted = await this.extractor.extract(archive, dir, objects, limits, needsChmod, signal);
      return await this.seal(dir, extracted, { user, compressedBytes: extracted.compressedBytes }, { unpack: performance.now() - started });
    } catch (error) {
      // The failure is what the client needs to hear; an area that cannot be moved now
      // (the same disk or permission trouble) stays in staging for start-up to remove.
      await this.throwAway(dir).catch(() => undefined);
      await this.throwAway(freshObjects(dir)).catch(() => undefined);
      throw error;
    }
  }

  async missing(user: Username, session: string | undefined, objects: ReadonlyMap<Digest, number>): Promise<Digest[]> {
    const uploads = session === undefined ? undefined : this.uploadsDir(session);
    const { missing, wrongSize } = await this.threads.probeObjects(this.objectsDir(user), uploads, objects);
    const lie = wrongSize[0];
    if (lie !== undefined) throw new ManifestRejected(`size does not match the object's: ${lie} is not ${objects.get(lie as Digest)} bytes`);
    return missing as Digest[];
  }

  async receive(user: Username, session: string, batch: AsyncIterable<Uint8Array>, expected: ReadonlyMap<Digest, number>, signal: AbortSignal): Promise<number> {
    const needsChmod = await this.prepare();
    // Unpacked as an archive is, into a staging area of its own; only the objects move
    // on, into the session's uploads, and only once every one of them has been checked.
    const dir = await mkdtemp(join(this.stagingRoot, this.names.staging));
    try {
      await mkdir(freshObjects(dir), { mode: 0o755 });
      const objects = { store: this.objectsDir(user), fresh: freshObjects(dir) };
      const limits = { maxFiles: expected.size, maxBytes: [...expected.values()].reduce((a, b) => a + b, 0) };
      const extracted = await this.extractor.extract(batch, dir, objects, limits, needsChmod, signal, expected).catch((error: unknown) => {
        if (error instanceof ArchiveRejected) throw new ObjectsRejected(error.reason);
        if (error instanceof MissingArchive) throw new ObjectsRejected('the batch is empty');
        throw error;
      });
      await syncFilesystem(dir);
      await this.threads.adoptObjects(freshObjects(dir), this.uploadsDir(session));
      return extracted.files;
    } finally {
      await this.throwAway(dir).catch(() => undefined);
      await this.throwAway(freshObjects(dir)).catch(() => undefined);
    }
  }

  async assemble(user: Username, session: string, files: readonly ManifestFile[]): Promise<StagedRelease> {
    const needsChmod = await this.prepare();
    const dir = await mkdtemp(join(this.stagingRoot, this.names.staging));
    const started = performance.now();
    try {
      await mkdir(freshObjects(dir), { mode: 0o755 });
      const objects = { store: this.objectsDir(user), fresh: freshObjects(dir), uploads: this.uploadsDir(session) };
      const built = await this.extractor.assemble(files, dir, objects, needsChmod);
      return await this.seal(dir, built, { user, session }, { assemble: performance.now() - started });
    } catch (error) {
      await this.throwAway(dir).catch(() => undefined);
      await this.throwAway(freshObjects(dir)).catch(() => undefined);
      throw error;
    }
  }

  /**
   * Makes the staged files readable by the web server and safe from a crash, and
   * logs the staging's own phases (the deploy's line has the whole staging's time).
   */
  private async seal(dir: string, made: { files: number; bytes: number }, fields: Record<string, unknown>, phasesMs: Record<string, number>): Promise<StagedRelease> {
    await chmod(dir, 0o755); // mkdtemp makes it 0700; the web server must read the release root
    const flushing = performance.now();
    await syncFilesystem(dir);
    const flush = performance.now() - flushing;
    const rounded = Object.fromEntries(Object.entries({ ...phasesMs, flush }).map(([phase, ms]) => [phase, Math.round(ms)]));
    this.logger.info('staged', { ...fields, files: made.files, bytes: made.bytes, phasesMs: rounded });
    return { handle: dir, files: made.files, bytes: made.bytes };
  }

  async removeUploads(session: string): Promise<void> {
    await this.throwAway(this.uploadsDir(session));
  }

  async sessionsWithUploads(): Promise<string[]> {
    await this.prepare();
    return (await readdir(join(this.roots.deploysRoot, SESSIONS))).filter((name) => /^[0-9a-f]{32}$/.test(name));
  }

  async discard(staged: StagedRelease): Promise<void> {
    await this.throwAway(staged.handle);
    await this.throwAway(freshObjects(staged.handle));
  }

  async commit(staged: StagedRelease, user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    const projectDir = this.projectDir(user, project);
    await mkdirDurable(projectDir);
    // The release's new bytes join the store only now, under the project's lock: a
    // deploy refused before this point leaves the store as it was. The release holds its
    // own links, so a store entry lost in a crash costs only sharing, never a file.
    await this.threads.adoptObjects(freshObjects(staged.handle), this.objectsDir(user));
    await rename(staged.handle, join(projectDir, id));
    await fsyncDirectory(projectDir);
    await this.throwAway(freshObjects(staged.handle));
  }

  async activate(user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    await swapLink(join(this.roots.docsRoot, user), project, `${join(this.projectDir(user, project), id)}/`, this.roots.replica);
  }

  async releases(user: Username, project: ProjectName): Promise<ReleaseId[]> {
    try {
      const entries = await readdir(this.projectDir(user, project), { withFileTypes: true });
      return entries.filter((e) => e.isDirectory() && ReleaseId.isReleaseId(e.name)).map((e) => e.name as ReleaseId).sort();
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
  }

  async liveRelease(user: Username, project: ProjectName): Promise<ReleaseId | undefined> {
    try {
      const target = basename(await readlink(join(this.roots.docsRoot, user, project)));
      return ReleaseId.isReleaseId(target) ? target : undefined;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async removeRelease(user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    await this.throwAway(join(this.projectDir(user, project), id));
    this.trash.collectObjects(this.objectsDir(user));
  }

  async releaseBytes(user: Username, project: ProjectName, id: ReleaseId): Promise<number> {
    const dir = join(this.projectDir(user, project), id);
    let identity: string;
    try {
      // A release never changes once committed, but one removed (by any replica) and
      // committed again under the same id is another directory: its inode and ctime differ.
      const info = await stat(dir, { bigint: true });
      identity = `${info.dev}:${info.ino}:${info.ctimeNs}`;
    } catch (error) {
      if (isMissing(error)) return 0;
      throw error;
    }
    const known = this.measured.get(dir);
    if (known?.identity === identity) return known.bytes;
    const bytes = await treeBytes(dir);
    this.measured.delete(dir);
    this.measured.set(dir, { identity, bytes });
    if (this.measured.size > MEASURED_MAX) this.measured.delete(this.measured.keys().next().value!);
    return bytes;
  }

  async projects(user: Username): Promise<ProjectName[]> {
    const names = new Set<string>();
    for (const root of [this.roots.deploysRoot, this.roots.docsRoot]) {
      try {
        for (const name of await readdir(join(root, user))) if (isResourceName(name)) names.add(name);
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
    }
    return [...names].sort() as ProjectName[];
  }

  async removeProject(user: Username, project: ProjectName): Promise<void> {
    try {
      await unlink(join(this.roots.docsRoot, user, project));
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
    // A project that never went live has no link directory to flush.
    await fsyncDirectory(join(this.roots.docsRoot, user)).catch((error: unknown) => {
      if (!isMissing(error)) throw error;
    });
    await this.throwAway(this.projectDir(user, project));
    this.trash.collectObjects(this.objectsDir(user));
  }

  async removeUserFiles(user: Username): Promise<void> {
    await this.prepare();
    // The links go first, so the sites stop being served before their files go.
    await this.threads.remove(join(this.roots.docsRoot, user));
    await this.throwAway(join(this.roots.deploysRoot, user));
  }

  async removeLeftovers(): Promise<string[]> {
    await this.prepare();
    const removed: string[] = [];
    for (const root of [this.stagingRoot, join(this.roots.deploysRoot, FRESH)]) {
      for (const name of await readdir(root)) {
        if (!name.startsWith(this.names.staging)) continue;
        const path = join(root, name);
        await this.threads.remove(path);
        if (root === this.stagingRoot) removed.push(path);
      }
    }
    removed.push(...(await this.trash.emptyNow()));
    for (const user of await readdir(this.roots.docsRoot, { withFileTypes: true })) {
      if (!user.isDirectory()) continue;
      for (const name of await readdir(join(this.roots.docsRoot, user.name))) {
        if (!this.names.tempLink.test(name)) continue;
        const path = join(this.roots.docsRoot, user.name, name);
        await unlink(path);
        removed.push(path);
      }
    }
    return removed;
  }

  /** A session id is the service's own (hex), never a client's path. */
  private uploadsDir(session: string): string {
    if (!/^[0-9a-f]{32}$/.test(session)) throw new Error(`not a session id: ${session}`);
    return join(this.roots.deploysRoot, SESSIONS, session);
  }

  private projectDir(user: Username, project: ProjectName): string {
    return join(this.roots.deploysRoot, user, project);
  }

  /** The user's content-addressed store (docs/content-store.md); no project name starts with a dot. */
  private objectsDir(user: Username): string {
    return join(this.roots.deploysRoot, user, OBJECTS);
  }

  /** Waits for the background deletions queued so far; returns any that failed. */
  settle(): Promise<string[]> {
    return this.trash.drain();
  }

  /**
   * Renames a tree into the trash, where the collector deletes it in the background: it
   * stops being a release (or a user's files) at once, and a crash part-way leaves a
   * half-deleted tree only in the trash (emptied at start-up), never a partial release.
   */
  private async throwAway(path: string): Promise<void> {
    const doomed = join(this.trashRoot, `${this.names.trash}${basename(path)}+${randomBytes(6).toString('hex')}`);
    try {
      await rename(path, doomed);
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    this.trash.collect(doomed);
  }

  /**
   * Creates the roots once, and finds out whether the process umask would strip the
   * 0644/0755 modes a web server needs; only then does the worker chmod each entry.
   */
  private prepare(): Promise<boolean> {
    this.prepared ??= (async () => {
      // mkdir -p of the roots: on shared storage another replica may create them first.
      for (const dir of [this.roots.docsRoot, this.roots.deploysRoot, this.stagingRoot, join(this.roots.deploysRoot, FRESH), join(this.roots.deploysRoot, SESSIONS), this.trashRoot]) {
        await mkdir(dir, { recursive: true, mode: 0o755 });
      }
      const probe = join(this.stagingRoot, `.umask-probe+${this.roots.replica}+${process.pid}`);
      const handle = await open(probe, 'w', 0o644);
      await handle.close();
      const mode = (await stat(probe)).mode & 0o777;
      await unlink(probe);
      return mode !== 0o644;
    })();
    this.prepared.catch(() => (this.prepared = undefined));
    return this.prepared;
  }
}
