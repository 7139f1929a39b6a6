import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';

/**
 * How far below the main thread the unpack and writer threads run. On two cores a large
 * upload keeps both threads busy; at equal priority the kernel makes the event loop wait
 * its turn behind them, and `GET /api/v1/status` (and every other request) waits with it.
 * At nice 10 a thread weighs about a tenth of the main thread: it still gets every cycle
 * nobody else wants, so a deploy on an idle host is as fast, but the event loop, which
 * only needs a few milliseconds at a time, runs as soon as it wakes (docs/performance.md).
 */
export const BULK_THREAD_NICE = 10;

/**
 * Lowers the calling thread's priority, not the process's: on Linux `setpriority` given a
 * thread id applies to that thread alone. Elsewhere there is no `/proc/thread-self`, and
 * the thread keeps its priority; that costs latency, never correctness.
 */
export function lowerThisThreadsPriority(nice: number = BULK_THREAD_NICE): boolean {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (!Number.isInteger(tid) || tid <= 0) return false;
    setPriority(tid, nice);
    return true;
  } catch {
    return false;
  }
}
