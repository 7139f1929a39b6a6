import type { ServiceIdentifier } from 'inversify';
import type { ArchiveLimits } from '../../../domain/archive-policy.js';
import { ArchiveRejected, DeployAborted, MissingArchive, ObjectsMissing } from '../../../domain/errors.js';
import type { PackedManifest } from '../../../domain/packed-manifest.js';
import { isOutcome, type AssemblyPart, type FromUnpacker, type Outcome, type PackedBytes, type StagingObjects } from './fs-protocol.js';
import type { FsThreads, UnpackJob } from './fs-threads.js';
import { YoungGarbage } from './garbage.js';
import { SendWindow } from './send-window.js';

export interface Extracted {
  readonly files: number;
  readonly bytes: number;
  readonly compressedBytes: number;
  /** A tarball's new objects, or the uploads an assembly linked, for the store to adopt after the publish (write/new-objects.ts). */
  readonly newObjects?: Uint8Array;
}

/**
 * Upload bytes go to the unpack thread in batches of this size: a socket's 64 KiB
 * reads, one message and one zlib call each, cost that thread more in messages than in
 * inflating.
 */
const BATCH_BYTES = 256 * 1024;
/** Batches handed to the unpack thread but not yet inflated; bounds memory per deploy. */
const UNPACKER_WINDOW = 4;
/**
 * The socket's read buffers, once copied, are collected every this many bytes: V8 sees
 * no reason to scavenge the main thread's small heap meanwhile (docs/performance.md).
 */
const garbage = new YoungGarbage(1024 * 1024);

/**
 * The next chunk, or DeployAborted as soon as `signal` fires. Not Promise.race with one
 * long-lived abort promise: every race adds a reaction to it that keeps that race's
 * result (a chunk) alive, so the whole upload would stay in memory.
 */
function nextUnlessAborted<T>(iterator: AsyncIterator<T>, signal: AbortSignal): Promise<IteratorResult<T>> {
  if (signal.aborted) return Promise.reject(new DeployAborted());
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(new DeployAborted());
    signal.addEventListener('abort', onAbort, { once: true });
    iterator.next().then(
      (result) => {
        signal.removeEventListener('abort', onAbort);
        resolve(result);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** What an assembly built; `missing` is empty but for a part `ahead` (fs-protocol.ts, AssemblyPart). */
export interface Assembled extends Omit<Extracted, 'compressedBytes'> {
  readonly missing: readonly string[];
}

export const ARCHIVE_EXTRACTOR = Symbol.for('sitedrop.ArchiveExtractor') as ServiceIdentifier<ArchiveExtractor>;

/** Streams gzip-compressed tar bytes to the unpack thread, which unpacks them into a directory. */
export class ArchiveExtractor {
  constructor(private readonly threads: FsThreads) {}

  /**
   * Unpacks into `dir`, sharing its files' bytes through `objects`. With `expect`, the
   * archive is a batch of objects of an incremental deploy, each checked against it.
   */
  async extract(
    archive: AsyncIterable<Uint8Array>,
    dir: string,
    objects: StagingObjects,
    limits: ArchiveLimits,
    chmod: boolean,
    signal: AbortSignal,
    expect?: PackedManifest,
  ): Promise<Extracted> {
    const extraction = new Extraction(this.threads, signal);
    try {
      extraction.begin(dir, objects, limits, chmod, expect?.packed);
      const compressedBytes = await extraction.send(archive);
      const outcome = await extraction.finish(compressedBytes > 0);
      if (compressedBytes === 0) throw new MissingArchive();
      if (outcome.type === 'failed') {
        if (outcome.kind === 'rejected') throw new ArchiveRejected(outcome.message);
        throw new Error(`extraction failed: ${outcome.message}`);
      }
      return { files: outcome.files, bytes: outcome.bytes, compressedBytes, ...(outcome.adopt && { newObjects: outcome.adopt }) };
    } finally {
      extraction.close();
    }
  }

  /**
   * `manifest`'s canonical digest, worked out on the unpack thread, which is idle between
   * deploys, rather than on the main thread. Only a manifest in shared memory is posted:
   * bytes read from the database would be copied there, and that copy kept until the
   * thread's next collection (packed-manifest.ts, sharedBytes).
   */
  canonicalDigest(manifest: PackedManifest): Promise<string> {
    if (!(manifest.packed.buffer instanceof SharedArrayBuffer)) return Promise.reject(new Error('not a manifest in shared memory'));
    return new Promise((resolve, reject) => {
      const job = this.threads.openJob((message) => {
        if (message.type === 'digest') resolve(message.digest);
        else if (message.type === 'failed') reject(new Error(message.message));
        else return;
        job.close();
      });
      try {
        job.post({ type: 'digest', job: job.id, manifest: manifest.packed });
      } catch (error) {
        job.close();
        reject(error as Error);
      }
    });
  }

  /**
   * Builds the manifest's files in `dir` from objects the user has (`objects.store`, or
   * `objects.uploads`, kept as new), or the `part` of them it names. Throws ObjectsMissing
   * naming those it lacks; a part `ahead` answers them in `missing` instead. `signal`
   * stops it (DeployAborted). `uploadsOnly` (by object index, 1 for yes): objects taken
   * from `objects.uploads` alone, never the store.
   */
  async assemble(
    manifest: PackedManifest,
    dir: string,
    objects: StagingObjects,
    chmod: boolean,
    part?: AssemblyPart,
    signal?: AbortSignal,
    uploadsOnly?: Uint8Array,
  ): Promise<Assembled> {
    let answer!: (outcome: Outcome) => void;
    const answered = new Promise<Outcome>((resolve) => (answer = resolve));
    const job = this.threads.openJob((message) => {
      if (isOutcome(message)) answer(message);
    });
    const abort = (): void => job.post({ type: 'abort', job: job.id });
    try {
      job.post({ type: 'assemble', job: job.id, dir, objects, manifest: manifest.packed, chmod, ...(part && { part }), ...(uploadsOnly && { uploadsOnly }) });
      signal?.addEventListener('abort', abort, { once: true });
      if (signal?.aborted) abort();
      const outcome = await answered;
      if (outcome.type === 'failed' && outcome.kind === 'aborted') throw new DeployAborted();
      if (outcome.type === 'done') return { files: outcome.files, bytes: outcome.bytes, missing: outcome.missing ?? [], ...(outcome.adopt && { newObjects: outcome.adopt }) };
      if (outcome.kind === 'missing') throw new ObjectsMissing(outcome.missing ?? []);
      throw new Error(`assembly failed: ${outcome.message}`);
    } finally {
      signal?.removeEventListener('abort', abort);
      job.close();
    }
  }
}

/** One upload on its way to the unpack thread: its batches, its window, and the answer to wait for. */
class Extraction {
  private readonly job: UnpackJob & { readonly id: number };
  private readonly window = new SendWindow(BATCH_BYTES, UNPACKER_WINDOW);
  private outcome: Outcome | undefined;
  private readonly answered: Promise<Outcome>;
  private batch: Uint8Array;
  private filled = 0;
  private readonly wake = (): void => this.window.interrupt();

  constructor(
    threads: FsThreads,
    private readonly signal: AbortSignal,
  ) {
    let answer!: (outcome: Outcome) => void;
    this.answered = new Promise((resolve) => (answer = resolve));
    this.job = threads.openJob((message: FromUnpacker) => {
      if (message.type === 'ack') {
        this.window.answered(message.data.buffer);
      } else if (isOutcome(message) && !this.outcome) {
        this.outcome = message;
        answer(message);
        this.window.interrupt();
      }
    });
    this.batch = this.window.buffer();
    signal.addEventListener('abort', this.wake);
  }

  begin(dir: string, objects: StagingObjects, limits: ArchiveLimits, chmod: boolean, expect: PackedBytes | undefined): void {
    this.job.post({ type: 'begin', job: this.job.id, dir, objects, limits, chmod, ...(expect ? { expect } : {}) });
  }

  /**
   * Sends every byte of the upload; returns how many there were. After the unpack thread
   * has answered (a refused archive) the upload is still read to its end, so the client
   * gets an answer rather than a reset connection.
   */
  async send(archive: AsyncIterable<Uint8Array>): Promise<number> {
    const iterator = archive[Symbol.asyncIterator]();
    let bytes = 0;
    try {
      for (let next = await nextUnlessAborted(iterator, this.signal); !next.done; next = await nextUnlessAborted(iterator, this.signal)) {
        const chunk = next.value;
        bytes += chunk.length;
        garbage.dropped(chunk.length);
        if (!this.outcome) await this.copy(chunk);
      }
      if (this.filled > 0) await this.ship();
      return bytes;
    } catch (error) {
      // Not awaited: with a read still pending on a stalled client, return() waits for
      // that read. The HTTP layer closes the connection; this only stops the iteration.
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
      await this.finish(false);
      throw error;
    }
  }

  /** Ends the job (or abandons it, with no upload) and waits for the unpack thread's answer. */
  finish(complete: boolean): Promise<Outcome> {
    if (!this.outcome) this.job.post({ type: complete ? 'end' : 'abort', job: this.job.id });
    return this.answered;
  }

  close(): void {
    this.signal.removeEventListener('abort', this.wake);
    this.job.close();
    this.window.release(this.batch);
  }

  /** Into a buffer of the window's own, which can be transferred, not cloned. */
  private async copy(chunk: Uint8Array): Promise<void> {
    for (let offset = 0; offset < chunk.length; ) {
      const taken = Math.min(BATCH_BYTES - this.filled, chunk.length - offset);
      this.batch.set(chunk.subarray(offset, offset + taken), this.filled);
      this.filled += taken;
      offset += taken;
      if (this.filled === BATCH_BYTES) await this.ship();
    }
  }

  private async ship(): Promise<void> {
    while (this.window.full && !this.outcome) {
      await this.window.room();
      if (this.signal.aborted) throw new DeployAborted();
    }
    const data = this.batch.subarray(0, this.filled);
    this.filled = 0;
    if (this.outcome) return;
    this.window.sent();
    this.job.post({ type: 'chunk', job: this.job.id, data }, [data.buffer as ArrayBuffer]);
    this.batch = this.window.buffer();
  }
}
