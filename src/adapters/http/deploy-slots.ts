import { ClientGone, ServiceStopping, TooManyDeploys } from './http-errors.js';

export interface SlotLimits {
  /** Deploys reading and unpacking at once (DEPLOYS_MAX_CONCURRENT). */
  readonly concurrent: number;
  /** Deploys waiting for a slot beyond those (DEPLOYS_MAX_QUEUED); more are refused at once. */
  readonly queued: number;
  /** How long one may wait before it is refused. */
  readonly maxWaitMs: number;
}

/**
 * Below Node's 300 s requestTimeout, which would otherwise cut a waiting deploy's
 * connection with no answer at all; a client told 503 and Retry-After can do better.
 */
export const MAX_WAIT_MS = 120_000;

/** Gives the slot back; calling it again does nothing. */
export type ReleaseSlot = () => void;

interface Waiter {
  grant(): void;
  refuse(error: Error): void;
}

/**
 * A first-come, first-served semaphore over the deploys that unpack at once. Every
 * unpacking deploy holds a worker thread, its buffers and a staging area; a waiting one
 * holds only its paused socket, because its body is not read until it has a slot.
 */
export class DeploySlots {
  private running = 0;
  private readonly queue: Waiter[] = [];
  private closed = false;

  constructor(private readonly limits: SlotLimits) {}

  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Resolves once the caller may unpack. Rejects with TooManyDeploys when the queue is
   * full or the wait outlasts `maxWaitMs`, ServiceStopping once close() is called, and
   * ClientGone when `signal` fires (the client left): each leaves the queue at once.
   */
  acquire(signal: AbortSignal): Promise<ReleaseSlot> {
    if (this.closed) return Promise.reject(new ServiceStopping());
    if (signal.aborted) return Promise.reject(new ClientGone());
    if (this.running < this.limits.concurrent && this.queue.length === 0) {
      this.running += 1;
      return Promise.resolve(this.releaser());
    }
    if (this.queue.length >= this.limits.queued) return Promise.reject(new TooManyDeploys());
    return new Promise<ReleaseSlot>((resolve, reject) => {
      const settle = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        grant: () => {
          settle();
          this.running += 1;
          resolve(this.releaser());
        },
        refuse: (error) => {
          settle();
          reject(error);
        },
      };
      const leave = (error: Error): void => {
        const at = this.queue.indexOf(waiter);
        if (at !== -1) this.queue.splice(at, 1);
        waiter.refuse(error);
      };
      const onAbort = (): void => leave(new ClientGone());
      const timer = setTimeout(() => leave(new TooManyDeploys()), this.limits.maxWaitMs);
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  /** Refuses every waiting deploy and any later one; running deploys keep their slots. */
  close(): void {
    this.closed = true;
    for (const waiter of this.queue.splice(0)) waiter.refuse(new ServiceStopping());
  }

  private releaser(): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running -= 1;
      while (this.running < this.limits.concurrent && this.queue.length > 0) this.queue.shift()!.grant();
    };
  }
}
