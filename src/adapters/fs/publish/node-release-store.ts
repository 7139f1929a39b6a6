import { readdir, readlink, rename, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { inject, injectable } from 'inversify';
import type { ReleaseStore } from '../../../application/ports/release-store.js';
import type { StagedRelease } from '../../../application/ports/staging.js';
import { PackedManifest } from '../../../domain/packed-manifest.js';
import type { ProjectName } from '../../../domain/project-name.js';
import { ReleaseId } from '../../../domain/release-id.js';
import { isResourceName } from '../../../domain/resource-name.js';
import type { Username } from '../../../domain/username.js';
import { DeploysTree, directoryIdentity, directoryOrigin } from '../layout/deploys-tree.js';
import { fsyncDirectory, mkdirDurable } from '../layout/durability.js';
import { WRITER_TASKS, type WriterTasks } from '../threads/writer-tasks.js';
import { isMissing } from '../threads/fs-errors.js';
import { swapLink, temporaryLinkOf } from './link-swap.js';
import { KeptManifests } from '../store/kept-manifests.js';
import { ManifestMemory } from '../store/manifest-memory.js';
import { StoreAdoptions } from '../store/store-adoptions.js';
import { treeBytes } from '../layout/tree-bytes.js';
import { ARCHIVE_EXTRACTOR, type ArchiveExtractor } from '../threads/archive-extractor.js';

/** Releases whose size is remembered; past this the oldest measurements are forgotten. */
const MEASURED_MAX = 10_000;

/**
 * Releases in DEPLOYS_ROOT/<user>/<project>/<release>/, their files hard links into the
 * user's store, and the live symlinks DOCS_ROOT/<user>/<project>, on a local or shared
 * POSIX filesystem.
 */
@injectable()
export class NodeReleaseStore implements ReleaseStore {
  private readonly docsRoot: string;
  /** Sizes of releases measured on disk, by path, with the identity of the directory measured. */
  private readonly measured = new Map<string, { identity: string; bytes: number }>();

  constructor(
    @inject(DeploysTree) private readonly tree: DeploysTree,
    @inject(WRITER_TASKS) private readonly tasks: WriterTasks,
    @inject(ManifestMemory) private readonly manifests: ManifestMemory,
    @inject(StoreAdoptions) private readonly adoptions: StoreAdoptions,
    @inject(KeptManifests) private readonly kept: KeptManifests,
    @inject(ARCHIVE_EXTRACTOR) private readonly extractor: ArchiveExtractor,
  ) {
    this.docsRoot = tree.roots.docsRoot;
  }

  async commit(staged: StagedRelease, user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    const projectDir = this.tree.projectDir(user, project);
    await mkdirDurable(projectDir);
    // A release's new bytes join the store after its publish (store-adoptions.ts: a tarball's
    // new files, a session's uploads), so a deploy refused before then leaves the store as it was.
    // The release holds its own links, so a store entry lost in a crash costs only sharing, never a file.
    const manifest = this.manifests.takeStaged(staged.handle);
    const dir = join(projectDir, id);
    // Listed before the rename, so that no instant after it leaves the release's new objects unlisted.
    await this.adoptions.list(staged.handle, user, project, id);
    await rename(staged.handle, dir);
    await fsyncDirectory(projectDir);
    // A tarball's writer recorded its files beside the area: out before that directory goes.
    if (!manifest) await this.kept.keepWritten(this.tree.freshObjectsOf(staged.handle), user, project);
    await this.tree.throwAway(this.tree.freshObjectsOf(staged.handle));
    this.adoptions.adopt(staged.handle, user, project, id);
    // Its files were just put there from this manifest: the next deploy relative to it need not walk them.
    const identity = manifest && (await directoryOrigin(dir));
    if (manifest && identity) {
      // The next deploy relative to it compares its digest first: worked out now, off the
      // main thread, and kept with it for the first after a restart.
      const digest = this.extractor.canonicalDigest(manifest).then((known) => manifest.knowDigest(known), () => undefined);
      this.know(user, project, id, identity, manifest, digest);
    }
  }

  /**
   * Remembers release `id`'s manifest, and keeps it on disk in the background (a failure
   * costs a walk), with its digest if known by then or once `digest` settles.
   */
  private know(user: Username, project: ProjectName, id: ReleaseId, identity: string, manifest: PackedManifest, digest?: Promise<unknown>): void {
    this.manifests.remember(join(this.tree.projectDir(user, project), id), identity, manifest);
    void this.kept.keep(user, project, id, identity, manifest, digest);
  }

  async activate(user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    await swapLink(join(this.docsRoot, user), project, `${join(this.tree.projectDir(user, project), id)}/`, this.tree.roots.replica);
  }

  async releases(user: Username, project: ProjectName): Promise<ReleaseId[]> {
    try {
      const entries = await readdir(this.tree.projectDir(user, project), { withFileTypes: true });
      return entries.filter((e) => e.isDirectory() && ReleaseId.isReleaseId(e.name)).map((e) => e.name as ReleaseId).sort();
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
  }

  async liveRelease(user: Username, project: ProjectName): Promise<ReleaseId | undefined> {
    try {
      const target = basename(await readlink(join(this.docsRoot, user, project)));
      return ReleaseId.isReleaseId(target) ? target : undefined;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async removeRelease(user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    const dir = join(this.tree.projectDir(user, project), id);
    this.manifests.forget(dir);
    // In the background, in turn after a keep of the project that may still wait for its
    // new release's digest: a deploy that prunes need not wait for that.
    void this.kept.forget(user, project, id, await directoryOrigin(dir));
    await this.tree.throwAway(dir);
    this.tree.collectObjects(user);
  }

  async releaseBytes(user: Username, project: ProjectName, id: ReleaseId): Promise<number> {
    const dir = join(this.tree.projectDir(user, project), id);
    const identity = await directoryIdentity(dir);
    if (identity === undefined) return 0;
    const known = this.measured.get(dir);
    if (known?.identity === identity) return known.bytes;
    const bytes = await treeBytes(dir);
    this.measured.delete(dir);
    this.measured.set(dir, { identity, bytes });
    if (this.measured.size > MEASURED_MAX) this.measured.delete(this.measured.keys().next().value!);
    return bytes;
  }

  async releasePackedManifest(user: Username, project: ProjectName, id: ReleaseId): Promise<PackedManifest | undefined> {
    const dir = join(this.tree.projectDir(user, project), id);
    // Its origin, not its ctime: the siblings precompression adds after the publish change that, never the files.
    const identity = await directoryOrigin(dir);
    if (identity === undefined) return undefined;
    const remembered = this.manifests.recall(dir, identity);
    if (remembered) return remembered;
    const kept = await this.kept.read(user, project, id, identity);
    if (kept instanceof PackedManifest) {
      this.manifests.remember(dir, identity, kept);
      return kept;
    }
    // Walked, its files are found in the store by inode: those not adopted yet would be
    // read and hashed. A tarball writer's records of it name every file already (records
    // the writer then finds wanting are walked without that wait: as right, only slower).
    if (kept === undefined) await this.adoptions.settled(user);
    // Derived from the records or the store's names (docs/content-store.md), and kept packed for the next time.
    const packed = await this.tasks.releaseManifest(dir, this.tree.objectsDir(user), kept && this.kept.path(user, project));
    if (packed) this.know(user, project, id, identity, packed);
    return packed;
  }

  async projects(user: Username): Promise<ProjectName[]> {
    const names = new Set<string>();
    for (const root of [this.tree.roots.deploysRoot, this.docsRoot]) {
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
      await unlink(join(this.docsRoot, user, project));
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
    // A project that never went live has no link directory to flush.
    await fsyncDirectory(join(this.docsRoot, user)).catch((error: unknown) => {
      if (!isMissing(error)) throw error;
    });
    await this.tree.throwAway(this.tree.projectDir(user, project));
    await this.kept.drop(user, project);
    this.tree.collectObjects(user);
  }

  async removeUserFiles(user: Username): Promise<void> {
    await this.tree.ensureRoots();
    // The links go first, so the sites stop being served before their files go.
    await this.tasks.remove(join(this.docsRoot, user));
    await this.tree.throwAway(join(this.tree.roots.deploysRoot, user));
  }

  async removeLeftovers(): Promise<string[]> {
    const removed = await this.tree.emptyTrash();
    const temporaryLink = temporaryLinkOf(this.tree.roots.replica);
    for (const user of await readdir(this.docsRoot, { withFileTypes: true })) {
      if (!user.isDirectory()) continue;
      for (const name of await readdir(join(this.docsRoot, user.name))) {
        if (!temporaryLink.test(name)) continue;
        const path = join(this.docsRoot, user.name, name);
        await unlink(path);
        removed.push(path);
      }
    }
    removed.push(...(await this.adoptions.resume()));
    await this.tree.collectAndMigrateEveryStore();
    return removed;
  }
}
