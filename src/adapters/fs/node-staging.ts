import { chmod } from 'node:fs/promises';
import { inject, injectable } from 'inversify';
import type { StagedRelease, Staging } from '../../application/ports/staging.js';
import type { ArchiveLimits } from '../../domain/archive-policy.js';
import type { PackedManifest } from '../../domain/packed-manifest.js';
import type { Username } from '../../domain/username.js';
import { LOGGER, type Logger } from '../log/logger.js';
import { ARCHIVE_EXTRACTOR, type ArchiveExtractor } from './archive-extractor.js';
import { DeploysTree, type StagingArea } from './deploys-tree.js';
import { syncFilesystem } from './durability.js';
import { ManifestMemory } from './manifest-memory.js';

/** What filled a staging area, and what of it the staging's log line adds. */
interface Filled {
  readonly files: number;
  readonly bytes: number;
  readonly logged: Record<string, unknown>;
}

/**
 * Staging areas in DEPLOYS_ROOT/.staging, filled by the unpack and writer threads from
 * an archive or from the user's store, then made durable with one syncfs. Logs each
 * staging's own phases: no use case needs them, the operator and the benchmark do.
 */
@injectable()
export class NodeStaging implements Staging {
  constructor(
    @inject(DeploysTree) private readonly tree: DeploysTree,
    @inject(ARCHIVE_EXTRACTOR) private readonly extractor: ArchiveExtractor,
    @inject(LOGGER) private readonly logger: Logger,
    @inject(ManifestMemory) private readonly manifests: ManifestMemory,
  ) {}

  stage(user: Username, archive: AsyncIterable<Uint8Array>, limits: ArchiveLimits, signal: AbortSignal): Promise<StagedRelease> {
    return this.fill(user, 'unpack', async (area) => {
      const objects = { store: this.tree.objectsDir(user), fresh: area.fresh };
      const extracted = await this.extractor.extract(archive, area.dir, objects, limits, area.chmod, signal);
      return { files: extracted.files, bytes: extracted.bytes, logged: { compressedBytes: extracted.compressedBytes } };
    });
  }

  async assemble(user: Username, session: string, manifest: PackedManifest): Promise<StagedRelease> {
    const staged = await this.fill(user, 'assemble', async (area) => {
      const objects = { store: this.tree.objectsDir(user), fresh: area.fresh, uploads: this.tree.uploadsDir(session) };
      const built = await this.extractor.assemble(manifest, area.dir, objects, area.chmod);
      return { files: built.files, bytes: built.bytes, logged: { session } };
    });
    this.manifests.stage(staged.handle, manifest);
    return staged;
  }

  async discard(staged: StagedRelease): Promise<void> {
    this.manifests.takeStaged(staged.handle);
    await this.tree.throwAwayStagingArea(staged.handle);
  }

  removeLeftovers(): Promise<string[]> {
    return this.tree.removeStagingAreas();
  }

  /**
   * A fresh staging area filled by `filling`, then made readable by the web server and
   * safe from a crash; on any failure it is thrown away.
   */
  private async fill(user: Username, phase: 'unpack' | 'assemble', filling: (area: StagingArea) => Promise<Filled>): Promise<StagedRelease> {
    const area = await this.tree.openStagingArea();
    try {
      const started = performance.now();
      const filled = await filling(area);
      await chmod(area.dir, 0o755); // mkdtemp makes it 0700; the web server must read the release root
      const flushing = performance.now();
      await syncFilesystem(area.dir);
      const phasesMs = { [phase]: Math.round(flushing - started), flush: Math.round(performance.now() - flushing) };
      this.logger.info('staged', { user, ...filled.logged, files: filled.files, bytes: filled.bytes, phasesMs });
      return { handle: area.dir, files: filled.files, bytes: filled.bytes };
    } catch (error) {
      // The failure is what the client needs to hear; an area that cannot be moved now
      // (the same disk or permission trouble) stays in staging for start-up to remove.
      await this.tree.throwAwayStagingArea(area.dir).catch(() => undefined);
      throw error;
    }
  }
}
