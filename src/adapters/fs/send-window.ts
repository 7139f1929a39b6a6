/**
 * The one flow control of the unpack path, used by both of its hops (upload → unpack
 * thread, unpack thread → writer thread). The sender fills a buffer, transfers it with
 * its message, and the receiver's acknowledgement brings the same buffer back to be
 * filled again. At most `window` messages are unanswered: beyond that the sender waits
 * (and stops reading its own input), so a hop holds at most window + 1 buffers however
 * fast its input arrives, and nothing is copied into a new buffer per message.
 */
export class SendWindow {
  private readonly spare: Uint8Array[] = [];
  private unanswered = 0;
  private waiting: (() => void)[] = [];

  constructor(
    private readonly bufferBytes: number,
    private readonly window: number,
  ) {}

  /** A buffer to fill: one that came back, or a new one. */
  buffer(): Uint8Array {
    return this.spare.pop() ?? new Uint8Array(this.bufferBytes);
  }

  /** Counts a message just sent with one of this window's buffers. */
  sent(): void {
    this.unanswered += 1;
  }

  /** The receiver is done with a message; its buffer can be filled again. */
  answered(buffer: ArrayBufferLike): void {
    this.unanswered -= 1;
    if (buffer.byteLength === this.bufferBytes) this.spare.push(new Uint8Array(buffer));
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
