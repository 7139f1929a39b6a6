import type { IncomingMessage } from 'node:http';
import { BodyGzipCutShort, BodyNotGzip, UnsupportedContentEncoding } from './http-errors.js';

export type BodyCoding = 'identity' | 'gzip';

/**
 * The Content-Encoding of a request's body. gzip, the CLI's, is the only coding sitedrop
 * undoes: any other (br, deflate, a list of codings, a name it does not know) is refused
 * before a byte of the body is read, rather than read as what it is not.
 */
export function bodyCoding(req: IncomingMessage): BodyCoding {
  const coding = (req.headers['content-encoding'] ?? '').trim().toLowerCase();
  if (coding === '' || coding === 'identity') return 'identity';
  if (coding === 'gzip') return 'gzip';
  throw new UnsupportedContentEncoding();
}

/**
 * zlib's failure to inflate a body that said it was gzip, as the client's fault it is: a
 * stream that ends early (Z_BUF_ERROR), or bytes that are not gzip, fail its checksum or
 * follow it (Z_DATA_ERROR). Any other failure is the service's own, and stays as it is.
 */
export function gzipFailure(error: unknown): unknown {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code === 'Z_BUF_ERROR') return new BodyGzipCutShort();
  if (code === 'Z_DATA_ERROR') return new BodyNotGzip();
  return error;
}
