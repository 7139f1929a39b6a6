import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import { ClientGone, type HttpError, UploadStalled, UploadTooLarge } from './http-errors.js';

export interface UploadLimits {
  readonly maxBytes: number;
  /** The upload fails after this long without a body byte while it is being asked for; 0 waits for ever. */
  readonly idleSeconds: number;
}

/**
 * Watches an upload's body as it streams: past `maxBytes` it is too large, a client
 * that hangs up is gone, and one silent for `idleSeconds` while the body is wanted has
 * stalled. Each calls `fail` once; `stop` ends the watching.
 */
export function watchUpload(req: IncomingMessage, limits: UploadLimits, fail: (error: HttpError) => void): { stop(): void } {
  let idle: NodeJS.Timeout | undefined;
  let stopped = false;
  const failOnce = (error: HttpError): void => {
    if (stopped) return;
    stopped = true;
    clearTimeout(idle);
    fail(error);
  };
  let received = 0;
  req.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (received > limits.maxBytes) failOnce(new UploadTooLarge());
    idle?.refresh();
  });
  req.on('close', () => {
    clearTimeout(idle);
    if (!req.complete) failOnce(new ClientGone());
  });
  req.on('end', () => clearTimeout(idle));
  if (limits.idleSeconds > 0) {
    // Silence counts only while the body is wanted. When the unpacking falls behind (a slow
    // disk), the pipe pauses the request: the client is waiting for us, not stalled, and
    // its clock starts afresh when the pipe resumes it.
    idle = setTimeout(() => {
      if (!req.isPaused()) failOnce(new UploadStalled(limits.idleSeconds));
    }, limits.idleSeconds * 1000);
    req.on('resume', () => {
      if (!stopped && !req.complete) idle?.refresh();
    });
  }
  return {
    stop: () => {
      stopped = true;
      clearTimeout(idle);
    },
  };
}

/**
 * A request body that is itself the upload (a batch of an incremental deploy's
 * objects), under the same limits as a deploy's file part. A failure ends `body` with
 * it and is reported through `failure()`, which outranks what it then caused downstream.
 */
export function readUploadBody(req: IncomingMessage, limits: UploadLimits): { body: Readable; failure(): HttpError | undefined } {
  const body = new PassThrough({ highWaterMark: 64 * 1024 });
  let failed: HttpError | undefined;
  const watch = watchUpload(req, limits, (error) => {
    failed = error;
    req.unpipe(body);
    body.destroy(error);
  });
  body.on('close', () => watch.stop());
  req.pipe(body);
  return { body, failure: () => failed };
}
