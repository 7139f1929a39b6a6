import { mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { inject, injectable } from 'inversify';
import { PackedManifest, sharedBytes } from '../../../domain/packed-manifest.js';
import type { ProjectName } from '../../../domain/project-name.js';
import type { ReleaseId } from '../../../domain/release-id.js';
import type { Username } from '../../../domain/username.js';
import { LOGGER, type Logger } from '../../log/logger.js';
import { DeploysTree } from '../layout/deploys-tree.js';
import { isMissing } from '../threads/fs-errors.js';
import { checksumOf, describes, encodeKeptHead, HEAD_BYTES_MAX, isWhole, KEPT_MANIFESTS, PACKED_FORMAT, parseKeptHead, RECORDS_FORMAT, WRITTEN_RECORDS, type KeptHead } from './kept-manifest-file.js';

/**
 * The manifest of a project's latest release whose files are known (a tarball's, as its
 * writer recorded them; one assembled from a manifest; one walked), kept on disk
 * (kept-manifest-file.ts): a redeploy relative to it after a restart, after a tarball
 * deploy, or after the remembered manifests (ManifestMemory) have let it go for other
 * projects', reads it instead of walking the release and its store (docs/performance.md).
 * One file per project, replaced by each release it describes, so five releases cost the
 * disk of one manifest.
 *
 * Trusted as the walk is: only as a shortcut to what the service itself wrote, for the
 * directory it was written for (its origin: another release made under the same id does
 * not match), whole (its checksum), and compared with the client's digest before use
 * like any base. Not flushed: a file lost with the power costs one walk. Nothing here
 * fails a deploy: a file that cannot be kept, read or removed costs a walk, or its disk.
 */
@injectable()
export class KeptManifests {
  /** By file, the change under way: keeps and removals of one project's file land in the order asked. */
  private readonly changing = new Map<string, Promise<void>>();

  constructor(
    @inject(DeploysTree) private readonly tree: DeploysTree,
    @inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Where `project`'s manifest is kept: in the user's directory, beside the projects, in none of them. */
  path(user: Username, project: ProjectName): string {
    return join(this.tree.roots.deploysRoot, user, KEPT_MANIFESTS, project);
  }

  /**
   * Keeps `manifest` as release `release`'s (origin `origin`) of `project`, after the
   * changes asked before it and after the caller's turn of the event loop (a publish goes
   * live first); with its canonical digest if that is known once `digestWorkedOut` settles.
   */
  keep(user: Username, project: ProjectName, release: ReleaseId, origin: string, manifest: PackedManifest, digestWorkedOut?: Promise<unknown>): Promise<void> {
    const scratch = this.tree.scratchPath();
    const write = async (): Promise<void> => {
      await digestWorkedOut?.catch(() => undefined);
      const head: KeptHead = { format: PACKED_FORMAT, origin, release, sha256: checksumOf(manifest.packed), digest: manifest.knownDigest() };
      const file = await open(scratch, 'wx', 0o600);
      try {
        await file.writev([encodeKeptHead(head), manifest.packed]);
      } finally {
        await file.close();
      }
    };
    return this.inTurn(user, project, 'keeping a release\'s manifest', () => this.put(user, project, scratch, write));
  }

  /**
   * Keeps the records a tarball's writer left beside the staging area `fresh` (its own
   * directory, about to be thrown away) as the manifest of the release it became, if it
   * left any: moved out at once, into place in turn like `keep`.
   */
  async keepWritten(fresh: string, user: Username, project: ProjectName): Promise<void> {
    const scratch = this.tree.scratchPath();
    try {
      await rename(join(fresh, WRITTEN_RECORDS), scratch);
    } catch (error) {
      if (!isMissing(error)) this.logger.warn("keeping a tarball's manifest failed", { user, project, error: (error as Error).message });
      return;
    }
    void this.inTurn(user, project, "keeping a tarball's manifest", () => this.put(user, project, scratch));
  }

  /** Until the changes asked so far have landed (or failed). */
  async idle(): Promise<void> {
    await Promise.all(this.changing.values());
  }

  /**
   * The manifest kept for `project`'s release `release` if it is still the directory of
   * origin `origin`; `records` if what is kept for it is a writer's records, which a walk
   * turns into its manifest; else undefined.
   */
  async read(user: Username, project: ProjectName, release: ReleaseId, origin: string): Promise<PackedManifest | 'records' | undefined> {
    let file: FileHandle | undefined;
    try {
      file = await open(this.path(user, project), 'r');
      const found = await readHead(file);
      if (found === undefined || !describes(found.head, origin, release)) return undefined;
      if (found.head.format === RECORDS_FORMAT) return 'records';
      const { size } = await file.stat();
      const packed = sharedBytes(size - found.length);
      const { bytesRead } = await file.read(packed, 0, packed.length, found.length);
      if (bytesRead === packed.length && isWhole(found.head, packed)) {
        const manifest = PackedManifest.from(packed);
        if (found.head.digest !== undefined) manifest.knowDigest(found.head.digest);
        return manifest;
      }
      this.logger.warn('a kept manifest is damaged: its release is walked instead', { user, project, release });
      return undefined;
    } catch (error) {
      if (!isMissing(error)) this.logger.warn('reading a kept manifest failed: its release is walked instead', { user, project, release, error: (error as Error).message });
      return undefined;
    } finally {
      await file?.close();
    }
  }

  /** Removes `project`'s kept manifest if it is release `release`'s (of origin `origin`, if it is still there), which is going. */
  forget(user: Username, project: ProjectName, release: ReleaseId, origin: string | undefined): Promise<void> {
    const path = this.path(user, project);
    return this.inTurn(user, project, 'removing a kept manifest', async () => {
      const file = await open(path, 'r');
      const found = await readHead(file).finally(() => file.close());
      if (found && (found.head.release === release || found.head.origin === origin)) await unlink(path);
    });
  }

  /** Removes `project`'s kept manifest, whatever it is: the project is gone. */
  drop(user: Username, project: ProjectName): Promise<void> {
    return this.inTurn(user, project, 'removing a kept manifest', () => unlink(this.path(user, project)));
  }

  /**
   * Puts the file `made` (made by `make`, if given) in place as `project`'s. Its directory
   * is made if missing, but not the user's: a user removed meanwhile gets nothing back.
   */
  private async put(user: Username, project: ProjectName, made: string, make?: () => Promise<void>): Promise<void> {
    const path = this.path(user, project);
    try {
      await make?.();
      await mkdir(dirname(path), { mode: 0o700 }).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      });
      await rename(made, path);
    } catch (error) {
      await unlink(made).catch(() => undefined);
      throw error;
    }
  }

  /** Runs `change` to `project`'s file after those asked before it, next turn of the event loop at the earliest; a failure is logged, never thrown. */
  private inTurn(user: Username, project: ProjectName, what: string, change: () => Promise<void>): Promise<void> {
    const path = this.path(user, project);
    const before = this.changing.get(path) ?? new Promise<void>((resolve) => setImmediate(resolve));
    const done = before.then(change).catch((error: unknown) => {
      // Not there (the file, or the user, went meanwhile): nothing to do.
      if (!isMissing(error)) this.logger.warn(`${what} failed`, { user, project, error: (error as Error).message });
    });
    this.changing.set(path, done);
    void done.then(() => {
      if (this.changing.get(path) === done) this.changing.delete(path);
    });
    return done;
  }
}

async function readHead(file: FileHandle): Promise<ReturnType<typeof parseKeptHead>> {
  const start = Buffer.alloc(HEAD_BYTES_MAX);
  const { bytesRead } = await file.read(start, 0, start.length, 0);
  return parseKeptHead(start.subarray(0, bytesRead));
}
