import { chmod } from 'node:fs/promises';
import { inject, injectable } from 'inversify';
import type { StagedRelease, Staging } from '../../../application/ports/staging.js';
import type { ArchiveLimits } from '../../../domain/archive-policy.js';
import type { ProjectScope } from '../../../domain/deploy-session.js';
import { DeployAborted } from '../../../domain/errors.js';
import type { Digest } from '../../../domain/manifest.js';
import type { PackedManifest } from '../../../domain/packed-manifest.js';
import type { Username } from '../../../domain/username.js';
import { LOGGER, type Logger } from '../../log/logger.js';
import { ARCHIVE_EXTRACTOR, type ArchiveExtractor, type Assembled } from '../threads/archive-extractor.js';
import { DeploysTree, type StagingArea } from '../layout/deploys-tree.js';
import { flushingMeanwhile, syncFilesystem } from '../layout/durability.js';
import { ManifestMemory } from '../store/manifest-memory.js';
import { ProjectContent } from '../store/project-content.js';
import { StoreAdoptions } from '../store/store-adoptions.js';
import type { ReleasePreparation } from '../../../application/ports/release-preparation.js';
import { machineBoot } from './upload-trust.js';

/** What filled a staging area, and what of it the staging's log line adds. */
interface Filled {
  readonly files: number;
  readonly bytes: number;
  /** A tarball's new objects, or the uploads an assembly linked: adopted into the store after the publish. */
  readonly newObjects?: Uint8Array;
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
  /** The manifest it was prepared from: the flags index its objects, so only the same manifest may finish it. */
  readonly manifest: PackedManifest;
  /** Rejects when the first part failed or was stopped; its area is gone then. */
  readonly ahead: Promise<Ahead>;
  readonly stop: AbortController;
  /** Counts the area out of PREPARED_AT_ONCE: once handed to a publish, or thrown away. */
  readonly done: () => void;
  /** Changed once for a new manifest already (revise): a second change throws it away. */
  readonly revised?: boolean;
}

/** Whether a prepared first part linked any of the objects `these` flags (it linked all it neither deferred nor missed). */
function linkedAny(ahead: Ahead, manifest: PackedManifest, these: Uint8Array): boolean {
  const left = ahead.deferred.slice();
  flag(left, manifest, ahead.built.missing);
  return these.some((flagged, index) => flagged === 1 && left[index] !== 1);
}

/** Sets the flags (by object index) of the objects `digests`. */
function flag(flags: Uint8Array, manifest: PackedManifest, digests: readonly string[]): void {
  for (const digest of digests) {
    const index = manifest.objectIndex(digest);
    if (index !== undefined) flags[index] = 1;
  }
}

/**
 * Prepared areas at once, at most, counted from prepare until the area is handed to a
 * publish or thrown away (not merely forgotten): they are built outside the deploy slots,
 * so this is what bounds the work and the disk that opening and cancelling sessions can
 * cause. One per user, so that one user's idle sessions cannot take them all.
 */
const PREPARED_AT_ONCE = 4;

/**
 * How often the filesystem is flushed while a staging area fills: its bytes go to disk
 * while the deploy is still unpacking, and the flush that ends the staging (the one its
 * durability rests on) has only the tail left. A staging shorter than this is flushed
 * once, at its end (docs/performance.md, "Flushed while it unpacks").
 */
const EARLY_FLUSH_MS = 100;

/**
 * Staging areas in DEPLOYS_ROOT/.staging, filled by the unpack and writer threads from
 * an archive or from the user's store, flushed as they fill, then made durable with one
 * syncfs after the last write. Logs each staging's own phases: no use case needs them,
 * the operator and the benchmark do.
 */
@injectable()
export class NodeStaging implements Staging, ReleasePreparation {
  constructor(
    @inject(DeploysTree) private readonly tree: DeploysTree,
    @inject(ARCHIVE_EXTRACTOR) private readonly extractor: ArchiveExtractor,
    @inject(LOGGER) private readonly logger: Logger,
    @inject(ManifestMemory) private readonly manifests: ManifestMemory,
    @inject(ProjectContent) private readonly content: ProjectContent,
    @inject(StoreAdoptions) private readonly adoptions: StoreAdoptions,
  ) {}

  /** By session: releases being prepared, or prepared, until their assemble or forgetPrepared. */
  private readonly prepared = new Map<string, Prepared>();
  /** Prepared areas that exist or are being built or thrown away (PREPARED_AT_ONCE). */
  private preparedAreas = 0;

  stage(user: Username, archive: AsyncIterable<Uint8Array>, limits: ArchiveLimits, signal: AbortSignal): Promise<StagedRelease> {
    return this.fill(user, 'unpack', undefined, async (area) => {
      // Its new files are written once, where the release has them; the store adopts them after the publish.
      const objects = { store: this.tree.objectsDir(user), fresh: area.fresh, writes: 'release' as const };
      const extracted = await this.extractor.extract(archive, area.dir, objects, limits, area.chmod, signal);
      return { files: extracted.files, bytes: extracted.bytes, newObjects: extracted.newObjects, logged: { compressedBytes: extracted.compressedBytes } };
    });
  }

  async assemble(user: Username, session: string, asRead: PackedManifest, scope?: ProjectScope): Promise<StagedRelease> {
    const prepared = this.prepared.get(session);
    this.prepared.delete(session);
    // Finished if it was prepared for this user and manifest and its first part was
    // built; otherwise thrown away, and the release built whole.
    const usable = prepared?.user === user && prepared.manifest.packed.equals(asRead.packed);
    // The same bytes: the prepared one's are in shared memory (packed here), the session's as read are not.
    const manifest = usable ? prepared.manifest : asRead;
    if (prepared && !usable) prepared.stop.abort();
    let ahead: Ahead | undefined;
    let uploadsOnly: Uint8Array | undefined;
    try {
      // Asked now, not at the open: what the project held then may have gone since.
      uploadsOnly = scope && (await this.outsideProject(user, scope, manifest));
      ahead = usable ? await prepared.ahead.catch(() => undefined) : undefined;
    } finally {
      // A first part that linked from the store an object the project no longer holds is not the key's to finish.
      if (ahead && uploadsOnly && linkedAny(ahead, manifest, uploadsOnly)) ahead = undefined;
      if (prepared && !ahead) await this.throwAwayPrepared(prepared);
      prepared?.done();
    }
    const boot = await machineBoot();
    const objects = (area: StagingArea) => ({ store: this.tree.objectsDir(user), fresh: area.fresh, uploads: this.tree.uploadsDir(session), boot });
    const staged = ahead
      ? await this.fill(user, 'assemble', ahead.area, async (area) => {
          // The files ahead left: those whose objects were uploading, and those it did not find.
          const wanted = ahead.deferred;
          flag(wanted, manifest, ahead.built.missing);
          const rest = await this.extractor.assemble(manifest, area.dir, objects(area), area.chmod, { kind: 'rest', wanted }, undefined, uploadsOnly);
          return { files: ahead.built.files, bytes: ahead.built.bytes, newObjects: rest.newObjects, logged: { session, preparedMs: ahead.ms } };
        })
      : await this.fill(user, 'assemble', undefined, async (area) => {
          const built = await this.extractor.assemble(manifest, area.dir, objects(area), area.chmod, undefined, undefined, uploadsOnly);
          return { files: built.files, bytes: built.bytes, newObjects: built.newObjects, logged: { session } };
        });
    this.manifests.stage(staged.handle, manifest);
    return staged;
  }

  prepare(user: Username, session: string, manifest: PackedManifest, missing: readonly Digest[]): void {
    if (this.prepared.has(session) || this.preparedAreas >= PREPARED_AT_ONCE) return;
    if ([...this.prepared.values()].some((prepared) => prepared.user === user)) return;
    this.preparedAreas += 1;
    let counted = true;
    const done = (): void => {
      if (counted) this.preparedAreas -= 1;
      counted = false;
    };
    const deferred = new Uint8Array(manifest.objectCount);
    flag(deferred, manifest, missing);
    const stop = new AbortController();
    const ahead = this.buildAhead(user, manifest, deferred, stop.signal);
    ahead.catch((error: unknown) => {
      if (!(error instanceof DeployAborted)) this.logger.warn('preparing a release failed: its publish builds it whole', { user, session, error: (error as Error).message });
    });
    this.prepared.set(session, { user, manifest, ahead, stop, done });
  }

  revise(user: Username, session: string, manifest: PackedManifest, missing: readonly Digest[]): void {
    const prepared = this.prepared.get(session);
    // Nothing prepared (or handed to a publish already): nothing to change, nor to start,
    // for a session that may be publishing. Changed once already: each change is a pass
    // over the site, so a client revising again and again would queue them unbounded.
    if (prepared?.user !== user) return;
    if (prepared.revised) return void this.forgetPrepared(session).catch(() => undefined);
    const deferred = new Uint8Array(manifest.objectCount);
    flag(deferred, manifest, missing);
    const ahead = prepared.ahead.then((before) => this.amendAhead(user, before, prepared.manifest, manifest, deferred, prepared.stop.signal));
    ahead.catch((error: unknown) => {
      if (!(error instanceof DeployAborted)) this.logger.warn('changing a prepared release failed: its publish builds it whole', { user, session, error: (error as Error).message });
    });
    this.prepared.set(session, { ...prepared, manifest, ahead, revised: true });
  }

  preparedSessions(): string[] {
    return [...this.prepared.keys()];
  }

  async forgetPrepared(session: string): Promise<void> {
    const prepared = this.prepared.get(session);
    this.prepared.delete(session);
    if (!prepared) return;
    prepared.stop.abort();
    await this.throwAwayPrepared(prepared);
    prepared.done();
  }

  forgetPreparedFor(user: Username): Promise<void> {
    return this.forgetPreparedWhere((prepared) => prepared.user === user);
  }

  /** Throws away every prepared area (the service is stopping): a prepared area outlives nothing but a crash. */
  close(): Promise<void> {
    return this.forgetPreparedWhere(() => true);
  }

  private async forgetPreparedWhere(which: (prepared: Prepared) => boolean): Promise<void> {
    const sessions = [...this.prepared].filter(([, prepared]) => which(prepared)).map(([session]) => session);
    await Promise.all(sessions.map((session) => this.forgetPrepared(session)));
  }

  async discard(staged: StagedRelease): Promise<void> {
    this.manifests.takeStaged(staged.handle);
    await this.adoptions.forget(staged.handle);
    await this.tree.throwAwayStagingArea(staged.handle);
  }

  removeLeftovers(): Promise<string[]> {
    return this.tree.removeStagingAreas();
  }

  /** By object index, 1 for each object of the manifest the project's releases do not hold: a deploy key's session takes those from its uploads alone. */
  private async outsideProject(user: Username, scope: ProjectScope, manifest: PackedManifest): Promise<Uint8Array> {
    const { missing, wrongSize } = await this.content.probe(user, scope.project, undefined, new Map(manifest.objects()));
    const outside = new Uint8Array(manifest.objectCount);
    flag(outside, manifest, missing);
    flag(outside, manifest, wrongSize);
    return outside;
  }

  /** The first part of a prepared assembly: the directories, and the files the store has, in an area of its own. */
  private async buildAhead(user: Username, manifest: PackedManifest, deferred: Uint8Array, signal: AbortSignal): Promise<Ahead> {
    await this.adoptions.settled(user);
    const area = await this.tree.openStagingArea();
    try {
      const started = performance.now();
      const objects = { store: this.tree.objectsDir(user), fresh: area.fresh };
      // Flushed as it fills, as a staging area is: the publish's own flush has only the tail left.
      const built = await flushingMeanwhile(area.dir, () => this.extractor.assemble(manifest, area.dir, objects, area.chmod, { kind: 'ahead', deferred }, signal), EARLY_FLUSH_MS);
      return { area, deferred, built, ms: Math.round(performance.now() - started) };
    } catch (error) {
      await this.tree.throwAwayStagingArea(area.dir).catch(() => undefined);
      throw error;
    }
  }

  /**
   * A first part built for `from` (with nothing deferred or missing: the session's base,
   * whole) changed into the first part for `to`. Anything else, or any object not found,
   * throws the area away: the publish then builds the release whole.
   */
  private async amendAhead(user: Username, before: Ahead, from: PackedManifest, to: PackedManifest, deferred: Uint8Array, signal: AbortSignal): Promise<Ahead> {
    const { area } = before;
    try {
      if (before.built.missing.length > 0 || before.deferred.includes(1)) throw new Error('the release prepared was not whole');
      await this.adoptions.settled(user);
      const started = performance.now();
      const objects = { store: this.tree.objectsDir(user), fresh: area.fresh };
      const built = await this.extractor.assemble(to, area.dir, objects, area.chmod, { kind: 'amend', from: from.packed, deferred }, signal);
      if (built.missing.length > 0) throw new Error(`${built.missing.length} objects were not found`);
      return { area, deferred, built, ms: before.ms + Math.round(performance.now() - started) };
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
    // The user's last tarball's new objects first: this one would write those bytes again.
    await this.adoptions.settled(user);
    const area = opened ?? (await this.tree.openStagingArea());
    try {
      const started = performance.now();
      const filled = await flushingMeanwhile(area.dir, () => filling(area), EARLY_FLUSH_MS);
      await chmod(area.dir, 0o755); // mkdtemp makes it 0700; the web server must read the release root
      const flushing = performance.now();
      await syncFilesystem(area.dir);
      const phasesMs = { [phase]: Math.round(flushing - started), flush: Math.round(performance.now() - flushing) };
      this.logger.info('staged', { user, ...filled.logged, files: filled.files, bytes: filled.bytes, phasesMs });
      if (filled.newObjects) this.adoptions.stage(area.dir, filled.newObjects);
      return { handle: area.dir, files: filled.files, bytes: filled.bytes };
    } catch (error) {
      // The failure is what the client needs to hear; an area that cannot be moved now
      // (the same disk or permission trouble) stays in staging for start-up to remove.
      await this.tree.throwAwayStagingArea(area.dir).catch(() => undefined);
      throw error;
    }
  }
}
