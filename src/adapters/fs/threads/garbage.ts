import { isMainThread } from 'node:worker_threads';
import { spareBytes } from './send-window.js';

type Collect = (options?: { type: 'minor' | 'major' }) => void;

/** V8's collector, when the process runs with --expose-gc (`npm start` does). */
const collect = (globalThis as { gc?: Collect }).gc;

/**
 * Buffers still held after a minor collection, in a worker, beyond which it makes a full
 * one. A buffer that outlives two minor collections (one waiting in the inflate queue
 * while a 40,000-file archive's per-entry objects trigger a scavenge every ~350 KB) is
 * promoted, and only a full collection frees it: V8 started one only once ~38 MiB of
 * them had piled up in the worker, and the docs site peaked at 130-145 MiB RSS. At
 * 12 MiB, heaptrack found 10.7 MiB of such buffers live at the peak of three deploys at
 * once (two unpacking); at 8, three at once peaked at 126.6 MiB RSS against 128.7.
 */
const HELD_LIMIT = 8 * 1024 * 1024;

/**
 * Collects the young generation after every `everyBytes` of buffers a thread has let go of.
 * Upload and inflate buffers live outside V8's heap, and V8 collects them only once tens of
 * MB have piled up: a 100 MB upload peaked at 143 MiB RSS that way. A minor collection of a
 * small young generation takes well under a millisecond; docs/performance.md has the figures.
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
    // gc({ type: 'major' }) frees no buffers in Node 20: only the full gc() does.
    if (!isMainThread && process.memoryUsage().arrayBuffers - spareBytes() > HELD_LIMIT) collect();
  }
}
