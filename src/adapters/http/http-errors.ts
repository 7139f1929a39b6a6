/** Failures only the HTTP adapter can see: the shape of a request rather than its meaning. */
export abstract class HttpError extends Error {
  abstract readonly status: number;
  /** The `error` string the client gets: the spec's own text where it has one. */
  abstract readonly publicMessage: string;
}

const define = (status: number, publicMessage: string) =>
  class extends HttpError {
    readonly status = status;
    readonly publicMessage = publicMessage;
    constructor() {
      super(publicMessage);
    }
  };

export class InvalidRequestBody extends define(400, 'invalid request body') {}
export class InvalidFilesMode extends define(400, "files must be 'persist' or 'delete'") {}
export class BadMultipart extends define(400, 'failed to parse multipart form') {}
export class InvalidAdminToken extends define(401, 'invalid admin token') {}
export class UploadTooLarge extends define(413, 'request body too large') {}
export class NotFound extends define(404, 'not found') {}
export class MethodNotAllowed extends define(405, 'method not allowed') {}
/** The client went away; nobody is left to answer. */
export class ClientGone extends define(499, 'client closed the connection') {}
