import type { ServerResponse } from 'node:http';
import type { SlotLimits } from './deploy-slots.js';
import { ClientGone, ServiceStopping, TooManyDeploys } from './http-errors.js';

/** Ends a turn, told how many bytes of manifest it read (inflated); calling it again does nothing. */
export type EndTurn = (bytesRead: number) => void;

/**
 * Manifest bytes read, in all, between major collections begun at a turn's end: what a
 * manifest's reading held is garbage all at once when it ends (50,000 long paths are tens
 * of MB), and V8 let the heap grow to several times that before collecting it. A
 * collection per 32 MiB read keeps the heap near what is live, at a cost spread thin.
 */
const COLLECT_EVERY_BYTES = 32 * 1024 * 1024;

interface Waiting {
  readonly user: string;
  /** Its turn has come (no error), or it is refused. */
  settle(error?: Error): void;
}

type Collect = (options: { type: 'major'; execution: 'async' }) => void;
/** V8's collector, when the process runs with --expose-gc (`npm start` does). */
const collect = (globalThis as { gc?: Collect }).gc;

/**
 * Turns among the incremental deploys opening a session. Reading a manifest holds what it
 * has checked until the session is answered, up to MAX_FILES entries (some 50 MB of paths
 * at the defaults), and a gzip body of a few hundred KB inflates that far: a few at a time
 * keep the service's memory bounded however many are sent. A waiting open holds only its
 * paused socket, its body read once its turn comes. A turn that frees goes to the waiting
 * open whose user reads the fewest manifests, first come first served among equals, so
 * one user's many opens delay another's by one at the most. An open is refused as a
 * waiting deploy is (503 and Retry-After) when the queue is full, after `maxWaitMs`, or
 * at shutdown. Apart from the deploy slots: an open builds nothing and is short, and
 * should not wait behind uploads, nor they behind it.
 */
export class SessionOpens {
  /** The user of each open reading its manifest. */
  private readonly readers: string[] = [];
  private readonly queue: Waiting[] = [];
  private closed = false;
  private readSinceCollected = 0;

  constructor(private readonly limits: SlotLimits) {}

  /** Resolves once `user`'s request may read its manifest; a client that hangs up meanwhile leaves the queue (ClientGone). */
  async turn(user: string, res: ServerResponse): Promise<EndTurn> {
    if (this.closed) throw new ServiceStopping();
    if (this.readers.length < this.limits.concurrent) this.readers.push(user);
    else await this.wait(user, res);
    let ended = false;
    return (bytesRead) => {
      if (ended) return;
      ended = true;
      this.readers.splice(this.readers.indexOf(user), 1);
      // Handed on at once: no open arriving meanwhile takes the turn.
      const next = this.next();
      if (next) {
        this.readers.push(next.user);
        next.settle();
      }
      this.readSinceCollected += bytesRead;
      if (this.readSinceCollected < COLLECT_EVERY_BYTES) return;
      this.readSinceCollected = 0;
      // In a task of its own after this request's, not inside it; still one pause of the
      // whole thread (30-40 ms at a 30 MB heap, docs/performance.md), once per 32 MiB read.
      // (Node 20's synchronous { type: 'major' } frees nothing; this and the full gc() do.)
      collect?.({ type: 'major', execution: 'async' });
    };
  }

  /** Refuses every waiting open and any later one; those reading keep their turns. */
  close(): void {
    this.closed = true;
    for (const waiting of this.queue.splice(0)) waiting.settle(new ServiceStopping());
  }

  private wait(user: string, res: ServerResponse): Promise<void> {
    if (res.req.socket.destroyed) return Promise.reject(new ClientGone());
    if (this.queue.length >= this.limits.queued) return Promise.reject(new TooManyDeploys());
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => this.leave(waiting, new TooManyDeploys()), this.limits.maxWaitMs);
      const onClose = (): void => this.leave(waiting, new ClientGone());
      const waiting: Waiting = {
        user,
        settle: (error) => {
          clearTimeout(timer);
          res.off('close', onClose);
          if (error) reject(error);
          else resolve();
        },
      };
      res.once('close', onClose);
      this.queue.push(waiting);
    });
  }

  private leave(waiting: Waiting, error: Error): void {
    const at = this.queue.indexOf(waiting);
    if (at === -1) return;
    this.queue.splice(at, 1);
    waiting.settle(error);
  }

  /** Takes the first waiting open among those whose user has the fewest reading. */
  private next(): Waiting | undefined {
    const reading = (waiting: Waiting): number => this.readers.filter((user) => user === waiting.user).length;
    const at = this.queue.reduce((best, waiting, i) => (reading(waiting) < reading(this.queue[best]!) ? i : best), 0);
    return this.queue.splice(at, 1)[0];
  }
}
