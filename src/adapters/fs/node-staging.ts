import { chmod } from 'node:fs/promises';
import { inject, injectable } from 'inversify';
import type { StagedRelease, Staging } from '../../application/ports/staging.js';
import type { ArchiveLimits } from '../../domain/archive-policy.js';
import type { Digest } from '../../domain/manifest.js';
import type { PackedManifest } from '../../domain/packed-manifest.js';
import type { Username } from '../../domain/username.js';
import { LOGGER, type Logger } from '../log/logger.js';
import { ARCHIVE_EXTRACTOR, type ArchiveExtractor, type Assembled } from './archive-extractor.js';
import { DeploysTree, type StagingArea } from './deploys-tree.js';
import { syncFilesystem } from './durability.js';
import { ManifestMemory } from './manifest-memory.js';

/** What filled a staging area, and what of it the staging's log line adds. */
interface Filled {
  readonly files: number;
  readonly bytes: number;
  readonly logged: Record<string, unknown>;
}

/** A prepared release's first part, done (fs-protocol.ts, AssemblyPart). */
interface Ahead {
  readonly area: StagingArea;
  /** By object index: the objects that were uploading; the second part adds those the first did not find. */
  readonly deferred: Uint8Array;
  readonly built: Assembled;
  readonly ms: number;
}

interface Prepared {
  readonly user: Username;
  /** Rejects when the first part failed; its area is gone then. */
  readonly ahead: Promise<Ahead>;
}

/** `flags` (by object index) with the objects `digests` flagged too. */
function flagged(flags: Uint8Array, manifest: PackedManifest, digests: readonly string[]): Uint8Array {
  for (const digest of digests) {
    const index = manifest.objectIndex(digest);
    if (index !== undefined) flags[index] = 1;
  }
  return flags;
}

/**
 * Releases prepared at once, at most: each fills a staging area in the background, outside
 * the deploy slots (HTTP), so a client opening sessions cannot make it build without bound.
 */
const PREPARED_AT_ONCE = 4;

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

  /** By session: releases being prepared, or prepared, until their assemble or forgetPrepared. */
  private readonly prepared = new Map<string, Prepared>();

  stage(user: Username, archive: AsyncIterable<Uint8Array>, limits: ArchiveLimits, signal: AbortSignal): Promise<StagedRelease> {
    return this.fill(user, 'unpack', undefined, async (area) => {
      const objects = { store: this.tree.objectsDir(user), fresh: area.fresh };
      const extracted = await this.extractor.extract(archive, area.dir, objects, limits, area.chmod, signal);
      return { files: extracted.files, bytes: extracted.bytes, logged: { compressedBytes: extracted.compressedBytes } };
    });
  }

  async assemble(user: Username, session: string, manifest: PackedManifest): Promise<StagedRelease> {
    const prepared = this.prepared.get(session);
    this.prepared.delete(session);
    // What was prepared is finished; what could not be (its area failed) is built whole.
    const ahead = prepared?.user === user ? await prepared.ahead.catch(() => undefined) : undefined;
    if (prepared && !ahead) await this.throwAwayPrepared(prepared);
    const objects = (area: StagingArea) => ({ store: this.tree.objectsDir(user), fresh: area.fresh, uploads: this.tree.uploadsDir(session) });
    const staged = ahead
      ? await this.fill(user, 'assemble', ahead.area, async (area) => {
          // The files ahead left: those whose objects were uploading, and those it did not find.
          const wanted = flagged(ahead.deferred, manifest, ahead.built.missing);
          await this.extractor.assemble(manifest, area.dir, objects(area), area.chmod, { kind: 'rest', wanted });
          return { files: ahead.built.files, bytes: ahead.built.bytes, logged: { session, preparedMs: ahead.ms } };
        })
      : await this.fill(user, 'assemble', undefined, async (area) => {
          const built = await this.extractor.assemble(manifest, area.dir, objects(area), area.chmod);
          return { files: built.files, bytes: built.bytes, logged: { session } };
        });
    this.manifests.stage(staged.handle, manifest);
    return staged;
  }

  prepare(user: Username, session: string, manifest: PackedManifest, missing: readonly Digest[]): void {
    if (this.prepared.has(session) || this.prepared.size >= PREPARED_AT_ONCE) return;
    const deferred = flagged(new Uint8Array(manifest.objectCount), manifest, missing);
    const ahead = this.buildAhead(user, manifest, deferred);
    // Heard by assemble or forgetPrepared; a failure only means the publish builds it all.
    ahead.catch(() => undefined);
    this.prepared.set(session, { user, ahead });
  }

  preparedSessions(): string[] {
    return [...this.prepared.keys()];
  }

  async forgetPrepared(session: string): Promise<void> {
    const prepared = this.prepared.get(session);
    this.prepared.delete(session);
    if (prepared) await this.throwAwayPrepared(prepared);
  }

  async discard(staged: StagedRelease): Promise<void> {
    this.manifests.takeStaged(staged.handle);
    await this.tree.throwAwayStagingArea(staged.handle);
  }

  removeLeftovers(): Promise<string[]> {
    return this.tree.removeStagingAreas();
  }

  /** The first part of a prepared assembly: the directories, and the files the store has, in an area of its own. */
  private async buildAhead(user: Username, manifest: PackedManifest, deferred: Uint8Array): Promise<Ahead> {
    const area = await this.tree.openStagingArea();
    try {
      const started = performance.now();
      const built = await this.extractor.assemble(manifest, area.dir, { store: this.tree.objectsDir(user), fresh: area.fresh }, area.chmod, { kind: 'ahead', deferred });
      return { area, deferred, built, ms: Math.round(performance.now() - started) };
    } catch (error) {
      await this.tree.throwAwayStagingArea(area.dir).catch(() => undefined);
      throw error;
    }
  }

  private async throwAwayPrepared(prepared: Prepared): Promise<void> {
    const ahead = await prepared.ahead.catch(() => undefined);
    if (ahead) await this.tree.throwAwayStagingArea(ahead.area.dir).catch(() => undefined);
  }

  /**
   * A staging area (a fresh one, or `area`) filled by `filling`, then made readable by
   * the web server and safe from a crash; on any failure it is thrown away.
   */
  private async fill(user: Username, phase: 'unpack' | 'assemble', opened: StagingArea | undefined, filling: (area: StagingArea) => Promise<Filled>): Promise<StagedRelease> {
    const area = opened ?? (await this.tree.openStagingArea());
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
