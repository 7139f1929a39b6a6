/**
 * Buffers that came back, shared by every window of the thread (each thread has its own
 * copy of this module), so a deploy fills the buffers the one before it used. Kept per
 * window, they would be garbage once its job ended that only a full collection frees, and
 * would add to the peak of deploys at once (docs/performance.md).
 */
const spares = new Map<number, Uint8Array[]>();
/** More than two deploys' windows at once are rare: beyond this a buffer is left to the collector. */
export const SPARES_KEPT = 16;

/** Bytes the thread keeps for its next deploys: live on purpose, not garbage to collect. */
export function spareBytes(): number {
  let bytes = 0;
  for (const [size, list] of spares) bytes += size * list.length;
  return bytes;
}

const sparesOf = (bytes: number): Uint8Array[] => {
  let list = spares.get(bytes);
  if (!list) spares.set(bytes, (list = []));
  return list;
};

function keep(buffer: Uint8Array): void {
  const list = sparesOf(buffer.byteLength);
  // Kept twice, one buffer would be filled by two deploys at once.
  if (list.length < SPARES_KEPT && !list.some((spare) => spare.buffer === buffer.buffer)) list.push(buffer);
}

/**
 * The one flow control of the unpack path, used by both of its hops (upload → unpack
 * thread, unpack thread → writer thread). The sender fills a buffer, transfers it with
 * its message, and the receiver's acknowledgement brings the same buffer back to be
 * filled again. At most `window` messages are unanswered: beyond that the sender waits
 * (and stops reading its own input), so a hop holds at most window + 1 buffers however
 * fast its input arrives, and nothing is copied into a new buffer per message.
 */
export class SendWindow {
  private unanswered = 0;
  private waiting: (() => void)[] = [];

  constructor(
    private readonly bufferBytes: number,
    private readonly window: number,
  ) {}

  /** A buffer to fill: one that came back, or a new one. */
  buffer(): Uint8Array {
    return sparesOf(this.bufferBytes).pop() ?? new Uint8Array(this.bufferBytes);
  }

  /** A buffer of this window's that will not be sent after all: the next job fills it. */
  release(buffer: Uint8Array): void {
    if (buffer.buffer.byteLength === this.bufferBytes) keep(new Uint8Array(buffer.buffer));
  }

  /** Counts a message just sent with one of this window's buffers. */
  sent(): void {
    this.unanswered += 1;
  }

  /** The receiver is done with a message; its buffer can be filled again. */
  answered(buffer: ArrayBufferLike): void {
    this.unanswered -= 1;
    if (buffer.byteLength === this.bufferBytes) keep(new Uint8Array(buffer));
    for (const wake of this.waiting.splice(0)) wake();
  }

  get full(): boolean {
    return this.unanswered >= this.window;
  }

  /** Resolves once another message may be sent (at once if one may). */
  room(): Promise<void> {
    if (!this.full) return Promise.resolve();
    return new Promise((wake) => this.waiting.push(wake));
  }

  /** Wakes whoever waits for room without any: the sender has stopped and must look why. */
  interrupt(): void {
    for (const wake of this.waiting.splice(0)) wake();
  }
}
