import { describe, expect, it } from 'vitest';
import { SendWindow, SPARES_KEPT } from '../../src/adapters/fs/threads/send-window.js';

// Each test uses a buffer size of its own: the spares are shared by every window of the thread.
describe('SendWindow', () => {
  it('holds back the sender once `window` messages are unanswered, and wakes it on an answer', async () => {
    const window = new SendWindow(1001, 2);
    const sent = [window.buffer(), window.buffer()];
    window.sent();
    window.sent();
    expect(window.full).toBe(true);
    let woken = false;
    const room = window.room().then(() => (woken = true));
    await Promise.resolve();
    expect(woken).toBe(false);
    window.answered(sent[0]!.buffer);
    await room;
    expect(window.full).toBe(false);
  });

  it("gives a later deploy's window the buffers an earlier one got back", () => {
    const first = new SendWindow(1002, 4);
    const buffer = first.buffer();
    first.sent();
    first.answered(buffer.buffer);
    const second = new SendWindow(1002, 4);
    expect(second.buffer().buffer).toBe(buffer.buffer);
    // Taken: the next one is new.
    expect(second.buffer().buffer).not.toBe(buffer.buffer);
  });

  it('keeps a buffer released twice while it is still spare only once', () => {
    const window = new SendWindow(1003, 4);
    const buffer = window.buffer();
    window.release(buffer);
    window.release(buffer.subarray(0, 10));
    const a = window.buffer();
    const b = window.buffer();
    expect(a.buffer).toBe(buffer.buffer);
    expect(b.buffer).not.toBe(buffer.buffer);
  });

  it('keeps a bounded number of spares, and none of another size', () => {
    const window = new SendWindow(1004, 64);
    const buffers = Array.from({ length: SPARES_KEPT + 5 }, () => window.buffer());
    for (const buffer of buffers) window.release(buffer);
    window.release(new Uint8Array(999));
    const kept = new Set<ArrayBufferLike>();
    for (let i = 0; i < SPARES_KEPT + 5; i += 1) kept.add(window.buffer().buffer);
    expect(buffers.filter((b) => kept.has(b.buffer))).toHaveLength(SPARES_KEPT);
    expect(window.buffer().byteLength).toBe(1004);
  });
});
