import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DeploySlots } from '../../src/adapters/http/deploy-slots.js';
import { ClientGone, ServiceStopping, TooManyDeploys, TurnTaken } from '../../src/adapters/http/http-errors.js';

const never = new AbortController().signal;
const settled = async <T>(p: Promise<T>): Promise<'pending' | 'granted' | Error> => {
  const outcome = await Promise.race([p.then(() => 'granted' as const, (e: Error) => e), new Promise<'pending'>((r) => setTimeout(() => r('pending'), 10))]);
  return outcome;
};

describe('DeploySlots', () => {
  it('grants `concurrent` slots at once and the rest in arrival order, one per release', async () => {
    const slots = new DeploySlots({ concurrent: 2, queued: 10, maxWaitMs: 60_000, turnMs: 0 });
    const a = await slots.acquire('u', never);
    const b = await slots.acquire('u', never);
    const order: string[] = [];
    const c = slots.acquire('u', never).then((r) => (order.push('c'), r));
    const d = slots.acquire('u', never).then((r) => (order.push('d'), r));
    expect(slots.waiting).toBe(2);
    expect(await settled(c)).toBe('pending');
    b.release();
    b.release(); // a second call gives nothing back again
    expect(await settled(c)).toBe('granted');
    expect(await settled(d)).toBe('pending');
    a.release();
    await d;
    expect(order).toEqual(['c', 'd']);
    expect(slots.waiting).toBe(0);
    (await c).release();
    (await d).release();
    // all four back: two fresh ones are granted at once
    await slots.acquire('u', never);
    await slots.acquire('u', never);
  });

  it("hands a freed slot to the user holding the fewest, not to the next of a user who holds them all", async () => {
    const slots = new DeploySlots({ concurrent: 2, queued: 10, maxWaitMs: 60_000, turnMs: 0 });
    const hog = [await slots.acquire('hog', never), await slots.acquire('hog', never)];
    const order: string[] = [];
    const queued = [
      slots.acquire('hog', never).then((r) => (order.push('hog 3'), r)),
      slots.acquire('hog', never).then((r) => (order.push('hog 4'), r)),
      slots.acquire('other', never).then((r) => (order.push('other 1'), r)),
      slots.acquire('other', never).then((r) => (order.push('other 2'), r)),
    ];
    hog[0]!.release();
    await settled(queued[2]!);
    // hog holds one, other none: other's first deploy goes first, although it came later.
    expect(order).toEqual(['other 1']);
    hog[1]!.release();
    await settled(queued[0]!);
    // hog holds none now and other one: hog's next deploy goes.
    expect(order).toEqual(['other 1', 'hog 3']);
    (await queued[2]!).release();
    await settled(queued[3]!);
    expect(order).toEqual(['other 1', 'hog 3', 'other 2']);
    (await queued[0]!).release();
    (await queued[3]!).release();
    await queued[1]!;
    expect(order).toEqual(['other 1', 'hog 3', 'other 2', 'hog 4']);
  });

  it('with one slot, a user giving theirs back does not win it again over another who waits', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 10, maxWaitMs: 60_000, turnMs: 0 });
    const first = await slots.acquire('hog', never);
    const order: string[] = [];
    const hog = slots.acquire('hog', never).then((r) => (order.push('hog'), r));
    const other = slots.acquire('other', never).then((r) => (order.push('other'), r));
    first.release();
    (await other).release();
    (await hog).release();
    expect(order).toEqual(['other', 'hog']);
  });

  it('refuses at once when the queue is full', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 1, maxWaitMs: 60_000, turnMs: 0 });
    await slots.acquire('u', never);
    const waiting = slots.acquire('u', never);
    await expect(slots.acquire('u', never)).rejects.toBeInstanceOf(TooManyDeploys);
    expect(slots.waiting).toBe(1);
    expect(await settled(waiting)).toBe('pending');
  });

  it('with no queue at all, refuses whatever finds every slot taken', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 0, maxWaitMs: 60_000, turnMs: 0 });
    const running = await slots.acquire('u', never);
    await expect(slots.acquire('u', never)).rejects.toBeInstanceOf(TooManyDeploys);
    running.release();
    await slots.acquire('u', never);
  });

  it('refuses a deploy that waited too long, and its place goes to the next', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 1, maxWaitMs: 50, turnMs: 0 });
    const running = await slots.acquire('u', never);
    const first = slots.acquire('u', never);
    await expect(first).rejects.toBeInstanceOf(TooManyDeploys);
    expect(slots.waiting).toBe(0);
    const second = slots.acquire('u', never);
    running.release();
    expect(await settled(second)).toBe('granted');
  });

  it('a waiter whose client leaves is out of the queue at once; one already gone never queues', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 1, maxWaitMs: 60_000, turnMs: 0 });
    const running = await slots.acquire('u', never);
    const client = new AbortController();
    const leaving = slots.acquire('u', client.signal);
    client.abort();
    await expect(leaving).rejects.toBeInstanceOf(ClientGone);
    expect(slots.waiting).toBe(0);
    await expect(slots.acquire('u', client.signal)).rejects.toBeInstanceOf(ClientGone);
    const next = slots.acquire('u', never);
    expect(slots.waiting).toBe(1);
    running.release();
    expect(await settled(next)).toBe('granted');
  });

  it('close() refuses every waiter and every later deploy; running ones keep their slots', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 5, maxWaitMs: 60_000, turnMs: 0 });
    const running = await slots.acquire('u', never);
    const waiters = [slots.acquire('u', never), slots.acquire('u', never)];
    slots.close();
    for (const w of waiters) await expect(w).rejects.toBeInstanceOf(ServiceStopping);
    expect(slots.waiting).toBe(0);
    await expect(slots.acquire('u', never)).rejects.toBeInstanceOf(ServiceStopping);
    running.release();
  });

  it('a quiet holder keeps its slot while nobody waits, and loses it to the first deploy that does, the same user\'s or not', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 5, maxWaitMs: 60_000, turnMs: 0 });
    const stalled = await slots.acquire('u', never);
    stalled.quiet(true);
    expect(stalled.revoked.aborted).toBe(false);
    const next = slots.acquire('u', never);
    expect(stalled.revoked.aborted).toBe(true);
    // Taken back, it is still held until its work gives up and releases it.
    expect(await settled(next)).toBe('pending');
    stalled.release();
    expect(await settled(next)).toBe('granted');
  });

  it('a holder that goes quiet while deploys wait loses its slot at once; one that moves again first keeps it', async () => {
    const slots = new DeploySlots({ concurrent: 2, queued: 5, maxWaitMs: 60_000, turnMs: 0 });
    const moving = await slots.acquire('u', never);
    const stalling = await slots.acquire('u', never);
    moving.quiet(true);
    moving.quiet(false);
    const waiting = slots.acquire('u', never);
    expect(moving.revoked.aborted).toBe(false);
    stalling.quiet(true);
    expect(stalling.revoked.aborted).toBe(true);
    expect(moving.revoked.aborted).toBe(false);
    stalling.release();
    (await waiting).release();
    moving.release();
  });

  it('takes back one quiet holder per waiting deploy, the longest quiet first', async () => {
    const slots = new DeploySlots({ concurrent: 3, queued: 5, maxWaitMs: 60_000, turnMs: 0 });
    const [a, b, c] = [await slots.acquire('u', never), await slots.acquire('u', never), await slots.acquire('u', never)];
    b.quiet(true);
    a.quiet(true);
    c.quiet(true);
    const first = slots.acquire('v', never);
    expect([a, b, c].map((s) => s.revoked.aborted)).toEqual([false, true, false]);
    // b's slot is coming free for the first waiter; a second waiter takes a's.
    const second = slots.acquire('v', never);
    expect([a, b, c].map((s) => s.revoked.aborted)).toEqual([true, true, false]);
    b.release();
    a.release();
    expect([await settled(first), await settled(second)]).toEqual(['granted', 'granted']);
    // Nobody waits now: c, quiet all along, keeps its slot.
    expect(c.revoked.aborted).toBe(false);
  });

  it('a waiter that leaves before the slot taken back for it comes free does not cost another quiet holder its slot', async () => {
    const slots = new DeploySlots({ concurrent: 2, queued: 5, maxWaitMs: 60_000, turnMs: 0 });
    const [a, b] = [await slots.acquire('u', never), await slots.acquire('u', never)];
    a.quiet(true);
    const client = new AbortController();
    const leaving = slots.acquire('u', client.signal);
    expect(a.revoked.aborted).toBe(true);
    client.abort();
    await expect(leaving).rejects.toBeInstanceOf(ClientGone);
    b.quiet(true);
    const next = slots.acquire('u', never);
    // a's slot is still coming free, and will go to `next`: b keeps its own.
    expect(b.revoked.aborted).toBe(false);
    a.release();
    expect(await settled(next)).toBe('granted');
    b.release();
  });

  describe('turns: no user keeps more than its share for ever while another waits (fake timers)', () => {
    const TURN = 60_000;
    beforeEach(() => void vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] }));
    afterEach(() => void vi.useRealTimers());
    /** Where a waiter stands once the promises queued so far have run. */
    const stateOf = async <T>(p: Promise<T>): Promise<'pending' | 'granted' | Error> => {
      let state: 'pending' | 'granted' | Error = 'pending';
      p.then(() => (state = 'granted'), (e: Error) => (state = e));
      await new Promise((resolve) => setImmediate(resolve));
      return state;
    };
    const limits = (concurrent: number, queued = 5) => ({ concurrent, queued, maxWaitMs: 3_600_000, turnMs: TURN });

    it("a user holding every slot loses its longest-held one to another user's deploy once that slot's turn ends, and no sooner", async () => {
      const slots = new DeploySlots(limits(2));
      const older = await slots.acquire('hog', never);
      vi.advanceTimersByTime(1_000);
      const newer = await slots.acquire('hog', never);
      const other = slots.acquire('other', never);
      vi.advanceTimersByTime(TURN - 1_001);
      expect(older.revoked.aborted).toBe(false);
      vi.advanceTimersByTime(1);
      expect(older.revoked.aborted).toBe(true);
      const reason = older.revoked.reason as TurnTaken;
      expect(reason).toBeInstanceOf(TurnTaken);
      expect(reason.publicMessage).toBe('turn taken back: this user held 2 of 2 slots for over 60 s while another user waited, retry later');
      expect(reason.status).toBe(503);
      expect(reason.headers['Retry-After']).toMatch(/^[1-9]\d*$/);
      // One per waiting deploy: the newer slot is within the hog's share now.
      vi.advanceTimersByTime(2 * TURN);
      expect(newer.revoked.aborted).toBe(false);
      expect(await stateOf(other)).toBe('pending');
      older.release();
      expect(await stateOf(other)).toBe('granted');
      (await other).release();
      newer.release();
    });

    it('a user within its share keeps its slot however long, and so does one whose waiting deploys are its own, and the holder of the one slot', async () => {
      const slots = new DeploySlots(limits(2));
      const a = await slots.acquire('a', never);
      const b = await slots.acquire('b', never);
      const c = slots.acquire('c', never);
      vi.advanceTimersByTime(2 * TURN);
      expect([a.revoked.aborted, b.revoked.aborted]).toEqual([false, false]);
      b.release();
      expect(await stateOf(c)).toBe('granted');
      a.release();
      (await c).release();

      const one = new DeploySlots(limits(2));
      const held = [await one.acquire('u', never), await one.acquire('u', never)];
      const own = one.acquire('u', never);
      vi.advanceTimersByTime(2 * TURN);
      expect(held.map((h) => h.revoked.aborted)).toEqual([false, false]);
      held[0]!.release();
      (await own).release();
      held[1]!.release();

      // A share smaller than the one slot is no share: DEPLOYS_MAX_CONCURRENT=1 cannot be shared by turns.
      const single = new DeploySlots(limits(1));
      const holder = await single.acquire('hog', never);
      const waiting = single.acquire('other', never);
      vi.advanceTimersByTime(2 * TURN);
      expect(holder.revoked.aborted).toBe(false);
      holder.release();
      (await waiting).release();
    });

    it('takes back as many slots as waiting users are owed: two others waiting cost a hog of three slots two, a second deploy of the same other none more', async () => {
      const slots = new DeploySlots(limits(3));
      const hog = [await slots.acquire('hog', never), await slots.acquire('hog', never), await slots.acquire('hog', never)];
      vi.advanceTimersByTime(TURN);
      const b1 = slots.acquire('b', never);
      const b2 = slots.acquire('b', never);
      // The share of two users of three slots: b is owed one, and the hog may keep two.
      expect(hog.map((h) => h.revoked.aborted)).toEqual([true, false, false]);
      const c = slots.acquire('c', never);
      expect(hog.map((h) => h.revoked.aborted)).toEqual([true, true, false]);
      hog[0]!.release();
      hog[1]!.release();
      expect([await stateOf(b1), await stateOf(c), await stateOf(b2)]).toEqual(['granted', 'granted', 'pending']);
      // The hog keeps its last slot: it is its share.
      vi.advanceTimersByTime(TURN);
      expect(hog[2]!.revoked.aborted).toBe(false);
      hog[2]!.release();
      expect(await stateOf(b2)).toBe('granted');
      for (const w of [b1, c, b2]) (await w).release();
    });

    it('cuts the user keeping the most beyond its share, not whoever was granted first', async () => {
      const slots = new DeploySlots(limits(5));
      const b = [await slots.acquire('b', never), await slots.acquire('b', never)];
      const a = [await slots.acquire('a', never), await slots.acquire('a', never), await slots.acquire('a', never)];
      vi.advanceTimersByTime(TURN);
      const c = slots.acquire('c', never);
      // Five slots over three users: b's two are its share rounded up; a's three are one too many.
      expect(b.map((h) => h.revoked.aborted)).toEqual([false, false]);
      expect(a.map((h) => h.revoked.aborted)).toEqual([true, false, false]);
      a[0]!.release();
      const granted = await c;
      // A fourth user: five slots over four is one each, two rounded up, which a and b keep.
      const d = slots.acquire('d', never);
      vi.advanceTimersByTime(2 * TURN);
      expect([...b, ...a.slice(1), granted].map((h) => h.revoked.aborted)).toEqual([false, false, false, false, false]);
      granted.release();
      (await d).release();
      for (const h of [...a.slice(1), ...b]) h.release();

      // Two users over their share: the one keeping the most loses first, though the other's slots are older.
      const eight = new DeploySlots(limits(8));
      const older = [await eight.acquire('a', never), await eight.acquire('a', never), await eight.acquire('a', never)];
      const more = await Promise.all([1, 2, 3, 4, 5].map(() => eight.acquire('b', never)));
      vi.advanceTimersByTime(TURN);
      const waiters = [eight.acquire('c', never), eight.acquire('d', never)];
      expect(older.map((h) => h.revoked.aborted)).toEqual([false, false, false]);
      expect(more.map((h) => h.revoked.aborted)).toEqual([true, true, false, false, false]);
      for (const h of [...older, ...more]) h.release();
      for (const w of waiters) (await w).release();
    });

    it("counts a slot already coming free (a quiet holder's) toward what the waiter is owed, and a waiter that leaves stops the clock", async () => {
      const slots = new DeploySlots(limits(2));
      const [a, b] = [await slots.acquire('hog', never), await slots.acquire('hog', never)];
      b.quiet(true);
      const other = slots.acquire('other', never);
      expect(b.revoked.aborted).toBe(true);
      vi.advanceTimersByTime(2 * TURN);
      expect(a.revoked.aborted).toBe(false);
      b.release();
      (await other).release();
      a.release();

      const fresh = new DeploySlots(limits(2));
      const held = [await fresh.acquire('hog', never), await fresh.acquire('hog', never)];
      const client = new AbortController();
      const gone = fresh.acquire('other', client.signal);
      vi.advanceTimersByTime(TURN / 2);
      client.abort();
      await expect(gone).rejects.toBeInstanceOf(ClientGone);
      vi.advanceTimersByTime(2 * TURN);
      expect(held.map((h) => h.revoked.aborted)).toEqual([false, false]);
      for (const h of held) h.release();
    });

    it("a full queue makes room for another user by refusing the newest waiter of the user holding and waiting for the most; between near equals it refuses the newcomer", async () => {
      const slots = new DeploySlots(limits(2, 2));
      const hog = [await slots.acquire('hog', never), await slots.acquire('hog', never)];
      const queued = [slots.acquire('hog', never), slots.acquire('hog', never)];
      const other = slots.acquire('other', never);
      expect(await stateOf(queued[1]!)).toBeInstanceOf(TooManyDeploys);
      expect(await stateOf(queued[0]!)).toBe('pending');
      expect(slots.waiting).toBe(2);
      // The hog now holds two and waits for one (3); another newcomer of the hog's is refused itself.
      await expect(slots.acquire('hog', never)).rejects.toBeInstanceOf(TooManyDeploys);
      vi.advanceTimersByTime(TURN);
      expect(hog.map((h) => h.revoked.aborted)).toEqual([true, false]);
      hog[0]!.release();
      expect(await stateOf(other)).toBe('granted');
      (await other).release();
      hog[1]!.release();
      (await queued[0]!).release();

      // a holds one and waits for one, b holds one: b's second deploy would only swap the imbalance.
      const near = new DeploySlots(limits(2, 1));
      const [a1, b1] = [await near.acquire('a', never), await near.acquire('b', never)];
      const a2 = near.acquire('a', never);
      await expect(near.acquire('b', never)).rejects.toBeInstanceOf(TooManyDeploys);
      expect(await stateOf(a2)).toBe('pending');
      a1.release();
      (await a2).release();
      b1.release();
    });

    it('a kept slot (its work has all it needs) is taken back neither at a turn\'s end nor for going quiet: another of its user\'s is', async () => {
      const slots = new DeploySlots(limits(3));
      const hog = [await slots.acquire('hog', never), await slots.acquire('hog', never), await slots.acquire('hog', never)];
      hog[0]!.keep();
      hog[0]!.quiet(true);
      vi.advanceTimersByTime(TURN);
      const other = slots.acquire('other', never);
      expect(hog.map((h) => h.revoked.aborted)).toEqual([false, true, false]);
      hog[1]!.release();
      expect(await stateOf(other)).toBe('granted');
      for (const h of [hog[0]!, hog[2]!, await other]) h.release();
    });

    it('between users as heavy, a full queue refuses the waiter of the one whose deploy came last', async () => {
      const slots = new DeploySlots({ ...limits(2, 4), turnMs: 0 });
      const held = [await slots.acquire('a', never), await slots.acquire('b', never)];
      const queued = [slots.acquire('a', never), slots.acquire('b', never), slots.acquire('x', never), slots.acquire('y', never)];
      const z = slots.acquire('z', never);
      expect(await stateOf(queued[1]!)).toBeInstanceOf(TooManyDeploys);
      expect(await stateOf(queued[0]!)).toBe('pending');
      for (const h of held) h.release();
      for (const w of [queued[0]!, queued[2]!, queued[3]!, z]) (await w).release();
    });

    it('with turnMs 0 a user keeps every slot it holds', async () => {
      const slots = new DeploySlots({ ...limits(2), turnMs: 0 });
      const hog = [await slots.acquire('hog', never), await slots.acquire('hog', never)];
      const other = slots.acquire('other', never);
      vi.advanceTimersByTime(10 * TURN);
      expect(hog.map((h) => h.revoked.aborted)).toEqual([false, false]);
      hog[0]!.release();
      (await other).release();
      hog[1]!.release();
    });
  });

  it('a refusal carries a Retry-After in seconds', () => {
    expect(new TooManyDeploys().headers).toEqual({ 'Retry-After': expect.stringMatching(/^[1-9]\d*$/) });
    expect(new TooManyDeploys().status).toBe(503);
    expect(new ServiceStopping().headers['Retry-After']).toMatch(/^[1-9]\d*$/);
  });
});
