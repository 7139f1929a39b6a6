import { isMainThread } from 'node:worker_threads';
import { spareBytes } from './send-window.js';

type Collect = (options?: { type: 'minor' | 'major' }) => void;

/** V8's collector, when the process runs with --expose-gc (`npm start` does). */
const collect = (globalThis as { gc?: Collect }).gc;

/**
 * Buffers still held after a minor collection, in a worker, beyond which it makes a full
 * one. A buffer that outlives two minor collections (one waiting in the inflate queue
 * while a large archive's per-entry objects trigger scavenges) is promoted, and only a
 * full collection frees it, which V8 starts late; 8 MiB keeps three deploys at once within
 * the memory target (docs/performance.md).
 */
const HELD_LIMIT = 8 * 1024 * 1024;

/**
 * Collects the young generation after every `everyBytes` of buffers a thread has let go of.
 * Upload and inflate buffers live outside V8's heap, and V8 collects them only once tens of
 * MB have piled up. A minor collection of a small young generation is cheap;
 * docs/performance.md has the figures.
 * In a worker thread, if more than HELD_LIMIT of buffers survive it, a full collection
 * follows (7-30 ms, off the HTTP event loop; never on the main thread, where it would hold
 * every request). Without --expose-gc this does nothing, and memory is bounded only by
 * V8's own schedule.
 */
export class YoungGarbage {
  private sinceCollected = 0;

  constructor(private readonly everyBytes: number) {}

  dropped(bytes: number): void {
    this.sinceCollected += bytes;
    if (this.sinceCollected < this.everyBytes || !collect) return;
    this.sinceCollected = 0;
    collect({ type: 'minor' });
    // gc({ type: 'major' }) frees nothing in Node 20; the full gc() does (as would the async form, later).
    if (!isMainThread && process.memoryUsage().arrayBuffers - spareBytes() > HELD_LIMIT) collect();
  }
}
