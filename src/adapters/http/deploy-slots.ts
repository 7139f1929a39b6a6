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

/** A slot held by a deploy. */
export interface Slot {
  /**
   * The holder's upload has sent nothing for a while (true) or moves again (false). A
   * quiet holder's slot is taken back as soon as a deploy waits for one.
   */
  quiet(isQuiet: boolean): void;
  /** Fires when the slot is taken back: the holder gives its work up, then releases. */
  readonly revoked: AbortSignal;
  /** Gives the slot back; calling it again does nothing. */
  release(): void;
}

interface Waiter {
  readonly user: string;
  grant(): void;
  refuse(error: Error): void;
}

/**
 * A semaphore over the deploys that unpack at once. Every unpacking deploy holds a job
 * on the unpack and writer threads, its buffers and a staging area; a waiting one holds
 * only its paused socket, because its body is not read until it has a slot. A freed
 * slot goes to the waiter whose user holds the fewest slots, first come first served
 * among equals: one user's slow uploads can take every slot only while no one else
 * waits, and lose each one to another user's deploy as it comes free.
 *
 * A slot belongs to an upload that moves. One that has gone quiet (`Slot.quiet`) keeps
 * its slot while nobody waits, and loses it to the first deploy that does, whoever's:
 * fairness by user cannot help when the stalled uploads and the honest deploys share a
 * key. One quiet holder is taken back per waiter, the longest quiet first.
 */
export class DeploySlots {
  private running = 0;
  /** Slots held, by user. */
  private readonly held = new Map<string, number>();
  private readonly queue: Waiter[] = [];
  /** How to take back each quiet holder's slot, in the order they went quiet. */
  private readonly quietHolders = new Set<() => void>();
  /** Slots taken back and not yet released: the waiters they are for need no other. */
  private revoking = 0;
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
  acquire(user: string, signal: AbortSignal): Promise<Slot> {
    if (this.closed) return Promise.reject(new ServiceStopping());
    if (signal.aborted) return Promise.reject(new ClientGone());
    // Slots are handed on as soon as they free, so a free one means no one is waiting.
    if (this.running < this.limits.concurrent) return Promise.resolve(this.take(user));
    if (this.queue.length >= this.limits.queued) return Promise.reject(new TooManyDeploys());
    return new Promise<Slot>((resolve, reject) => {
      const settle = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        user,
        grant: () => {
          settle();
          resolve(this.take(user));
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
      this.reclaim();
    });
  }

  /** Refuses every waiting deploy and any later one; running deploys keep their slots. */
  close(): void {
    this.closed = true;
    for (const waiter of this.queue.splice(0)) waiter.refuse(new ServiceStopping());
  }

  private take(user: string): Slot {
    this.running += 1;
    this.held.set(user, (this.held.get(user) ?? 0) + 1);
    const revocation = new AbortController();
    const revoke = (): void => {
      this.revoking += 1;
      revocation.abort();
    };
    let released = false;
    return {
      revoked: revocation.signal,
      quiet: (isQuiet) => {
        if (released || revocation.signal.aborted) return;
        if (!isQuiet) this.quietHolders.delete(revoke);
        else if (!this.quietHolders.has(revoke)) {
          this.quietHolders.add(revoke);
          this.reclaim();
        }
      },
      release: () => {
        if (released) return;
        released = true;
        this.quietHolders.delete(revoke);
        if (revocation.signal.aborted) this.revoking -= 1;
        this.running -= 1;
        const left = this.held.get(user)! - 1;
        if (left === 0) this.held.delete(user);
        else this.held.set(user, left);
        while (this.running < this.limits.concurrent && this.queue.length > 0) this.next(user).grant();
      },
    };
  }

  /** Takes slots back from quiet holders while more deploys wait than slots are already coming free for. */
  private reclaim(): void {
    for (const revoke of this.quietHolders) {
      if (this.queue.length <= this.revoking) return;
      this.quietHolders.delete(revoke);
      revoke();
    }
  }

  /**
   * Takes the first waiter among those whose user holds the fewest slots; between users
   * holding as many, one other than `releasing` (who just gave a slot back): with a
   * single slot, a user must not win it again over another who waits.
   */
  private next(releasing: string): Waiter {
    const rank = (waiter: Waiter): number => 2 * (this.held.get(waiter.user) ?? 0) + (waiter.user === releasing ? 1 : 0);
    let best = 0;
    for (let at = 1; at < this.queue.length; at += 1) if (rank(this.queue[at]!) < rank(this.queue[best]!)) best = at;
    return this.queue.splice(best, 1)[0]!;
  }
}
