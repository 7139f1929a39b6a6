import { ClientGone, ServiceStopping, TooManyDeploys, TurnTaken } from './http-errors.js';

export interface SlotLimits {
  /** Deploys reading and unpacking at once (DEPLOYS_MAX_CONCURRENT). */
  readonly concurrent: number;
  /** Deploys waiting for a slot beyond those (DEPLOYS_MAX_QUEUED); more are refused at once. */
  readonly queued: number;
  /** How long one may wait before it is refused. */
  readonly maxWaitMs: number;
  /**
   * A turn (DEPLOY_TURN_SECONDS): how long a user may hold more than a fair share of the
   * slots while another user waits; 0 lets it hold them until they end.
   */
  readonly turnMs: number;
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
  /**
   * Fires when the slot is taken back: the holder gives its work up, then releases. Its
   * reason is a TurnTaken when the slot went to another user at the end of a turn, and
   * no HttpError when it went to a deploy that waited while this one was quiet.
   */
  readonly revoked: AbortSignal;
  /**
   * The holder has what its work needs, and will give the slot back once that is done
   * (an upload whose body is in, a publish): taking it back would only waste the work,
   * so neither a turn nor quietness does, and another holder is taken back instead.
   */
  keep(): void;
  /** Gives the slot back; calling it again does nothing. */
  release(): void;
}

interface Waiter {
  readonly user: string;
  grant(): void;
  refuse(error: Error): void;
}

interface Holder {
  readonly user: string;
  /** performance.now() when it was granted. */
  readonly since: number;
  /** Not to be taken back (Slot.keep). */
  kept: boolean;
  readonly revoked: AbortSignal;
  revoke(reason?: Error): void;
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
 *
 * Nor may a user hold more than a fair share for ever: uploads that move just fast enough
 * never go quiet, and would keep another user waiting for hours. A user's share is the
 * slots over the users holding or waiting for them. While another user below its share
 * waits, the user keeping the most beyond its share loses its longest-held slot once that
 * has been held for a turn (`turnMs`); within its share a user is never cut off, and a
 * deploy that ends within a turn is never touched. So that one user's deploys cannot
 * keep others from waiting at all, a full queue makes room for a newcomer by refusing the
 * newest waiter of the user with the most slots held and waited for.
 */
export class DeploySlots {
  /** The slots held, in the order they were granted. */
  private readonly holders = new Set<Holder>();
  private readonly queue: Waiter[] = [];
  /** How to take back each quiet holder's slot, in the order they went quiet. */
  private readonly quietHolders = new Set<() => void>();
  /** Slots taken back and not yet released: the waiters they are for need no other. */
  private revoking = 0;
  private closed = false;
  /** When the next holder's turn ends, while a waiter is owed a slot it could take. */
  private turnTimer: NodeJS.Timeout | undefined;

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
    if (this.holders.size < this.limits.concurrent) return Promise.resolve(this.take(user));
    if (this.queue.length >= this.limits.queued) {
      const crowdedOut = this.crowdOut(user);
      if (crowdedOut === undefined) return Promise.reject(new TooManyDeploys());
      crowdedOut.refuse(new TooManyDeploys());
    }
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
        this.takeTurns();
      };
      const onAbort = (): void => leave(new ClientGone());
      const timer = setTimeout(() => leave(new TooManyDeploys()), this.limits.maxWaitMs);
      signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
      this.reclaim();
      this.takeTurns();
    });
  }

  /** Refuses every waiting deploy and any later one; running deploys keep their slots. */
  close(): void {
    this.closed = true;
    for (const waiter of this.queue.splice(0)) waiter.refuse(new ServiceStopping());
    this.takeTurns();
  }

  private take(user: string): Slot {
    const revocation = new AbortController();
    const holder: Holder = {
      user,
      since: performance.now(),
      kept: false,
      revoked: revocation.signal,
      revoke: (reason) => {
        this.quietHolders.delete(holder.revoke);
        this.revoking += 1;
        revocation.abort(reason);
      },
    };
    this.holders.add(holder);
    let released = false;
    return {
      revoked: revocation.signal,
      keep: () => {
        holder.kept = true;
        this.quietHolders.delete(holder.revoke);
        this.takeTurns();
      },
      quiet: (isQuiet) => {
        if (released || revocation.signal.aborted || holder.kept) return;
        if (!isQuiet) this.quietHolders.delete(holder.revoke);
        else if (!this.quietHolders.has(holder.revoke)) {
          this.quietHolders.add(holder.revoke);
          this.reclaim();
        }
      },
      release: () => {
        if (released) return;
        released = true;
        this.quietHolders.delete(holder.revoke);
        if (revocation.signal.aborted) this.revoking -= 1;
        this.holders.delete(holder);
        while (this.holders.size < this.limits.concurrent && this.queue.length > 0) this.next(user).grant();
        this.takeTurns();
      },
    };
  }

  /** Slots `user` holds, counting those taken back and not yet released. */
  private heldBy(user: string): number {
    let held = 0;
    for (const holder of this.holders) if (holder.user === user) held += 1;
    return held;
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
   * Takes back, for each waiting deploy whose user is below its share and that no slot
   * already coming free will serve, a slot whose turn has ended from the user keeping the
   * most beyond its share (its longest-held); if a turn has yet to end, looks again then.
   * A waiter is owed the share rounded down (at least one); a holder may keep it rounded
   * up, so a user that has no more than its due is never cut off.
   */
  private takeTurns(): void {
    clearTimeout(this.turnTimer);
    this.turnTimer = undefined;
    if (this.limits.turnMs <= 0 || this.queue.length === 0) return;
    const users = new Set([...this.holders].map((holder) => holder.user));
    for (const waiter of this.queue) users.add(waiter.user);
    const owedShare = Math.max(1, Math.floor(this.limits.concurrent / users.size));
    const keptShare = Math.ceil(this.limits.concurrent / users.size);
    let owed = -this.revoking;
    for (const [user, count] of countBy(this.queue)) owed += Math.min(count, Math.max(0, owedShare - this.heldBy(user)));
    const now = performance.now();
    let due = Infinity;
    while (owed > 0) {
      const keeps = countBy([...this.holders].filter((holder) => !holder.revoked.aborted));
      let taken: Holder | undefined;
      // Holders in the order granted: a user's first found is its longest-held.
      for (const holder of this.holders) {
        const kept = keeps.get(holder.user) ?? 0;
        if (holder.revoked.aborted || holder.kept || kept <= keptShare) continue;
        const ends = holder.since + this.limits.turnMs;
        if (ends > now) due = Math.min(due, ends);
        else if (taken === undefined || kept > keeps.get(taken.user)!) taken = holder;
      }
      if (taken === undefined) break;
      taken.revoke(new TurnTaken(keeps.get(taken.user)!, this.limits.concurrent, Math.round(this.limits.turnMs / 1000)));
      owed -= 1;
    }
    if (owed > 0 && due !== Infinity) this.turnTimer = setTimeout(() => this.takeTurns(), due - now).unref();
  }

  /**
   * With the queue full, the newest waiter of the user with the most slots held and
   * waited for, if that is two or more beyond `user`'s, taken out of the queue: else one
   * user's deploys could fill it, and another user could never wait, nor be owed a turn.
   */
  private crowdOut(user: string): Waiter | undefined {
    const weights = countBy([...this.holders, ...this.queue]);
    let heaviest: string | undefined;
    // Beyond the newcomer's own weight once it waits: a swap between equals changes nothing.
    let most = (weights.get(user) ?? 0) + 1;
    // From the back: between users as heavy, the one whose deploy waited the least.
    for (let at = this.queue.length - 1; at >= 0; at -= 1) {
      const weight = weights.get(this.queue[at]!.user)!;
      if (weight > most) [heaviest, most] = [this.queue[at]!.user, weight];
    }
    if (heaviest === undefined) return undefined;
    for (let at = this.queue.length - 1; at >= 0; at -= 1) if (this.queue[at]!.user === heaviest) return this.queue.splice(at, 1)[0];
    return undefined;
  }

  /**
   * Takes the first waiter among those whose user holds the fewest slots; between users
   * holding as many, one other than `releasing` (who just gave a slot back): with a
   * single slot, a user must not win it again over another who waits.
   */
  private next(releasing: string): Waiter {
    const rank = (waiter: Waiter): number => 2 * this.heldBy(waiter.user) + (waiter.user === releasing ? 1 : 0);
    let best = 0;
    for (let at = 1; at < this.queue.length; at += 1) if (rank(this.queue[at]!) < rank(this.queue[best]!)) best = at;
    return this.queue.splice(best, 1)[0]!;
  }
}

/** How many of `items` each user has. */
function countBy(items: Iterable<{ readonly user: string }>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { user } of items) counts.set(user, (counts.get(user) ?? 0) + 1);
  return counts;
}
