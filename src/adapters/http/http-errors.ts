/** Failures only the HTTP adapter can see: the shape of a request rather than its meaning. */
export abstract class HttpError extends Error {
  abstract readonly status: number;
  /** The `error` string the client gets: the spec's own text where it has one. */
  abstract readonly publicMessage: string;
  /** Headers the answer carries besides the JSON body (Retry-After, say). */
  readonly headers: Readonly<Record<string, string>> = {};
}

const define = (status: number, publicMessage: string, headers: Readonly<Record<string, string>> = {}) =>
  class extends HttpError {
    readonly status = status;
    readonly publicMessage = publicMessage;
    override readonly headers = headers;
    constructor() {
      super(publicMessage);
    }
  };

/**
 * What a refused deploy is told to wait before trying again. A guess, not a promise: a
 * deploy of a typical site takes seconds, so a few of them will have finished by then.
 */
export const RETRY_AFTER_SECONDS = 10;

export class InvalidRequestBody extends define(400, 'invalid request body') {}
/** The body says it is gzip-compressed (Content-Encoding: gzip) and is not, or has bytes after its gzip stream. */
export class BodyNotGzip extends define(400, 'invalid request body: Content-Encoding says gzip, but the body is not gzip') {}
/** The gzip stream stops before its end: a body cut short. */
export class BodyGzipCutShort extends define(400, 'invalid request body: the gzip-compressed body is cut short') {}
/** A Content-Encoding other than gzip: sitedrop undoes no other (RFC 9110 15.5.16: Accept-Encoding says which it does). */
export class UnsupportedContentEncoding extends define(415, 'unsupported Content-Encoding: send the body as it is, or gzip-compressed with Content-Encoding: gzip', {
  'Accept-Encoding': 'gzip',
}) {}
export class InvalidFilesMode extends define(400, "files must be 'persist' or 'delete'") {}
export class BadMultipart extends define(400, 'failed to parse multipart form') {}
export class InvalidAdminToken extends define(401, 'invalid admin token') {}
export class UploadTooLarge extends define(413, 'request body too large') {}
export class NotFound extends define(404, 'not found') {}
export class MethodNotAllowed extends define(405, 'method not allowed') {}
/** The service was built with tsc alone, without the bundling step that makes the CLI file. */
export class CliNotBuilt extends define(500, 'the CLI is not built on this server: npm run build makes it') {}
/** The client went away; nobody is left to answer. */
export class ClientGone extends define(499, 'client closed the connection') {}
/** Every deploy slot is taken and the queue is full, or the deploy waited too long for one. */
export class TooManyDeploys extends define(503, 'too many deploys in progress, retry later', { 'Retry-After': String(RETRY_AFTER_SECONDS) }) {}
/** A deploy still waiting for a slot when the service began to stop. */
export class ServiceStopping extends define(503, 'service is shutting down, retry later', { 'Retry-After': String(RETRY_AFTER_SECONDS) }) {}

/**
 * A user's upload lost its slot to another user's deploy: the user held more than a fair
 * share of the slots for longer than a turn while the other waited (deploy-slots.ts).
 */
export class TurnTaken extends HttpError {
  readonly status = 503;
  readonly publicMessage: string;
  override readonly headers = { 'Retry-After': String(RETRY_AFTER_SECONDS) };
  constructor(held: number, of: number, seconds: number) {
    const message = `turn taken back: this user held ${held} of ${of} slots for over ${seconds} s while another user waited, retry later`;
    super(message);
    this.publicMessage = message;
  }
}

/** The client stopped sending the body while the service was asking for it. */
export class UploadStalled extends HttpError {
  readonly status = 408;
  readonly publicMessage: string;
  /** `bytes`: what the last span of `seconds` brought, where it was some but too few (upload-body.ts, MOVING_BYTES_PER_SECOND). */
  constructor(seconds: number, bytes?: number) {
    const message = bytes ? `upload too slow: ${bytes} bytes in ${seconds} s while another deploy waited` : `upload stalled: no data received for ${seconds} s`;
    super(message);
    this.publicMessage = message;
  }
}
