import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import type { Slot } from './deploy-slots.js';
import { ClientGone, HttpError, UploadStalled, UploadTooLarge } from './http-errors.js';

export interface UploadLimits {
  readonly maxBytes: number;
  /** The upload fails after this long without a body byte while it is being asked for; 0 waits for ever. */
  readonly idleSeconds: number;
  /** After this long without one, it gives its slot up to any deploy that waits; 0 never does. */
  readonly stallSeconds: number;
}

/** The deploy slot an upload is read in, as the upload sees it. */
export type UploadSlot = Pick<Slot, 'quiet' | 'revoked' | 'keep'>;

/** For a body read outside a deploy slot (a manifest, under its own turns): nothing to give up. */
export const NO_SLOT: UploadSlot = { quiet: () => undefined, revoked: new AbortController().signal, keep: () => undefined };

/**
 * Bytes a second below which an upload is as good as stalled while another deploy waits
 * for its slot: a byte every few seconds is never silent, and would hold a slot for ever.
 * Any link a site is deployed over moves far more (docs/security.md).
 */
export const MOVING_BYTES_PER_SECOND = 8 * 1024;

/**
 * Each span of `stallSeconds` judges the bytes it brought, for a client that is never
 * silent but hardly sends. A span the pipe held the request paused for half of or more
 * is the unpacking's, not the client's; a moment's pause (a burst filling the pipe's
 * buffer, which a client can cause at will) excuses nothing.
 */
class UploadSpans {
  private bytes = 0;
  private pausedMs = 0;
  private pausedAt: number | undefined;
  /** What the last span brought, while that was too few: what a 408 for it says. */
  private slowBy: number | undefined;
  private readonly enough: number;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(stallSeconds: number, tooFew: () => void) {
    const spanMs = stallSeconds * 1000;
    this.enough = stallSeconds * MOVING_BYTES_PER_SECOND;
    this.timer = stallSeconds > 0 ? setInterval(() => {
      const now = performance.now();
      if (this.pausedAt !== undefined) {
        this.pausedMs += now - this.pausedAt;
        this.pausedAt = now;
      }
      this.slowBy = this.pausedMs * 2 >= spanMs || this.bytes >= this.enough ? undefined : this.bytes;
      if (this.slowBy !== undefined) tooFew();
      this.bytes = 0;
      this.pausedMs = 0;
    }, spanMs) : undefined;
  }

  get slow(): number | undefined {
    return this.slowBy;
  }

  received(bytes: number): void {
    this.bytes += bytes;
  }

  paused(): void {
    this.pausedAt ??= performance.now();
  }

  resumed(): void {
    if (this.pausedAt !== undefined) this.pausedMs += performance.now() - this.pausedAt;
    this.pausedAt = undefined;
  }

  /** Whether the upload moves again: a slow span is made good only by enough bytes in the next. */
  moving(): boolean {
    if (this.slowBy !== undefined && this.bytes < this.enough) return false;
    this.slowBy = undefined;
    return true;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/**
 * Watches an upload's body as it streams: past `maxBytes` it is too large, a client
 * that hangs up is gone, and one silent for `idleSeconds` while the body is wanted has
 * stalled. Sending fewer than MOVING_BYTES_PER_SECOND over a span of `stallSeconds`, it
 * tells `slot` it is quiet, and has stalled as soon as the slot is taken back for a
 * deploy that waits. Each failure calls `fail` once; `stop` ends the watching, and
 * `delivered` says the deploy has what it needs, after which the slot is not given up.
 */
export function watchUpload(req: IncomingMessage, limits: UploadLimits, slot: UploadSlot, fail: (error: HttpError) => void): { stop(): void; delivered(): void } {
  const timers: NodeJS.Timeout[] = [];
  let stopped = false;
  const spans = new UploadSpans(limits.stallSeconds, () => slot.quiet(true));
  // Taken back at the end of a turn (a TurnTaken), or else because it went quiet.
  const onRevoked = (): void => {
    const reason: unknown = slot.revoked.reason;
    failOnce(reason instanceof HttpError ? reason : new UploadStalled(limits.stallSeconds, spans.slow));
  };
  const stop = (): void => {
    stopped = true;
    for (const timer of timers) clearTimeout(timer);
    spans.stop();
    slot.revoked.removeEventListener('abort', onRevoked);
    slot.quiet(false);
  };
  const failOnce = (error: HttpError): void => {
    if (stopped) return;
    stop();
    fail(error);
  };
  // Silence counts only while the body is wanted. When the unpacking falls behind (a slow
  // disk), the pipe pauses the request: the client is waiting for us, not stalled, and
  // its clocks start afresh when the pipe resumes it.
  const afterSilence = (seconds: number, then: () => void): void => {
    if (seconds > 0) timers.push(setTimeout(() => !req.isPaused() && then(), seconds * 1000));
  };
  afterSilence(limits.idleSeconds, () => failOnce(new UploadStalled(limits.idleSeconds)));
  afterSilence(limits.stallSeconds, () => slot.quiet(true));
  const moving = (): void => {
    for (const timer of timers) timer.refresh();
    if (spans.moving()) slot.quiet(false);
  };
  slot.revoked.addEventListener('abort', onRevoked, { once: true });
  // Taking the slot back now would only waste the work done, and could put a 503 for
  // now in place of the deploy's own answer (a refusal the client must not retry). The
  // rest of the body is still read under the byte and silence limits.
  const delivered = (): void => {
    slot.revoked.removeEventListener('abort', onRevoked);
    slot.keep();
  };

  let received = 0;
  req.on('data', (chunk: Buffer) => {
    received += chunk.length;
    spans.received(chunk.length);
    if (received > limits.maxBytes) failOnce(new UploadTooLarge());
    if (!stopped) moving();
  });
  req.on('pause', () => spans.paused());
  req.on('resume', () => {
    spans.resumed();
    if (!stopped && !req.complete) moving();
  });
  req.on('close', () => {
    if (stopped) return;
    if (req.complete) stop();
    else failOnce(new ClientGone());
  });
  // The whole body is in: nothing more to wait for, and the slot is the unpacking's.
  req.on('end', () => !stopped && stop());
  return { stop, delivered };
}

/**
 * A request body that is itself the upload (a batch of an incremental deploy's
 * objects), under the same limits as a deploy's file part. A failure ends `body` with
 * it and is reported through `failure()`, which outranks what it then caused downstream.
 */
export function readUploadBody(req: IncomingMessage, limits: UploadLimits, slot: UploadSlot): { body: Readable; failure(): HttpError | undefined } {
  const body = new PassThrough({ highWaterMark: 64 * 1024 });
  let failed: HttpError | undefined;
  const watch = watchUpload(req, limits, slot, (error) => {
    failed = error;
    req.unpipe(body);
    body.destroy(error);
  });
  body.on('close', () => watch.stop());
  req.pipe(body);
  return { body, failure: () => failed };
}
