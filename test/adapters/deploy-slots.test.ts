import { describe, expect, it } from 'vitest';
import { DeploySlots } from '../../src/adapters/http/deploy-slots.js';
import { ClientGone, ServiceStopping, TooManyDeploys } from '../../src/adapters/http/http-errors.js';

const never = new AbortController().signal;
const settled = async <T>(p: Promise<T>): Promise<'pending' | 'granted' | Error> => {
  const outcome = await Promise.race([p.then(() => 'granted' as const, (e: Error) => e), new Promise<'pending'>((r) => setTimeout(() => r('pending'), 10))]);
  return outcome;
};

describe('DeploySlots', () => {
  it('grants `concurrent` slots at once and the rest in arrival order, one per release', async () => {
    const slots = new DeploySlots({ concurrent: 2, queued: 10, maxWaitMs: 60_000 });
    const a = await slots.acquire('u', never);
    const b = await slots.acquire('u', never);
    const order: string[] = [];
    const c = slots.acquire('u', never).then((r) => (order.push('c'), r));
    const d = slots.acquire('u', never).then((r) => (order.push('d'), r));
    expect(slots.waiting).toBe(2);
    expect(await settled(c)).toBe('pending');
    b();
    b(); // a second call gives nothing back again
    expect(await settled(c)).toBe('granted');
    expect(await settled(d)).toBe('pending');
    a();
    await d;
    expect(order).toEqual(['c', 'd']);
    expect(slots.waiting).toBe(0);
    (await c)();
    (await d)();
    // all four back: two fresh ones are granted at once
    await slots.acquire('u', never);
    await slots.acquire('u', never);
  });

  it("hands a freed slot to the user holding the fewest, not to the next of a user who holds them all", async () => {
    const slots = new DeploySlots({ concurrent: 2, queued: 10, maxWaitMs: 60_000 });
    const hog = [await slots.acquire('hog', never), await slots.acquire('hog', never)];
    const order: string[] = [];
    const queued = [
      slots.acquire('hog', never).then((r) => (order.push('hog 3'), r)),
      slots.acquire('hog', never).then((r) => (order.push('hog 4'), r)),
      slots.acquire('other', never).then((r) => (order.push('other 1'), r)),
      slots.acquire('other', never).then((r) => (order.push('other 2'), r)),
    ];
    hog[0]!();
    await settled(queued[2]!);
    // hog holds one, other none: other's first deploy goes first, although it came later.
    expect(order).toEqual(['other 1']);
    hog[1]!();
    await settled(queued[0]!);
    // hog holds none now and other one: hog's next deploy goes.
    expect(order).toEqual(['other 1', 'hog 3']);
    (await queued[2]!)();
    await settled(queued[3]!);
    expect(order).toEqual(['other 1', 'hog 3', 'other 2']);
    (await queued[0]!)();
    (await queued[3]!)();
    await queued[1]!;
    expect(order).toEqual(['other 1', 'hog 3', 'other 2', 'hog 4']);
  });

  it('with one slot, a user giving theirs back does not win it again over another who waits', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 10, maxWaitMs: 60_000 });
    const first = await slots.acquire('hog', never);
    const order: string[] = [];
    const hog = slots.acquire('hog', never).then((r) => (order.push('hog'), r));
    const other = slots.acquire('other', never).then((r) => (order.push('other'), r));
    first();
    (await other)();
    (await hog)();
    expect(order).toEqual(['other', 'hog']);
  });

  it('refuses at once when the queue is full', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 1, maxWaitMs: 60_000 });
    await slots.acquire('u', never);
    const waiting = slots.acquire('u', never);
    await expect(slots.acquire('u', never)).rejects.toBeInstanceOf(TooManyDeploys);
    expect(slots.waiting).toBe(1);
    expect(await settled(waiting)).toBe('pending');
  });

  it('with no queue at all, refuses whatever finds every slot taken', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 0, maxWaitMs: 60_000 });
    const release = await slots.acquire('u', never);
    await expect(slots.acquire('u', never)).rejects.toBeInstanceOf(TooManyDeploys);
    release();
    await slots.acquire('u', never);
  });

  it('refuses a deploy that waited too long, and its place goes to the next', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 1, maxWaitMs: 50 });
    const release = await slots.acquire('u', never);
    const first = slots.acquire('u', never);
    await expect(first).rejects.toBeInstanceOf(TooManyDeploys);
    expect(slots.waiting).toBe(0);
    const second = slots.acquire('u', never);
    release();
    expect(await settled(second)).toBe('granted');
  });

  it('a waiter whose client leaves is out of the queue at once; one already gone never queues', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 1, maxWaitMs: 60_000 });
    const release = await slots.acquire('u', never);
    const client = new AbortController();
    const leaving = slots.acquire('u', client.signal);
    client.abort();
    await expect(leaving).rejects.toBeInstanceOf(ClientGone);
    expect(slots.waiting).toBe(0);
    await expect(slots.acquire('u', client.signal)).rejects.toBeInstanceOf(ClientGone);
    const next = slots.acquire('u', never);
    expect(slots.waiting).toBe(1);
    release();
    expect(await settled(next)).toBe('granted');
  });

  it('close() refuses every waiter and every later deploy; running ones keep their slots', async () => {
    const slots = new DeploySlots({ concurrent: 1, queued: 5, maxWaitMs: 60_000 });
    const release = await slots.acquire('u', never);
    const waiters = [slots.acquire('u', never), slots.acquire('u', never)];
    slots.close();
    for (const w of waiters) await expect(w).rejects.toBeInstanceOf(ServiceStopping);
    expect(slots.waiting).toBe(0);
    await expect(slots.acquire('u', never)).rejects.toBeInstanceOf(ServiceStopping);
    release();
  });

  it('a refusal carries a Retry-After in seconds', () => {
    expect(new TooManyDeploys().headers).toEqual({ 'Retry-After': expect.stringMatching(/^[1-9]\d*$/) });
    expect(new TooManyDeploys().status).toBe(503);
    expect(new ServiceStopping().headers['Retry-After']).toMatch(/^[1-9]\d*$/);
  });
});
