import type { MessagePort } from 'node:worker_threads';
import { getHeapStatistics } from 'node:v8';

/** V8's collector, when the process runs with --expose-gc (`npm start` does). */
const collect = (globalThis as { gc?: () => void }).gc;

/**
 * Makes one full collection in this worker once none of `ports` has brought a message for
 * `quietMs`, `busy()` says its work is done, and its heap holds more than `heldBytes`.
 * What a large job leaves (a 40,000-file walk's or assembly's objects) is
 * otherwise kept until the next job's allocations start a collection, and that job's peak
 * stacks on it. Only past `heldBytes`: collecting after every job shrank the heap an
 * ordinary archive deploy grows again, and made the next one slower (docs/performance.md).
 * A worker's collection holds no request. Without --expose-gc this does nothing.
 */
export function collectWhenQuiet(ports: readonly MessagePort[], busy: () => boolean, { quietMs = 500, heldBytes = 0 } = {}): void {
  if (!collect) return;
  // One timer, restarted by each message (and after it fired) without one made per message.
  let timer: NodeJS.Timeout | undefined;
  const quiet = (): void => {
    if (busy()) timer!.refresh();
    else if (getHeapStatistics().used_heap_size > heldBytes) collect();
  };
  const sent = (): void => void (timer ? timer.refresh() : (timer = setTimeout(quiet, quietMs).unref()));
  for (const port of ports) port.on('message', sent);
}
