import type { ArchiveLimits } from '../../domain/archive-policy.js';
import { ArchiveRejected, DeployAborted, MissingArchive } from '../../domain/errors.js';
import type { FromWorker, ToWorker } from './fs-protocol.js';
import { YoungGarbage } from './garbage.js';
import type { WorkerPool } from './worker-pool.js';

export interface Extracted {
  readonly files: number;
  readonly entries: number;
  readonly bytes: number;
  readonly compressedBytes: number;
}

/**
 * Upload bytes go to the worker in batches of this size: a socket's 64 KiB reads, one
 * message and one zlib call each, cost the worker more in messages than in inflating.
 */
const BATCH_BYTES = 256 * 1024;
/** Batches handed to the worker but not yet inflated; bounds memory per deploy. */
const MAX_IN_FLIGHT = 4;
/** The socket's read buffers, once copied, are collected every this many bytes. */
const garbage = new YoungGarbage(4 * 1024 * 1024);

type Terminal = Extract<FromWorker, { type: 'done' | 'failed' }>;

/**
 * The next chunk, or DeployAborted as soon as `signal` fires. Not Promise.race with one
 * long-lived abort promise: every race adds a reaction to it that keeps that race's
 * result (a chunk) alive, which held the whole upload in memory, 1 MB per MB received.
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

/** Streams gzip-compressed tar bytes to a worker that unpacks them into a directory. */
export class ArchiveExtractor {
  constructor(private readonly pool: WorkerPool) {}

  async extract(
    archive: AsyncIterable<Uint8Array>,
    dir: string,
    limits: ArchiveLimits,
    chmod: boolean,
    signal: AbortSignal,
  ): Promise<Extracted> {
    const worker = this.pool.acquire();
    const job = this.pool.jobId();
    const post = (message: ToWorker, transfer?: ArrayBuffer[]): void => worker.postMessage(message, transfer);

    let inFlight = 0;
    let wakeSender: (() => void) | undefined;
    let terminal: Terminal | undefined;
    let settle!: (t: Terminal) => void;
    const finished = new Promise<Terminal>((resolve) => (settle = resolve));
    // Buffers go to the worker and come back with its acks: the upload is copied once,
    // into a few reused buffers, instead of into a new one for every batch.
    const spare: Uint8Array[] = [];
    const onMessage = (message: FromWorker): void => {
      if (message.job !== job || message.type === 'removed') return;
      if (message.type === 'ack') {
        inFlight -= 1;
        spare.push(new Uint8Array(message.data.buffer));
      } else if (!terminal) {
        terminal = message;
        settle(message);
      }
      wakeSender?.();
    };
    const onError = (error: Error): void => onMessage({ type: 'failed', job, kind: 'io', message: error.message });
    worker.on('message', onMessage);
    worker.on('error', onError);

    let compressedBytes = 0;
    let healthy = true;
    const fresh = (): Uint8Array => spare.pop() ?? new Uint8Array(BATCH_BYTES);
    let batch = fresh();
    let filled = 0;
    const send = async (): Promise<void> => {
      while (inFlight >= MAX_IN_FLIGHT && !terminal) {
        await new Promise<void>((wake) => (wakeSender = wake));
        if (signal.aborted) throw new DeployAborted();
      }
      const data = batch.subarray(0, filled);
      filled = 0;
      if (terminal) return;
      inFlight += 1;
      post({ type: 'chunk', job, data }, [data.buffer as ArrayBuffer]);
      batch = fresh();
    };
    const iterator = archive[Symbol.asyncIterator]();
    const onAbort = (): void => wakeSender?.();
    signal.addEventListener('abort', onAbort);
    try {
      post({ type: 'begin', job, dir, limits, chmod });
      for (;;) {
        const next = await nextUnlessAborted(iterator, signal);
        if (next.done) break;
        const chunk = next.value;
        compressedBytes += chunk.length;
        garbage.dropped(chunk.length);
        // After the worker has finished (or refused the archive) the upload is still read
        // to its end, so the client gets an answer rather than a reset connection.
        if (terminal) continue;
        // Copied into a buffer of its own, which can be transferred, not cloned.
        for (let offset = 0; offset < chunk.length; ) {
          const taken = Math.min(BATCH_BYTES - filled, chunk.length - offset);
          batch.set(chunk.subarray(offset, offset + taken), filled);
          filled += taken;
          offset += taken;
          if (filled === BATCH_BYTES) await send();
        }
      }
      if (filled > 0) await send();
      if (compressedBytes === 0) {
        post({ type: 'abort', job });
        await finished;
        throw new MissingArchive();
      }
      post({ type: 'end', job });
      const outcome = await finished;
      if (outcome.type === 'failed') {
        if (outcome.kind === 'rejected') throw new ArchiveRejected(outcome.message);
        healthy = outcome.kind !== 'io';
        throw new Error(`extraction failed: ${outcome.message}`);
      }
      return { files: outcome.files, entries: outcome.entries, bytes: outcome.bytes, compressedBytes };
    } catch (error) {
      if (!terminal) {
        post({ type: 'abort', job });
        await finished;
      }
      // Not awaited: with a read still pending on a stalled client, return() waits for
      // that read. The HTTP layer closes the connection; this only stops the iteration.
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
      throw error;
    } finally {
      signal.removeEventListener('abort', onAbort);
      worker.off('message', onMessage);
      worker.off('error', onError);
      this.pool.release(worker, healthy);
    }
  }
}
