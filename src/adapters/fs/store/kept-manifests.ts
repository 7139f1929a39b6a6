import { hash } from 'node:crypto';
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
import { encodeKeptHead, HEAD_BYTES_MAX, KEPT_MANIFESTS, PACKED_FORMAT, parseKeptHead, RECORDS_FORMAT, WRITTEN_RECORDS, type KeptHead } from './kept-manifest-file.js';

/**
 * The manifest of a project's latest release whose files are known (a tarball's, as its
 * writer recorded them; one assembled from a manifest; one walked), kept on disk beside
 * its releases (kept-manifest-file.ts): a redeploy relative to it after a restart, after
 * a tarball deploy, or after the remembered manifests (ManifestMemory) have let it go
 * for other projects', reads 90 bytes a file instead of walking the release and its
 * store (0.6-1.3 s for 40,000 files here). One file per project, replaced by each
 * release it describes, so five releases cost the disk of one manifest.
 *
 * Trusted as the walk is: only as a shortcut to what the service itself wrote, for the
 * directory it was written for (its origin: another release made under the same id does
 * not match), whole (its checksum), and compared with the client's digest before use
 * like any base. Not flushed: a file lost with the power costs one walk.
 */
@injectable()
export class KeptManifests {
  /** By project, the keep under way: two publishes in a row land in their order. */
  private readonly keeping = new Map<string, Promise<void>>();

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
   * keeps asked before it and after the caller's turn of the event loop (a publish goes
   * live first). Never throws: a failure costs a walk.
   */
  keep(user: Username, project: ProjectName, release: ReleaseId, origin: string, manifest: PackedManifest): Promise<void> {
    return this.inTurn(user, project, release, async (scratch) => {
      const head: KeptHead = { format: PACKED_FORMAT, origin, release, sha256: hash('sha256', manifest.packed) };
      const file = await open(scratch, 'wx', 0o600);
      try {
        await file.writev([encodeKeptHead(head), manifest.packed]);
      } finally {
        await file.close();
      }
    });
  }

  /**
   * Keeps the records a tarball's writer left beside the staging area `fresh` (its own
   * directory, about to be thrown away) as the manifest of the release it became, if it
   * left any. Moved out at once, kept in turn like `keep`; never throws.
   */
  async keepWritten(fresh: string, user: Username, project: ProjectName, release: ReleaseId): Promise<void> {
    const scratch = this.tree.scratchPath();
    try {
      await rename(join(fresh, WRITTEN_RECORDS), scratch);
    } catch (error) {
      if (!isMissing(error)) this.logger.warn("keeping a tarball's manifest failed", { release, error: (error as Error).message });
      return;
    }
    void this.inTurn(user, project, release, (into) => rename(scratch, into));
  }

  /** Until the keeps asked so far have landed (or failed). */
  async idle(): Promise<void> {
    await Promise.all(this.keeping.values());
  }

  /**
   * The manifest kept for `project`'s release `release` if it is still the directory of
   * origin `origin`; `records` if what is kept for it is a writer's records, which a walk
   * turns into its manifest; else undefined.
   */
  async read(user: Username, project: ProjectName, release: ReleaseId, origin: string): Promise<PackedManifest | 'records' | undefined> {
    let file: FileHandle;
    try {
      file = await open(this.path(user, project), 'r');
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    try {
      const found = await readHead(file);
      if (found === undefined || found.head.origin !== origin || (found.head.release ?? release) !== release) return undefined;
      if (found.head.format === RECORDS_FORMAT) return 'records';
      const { size } = await file.stat();
      const packed = sharedBytes(size - found.length);
      const { bytesRead } = await file.read(packed, 0, packed.length, found.length);
      // 2-3 ms for 40,000 files, on this thread: WebCrypto refuses shared memory.
      if (bytesRead !== packed.length || hash('sha256', packed) !== found.head.sha256) {
        this.logger.warn('a kept manifest is damaged: its release is walked instead', { release });
        return undefined;
      }
      return PackedManifest.from(packed);
    } finally {
      await file.close();
    }
  }

  /** Removes `project`'s kept manifest if it is release `release`'s (of origin `origin`, if it is still there), which is going. */
  async forget(user: Username, project: ProjectName, release: ReleaseId, origin: string | undefined): Promise<void> {
    const path = this.path(user, project);
    try {
      const file = await open(path, 'r');
      const found = await readHead(file).finally(() => file.close());
      if (found && (found.head.release === release || found.head.origin === origin)) await unlink(path);
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
  }

  /** Removes `project`'s kept manifest, whatever it is, once a keep under way has landed: the project is gone. */
  async drop(user: Username, project: ProjectName): Promise<void> {
    const path = this.path(user, project);
    await this.keeping.get(path);
    await unlink(path).catch((error: unknown) => {
      if (!isMissing(error)) throw error;
    });
  }

  /** Runs `make` (which writes a new file at its scratch path) after the keeps asked before it, and moves what it made into place. */
  private inTurn(user: Username, project: ProjectName, release: ReleaseId, make: (scratch: string) => Promise<void>): Promise<void> {
    const path = this.path(user, project);
    const before = this.keeping.get(path) ?? new Promise<void>((resolve) => setImmediate(resolve));
    const done = before.then(async () => {
      const scratch = this.tree.scratchPath();
      try {
        await make(scratch);
        await mkdir(dirname(path), { recursive: true, mode: 0o700 });
        await rename(scratch, path);
      } catch (error) {
        await unlink(scratch).catch(() => undefined);
        // The user went meanwhile: nothing to keep.
        if (!isMissing(error)) this.logger.warn("keeping a release's manifest failed", { release, error: (error as Error).message });
      }
    });
    this.keeping.set(path, done);
    void done.then(() => {
      if (this.keeping.get(path) === done) this.keeping.delete(path);
    });
    return done;
  }
}

async function readHead(file: FileHandle): Promise<ReturnType<typeof parseKeptHead>> {
  const start = Buffer.alloc(HEAD_BYTES_MAX);
  const { bytesRead } = await file.read(start, 0, start.length, 0);
  return parseKeptHead(start.subarray(0, bytesRead));
}
