import type { MessagePort } from 'node:worker_threads';

/** V8's collector, when the process runs with --expose-gc (`npm start` does). */
const collect = (globalThis as { gc?: () => void }).gc;

/**
 * Makes one full collection in this worker once none of `ports` has brought a message for
 * `quietMs` and `busy()` says its work is done. What its last job left (a 40,000-file
 * walk's or unpack's objects, 10-25 MiB) is otherwise kept until the next job's
 * allocations start a collection, and that job's peak stacks on it (docs/performance.md).
 * A worker's collection holds no request; and it comes before FsThreads' heap trim (1 s),
 * so what it frees goes back to the system. Without --expose-gc this does nothing.
 */
export function collectWhenQuiet(ports: readonly MessagePort[], busy: () => boolean, quietMs = 500): void {
  if (!collect) return;
  // One timer, restarted by each message (and after it fired) without one made per message.
  let timer: NodeJS.Timeout | undefined;
  const quiet = (): void => void (busy() ? timer!.refresh() : collect());
  const sent = (): void => void (timer ? timer.refresh() : (timer = setTimeout(quiet, quietMs).unref()));
  for (const port of ports) port.on('message', sent);
}
