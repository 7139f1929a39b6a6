import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from '../log/logger.js';
import { toErrorResponse } from './error-response.js';
import { bodyCoding, gzipFailure } from './body-coding.js';
import { BodyGzipCutShort, BodyNotGzip, InvalidRequestBody, MethodNotAllowed, NotFound, UnsupportedContentEncoding } from './http-errors.js';
import type { ServiceMetrics } from './metrics.js';

/** A client that sent `Expect: 100-continue` is told to send its body only once it is wanted. */
export function continueIfExpected(req: IncomingMessage, res: ServerResponse): void {
  if (req.headers.expect?.toLowerCase() === '100-continue') res.writeContinue();
}

export function declaredLength(req: IncomingMessage): number | undefined {
  const raw = req.headers['content-length'];
  return raw === undefined ? undefined : Number(raw);
}

/** True while a request still has body bytes on the wire that nobody has read. */
function bodyPending(req: IncomingMessage): boolean {
  if (req.complete) return false;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** One log line per request, and its id to the client, to find that line again. */
export function requestLog(metrics: ServiceMetrics, logger: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && /^[A-Za-z0-9._:-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    res.set('X-Request-Id', requestId);
    const started = performance.now();
    res.on('finish', () => {
      // The route's pattern, not the path: project names must not multiply the series.
      metrics.request(req.method, (req.route as { path?: string } | undefined)?.path ?? 'unmatched', res.statusCode);
      logger.info('request', {
        requestId,
        method: req.method,
        path: req.path,
        status: res.statusCode,
        durationMs: Math.round(performance.now() - started),
        user: res.locals.user ?? null,
        ...(res.locals.key ? { key: res.locals.key } : {}),
      });
    });
    next();
  };
}

/**
 * An answer sent before the body was read (401, 413, a refused archive) must reach a
 * client that is still sending: closing the socket makes its next write fail and it
 * never reads the answer. So the rest of the body is read and dropped; a body that has
 * not ended 5 s later (a huge or stalled upload) has its connection closed.
 */
export const drainUnreadBody: RequestHandler = (req, res, next) => {
  res.on('finish', () => {
    if (!bodyPending(req)) return;
    req.unpipe();
    const timer = setTimeout(() => req.socket.destroy(), 5000).unref();
    req.once('end', () => clearTimeout(timer));
    req.resume();
  });
  next();
};

// Any content type: `curl -d '{...}'` sends form encoding by default.
const readSmallJson = express.json({ limit: '16kb', strict: true, type: () => true });

/**
 * A small JSON body, read only once the route has let the request through. Its
 * Content-Encoding is checked first (415), and a body that is not the gzip it says it is
 * answers 400 (body-coding.ts), not zlib's failure as an unforeseen 500.
 */
export const jsonBody: RequestHandler[] = [
  (req, res, next) => {
    bodyCoding(req);
    continueIfExpected(req, res);
    next();
  },
  (req, res, next) => readSmallJson(req, res, (error?: unknown) => next(error === undefined ? undefined : gzipFailure(error))),
];

/** The spec's routes have one answer for a body they cannot use, whatever is wrong with it: 400 `invalid request body`. */
export const specJsonBody: RequestHandler[] = jsonBody.map((handler): RequestHandler => (req, res, next) => {
  const asSpecified = (error?: unknown): void => next(error instanceof BodyNotGzip || error instanceof BodyGzipCutShort || error instanceof UnsupportedContentEncoding ? new InvalidRequestBody() : error);
  try {
    return handler(req, res, asSpecified);
  } catch (error) {
    return asSpecified(error);
  }
});

/** The operation's own message for a failure nobody foresaw ("failed to list projects"...). */
export const fallback = (message: string): RequestHandler => (_req, res, next) => {
  res.locals.fallback = message;
  next();
};

export const methodNotAllowed = (allow: string): RequestHandler => (_req, res) => {
  res.set('Allow', allow);
  throw new MethodNotAllowed();
};

export const notFound: RequestHandler = () => {
  throw new NotFound();
};

/** Every failure, from any route, answered through the one error table. */
export function errorHandler(logger: Logger): express.ErrorRequestHandler {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const fallbackMessage = typeof res.locals.fallback === 'string' ? res.locals.fallback : 'internal error';
    const answer = toErrorResponse(error, fallbackMessage);
    if (!answer.expected) logger.error('request failed', { method: req.method, path: req.path, error: (error as Error)?.message ?? String(error) });
    if (res.headersSent || req.socket.destroyed) return;
    // For a client that sent `Connection: close`, Node closes the connection as soon as this
    // answer is out, before the drain above: the body bytes left unread make that close a
    // reset, and a client still writing fails on it without reading the answer. Kept open,
    // the connection is drained and closed by the client, or by the drain's 5 s limit.
    if (bodyPending(req)) res.shouldKeepAlive = true;
    res.status(answer.status).set(answer.headers).json(answer.body);
  };
}
