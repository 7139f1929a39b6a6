import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ClientGone, ServiceStopping, TooManyDeploys } from '../../src/adapters/http/http-errors.js';
import { SessionOpens, type Turn } from '../../src/adapters/http/session-opens.js';

/** A response whose client is still there until `hangUp`. */
function response(): ServerResponse & { hangUp(): void } {
  const res = Object.assign(new EventEmitter(), { req: { socket: { destroyed: false } } });
  return Object.assign(res, {
    hangUp: () => {
      res.req.socket.destroyed = true;
      res.emit('close');
    },
  }) as unknown as ServerResponse & { hangUp(): void };
}

/** A turn asked for, and what has become of it so far. */
function ask(opens: SessionOpens, user: string, order: string[] = [], res = response()) {
  const asked = { state: 'waiting' as 'waiting' | 'reading' | Error, end: undefined as Turn['end'] | undefined, res };
  const done = opens.turn(user, res).then(
    (turn) => {
      asked.state = 'reading';
      asked.end = turn.end;
      order.push(user);
    },
    (error: Error) => (asked.state = error),
  );
  return Object.assign(asked, { done });
}

/** Lets the promises settled so far run their callbacks. */
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('SessionOpens, turns to read a manifest', () => {
  it('gives `concurrent` turns at once; a freed one goes to the user reading fewest, first come first served among equals', async () => {
    const opens = new SessionOpens({ concurrent: 2, queued: 10, maxWaitMs: 60_000, turnMs: 0 });
    const order: string[] = [];
    const hog = [ask(opens, 'hog', order), ask(opens, 'hog', order)];
    await tick();
    expect(hog.map((a) => a.state)).toEqual(['reading', 'reading']);
    const waiting = [ask(opens, 'hog', order), ask(opens, 'other', order), ask(opens, 'late', order)];
    await tick();
    expect(waiting.map((a) => a.state)).toEqual(['waiting', 'waiting', 'waiting']);
    hog[0]!.end!(0);
    hog[0]!.end!(0); // a second call frees nothing more
    await tick();
    // hog still reads one: other, who came after hog's third, reads first.
    expect(waiting.map((a) => a.state)).toEqual(['waiting', 'reading', 'waiting']);
    waiting[1]!.end!(0);
    await tick();
    // hog (reading one) against late (none): late.
    expect(waiting.map((a) => a.state)).toEqual(['waiting', 'reading', 'reading']);
    hog[1]!.end!(0);
    await tick();
    expect(order).toEqual(['hog', 'hog', 'other', 'late', 'hog']);
  });

  it('refuses at once when `queued` wait already, and after `maxWaitMs` of waiting: 503 with Retry-After', async () => {
    const opens = new SessionOpens({ concurrent: 1, queued: 1, maxWaitMs: 50, turnMs: 0 });
    const reading = ask(opens, 'a');
    const waiting = ask(opens, 'b');
    const refused = ask(opens, 'c');
    await refused.done;
    expect(refused.state).toBeInstanceOf(TooManyDeploys);
    expect((refused.state as TooManyDeploys).headers).toEqual({ 'Retry-After': '10' });
    await waiting.done;
    expect(waiting.state).toBeInstanceOf(TooManyDeploys);
    // Its place is free again, and the turn still the first reader's.
    const next = ask(opens, 'd');
    reading.end!(0);
    await next.done;
    expect(next.state).toBe('reading');
  });

  it('lets a client that hangs up leave the queue, and refuses every waiting one at shutdown', async () => {
    const opens = new SessionOpens({ concurrent: 1, queued: 5, maxWaitMs: 60_000, turnMs: 0 });
    const reading = ask(opens, 'a');
    const gone = ask(opens, 'b');
    const stays = ask(opens, 'c');
    await tick();
    gone.res.hangUp();
    await gone.done;
    expect(gone.state).toBeInstanceOf(ClientGone);
    reading.end!(0);
    await stays.done;
    expect(stays.state).toBe('reading');
    const waiting = ask(opens, 'd');
    await tick();
    opens.close();
    await waiting.done;
    expect(waiting.state).toBeInstanceOf(ServiceStopping);
    const later = ask(opens, 'e');
    await later.done;
    expect(later.state).toBeInstanceOf(ServiceStopping);
    // The one reading keeps its turn to the end.
    expect(stays.state).toBe('reading');
    stays.end!(0);
  });

  it("takes a quiet reader's turn back for an open that waits, and gives it to that open once it ends", async () => {
    const opens = new SessionOpens({ concurrent: 1, queued: 5, maxWaitMs: 60_000, turnMs: 0 });
    const turn = await opens.turn('slow', response());
    turn.slot.quiet(true);
    expect(turn.slot.revoked.aborted).toBe(false);
    const waiting = ask(opens, 'other');
    await tick();
    expect(turn.slot.revoked.aborted).toBe(true);
    expect(waiting.state).toBe('waiting');
    turn.end(0);
    await waiting.done;
    expect(waiting.state).toBe('reading');
  });

  it('refuses a client already gone rather than queueing it', async () => {
    const opens = new SessionOpens({ concurrent: 1, queued: 5, maxWaitMs: 60_000, turnMs: 0 });
    ask(opens, 'a');
    const res = response();
    res.hangUp();
    const gone = ask(opens, 'b', [], res);
    await gone.done;
    expect(gone.state).toBeInstanceOf(ClientGone);
  });
});
