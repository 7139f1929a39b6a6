import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { checkAgainstContract, nodeHeaders } from './openapi-contract.js';

export interface RawReply {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
  /** Whether the server sent 100 Continue. */
  continued: boolean;
}

/** The answer to a request made with node:http, held to docs/openapi.yaml as fetch's are (setup.ts). */
function replyOf(res: IncomingMessage, method: string, path: string, continued: () => boolean): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    res.on('data', (c: Buffer) => parts.push(c));
    res.on('error', reject);
    res.on('end', () => {
      const text = Buffer.concat(parts).toString();
      try {
        checkAgainstContract({ method, path: path.split('?')[0]!, status: res.statusCode ?? 0, header: nodeHeaders(res.headers), body: text });
      } catch (error) {
        reject(error as Error);
        return;
      }
      resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {}, headers: res.headers, continued: continued() });
    });
  });
}

/**
 * A request written by hand: for bodies fetch will not send (truncated multipart,
 * chunked uploads of a chosen size, Expect: 100-continue).
 */
export function rawRequest(
  url: string,
  options: { method?: string; path: string; headers?: Record<string, string>; chunks?: (Buffer | string)[]; waitForContinue?: boolean },
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${options.path}`, { method: options.method ?? 'POST', headers: options.headers });
    let continued = false;
    req.on('continue', () => (continued = true));
    req.on('response', (res) => replyOf(res, options.method ?? 'POST', options.path, () => continued).then(resolve, reject));
    req.on('error', reject);
    const send = () => {
      for (const chunk of options.chunks ?? []) req.write(chunk);
      req.end();
    };
    if (options.waitForContinue) req.on('continue', send);
    else send();
  });
}

export interface StreamedRequest {
  /** Write the body with it, piece by piece, and end it (or not). */
  readonly req: ClientRequest;
  /** The answer, whenever the server sends it: before the body has ended, if it will. */
  readonly reply: Promise<RawReply>;
  /** Whether the answer has begun to arrive. */
  answered(): boolean;
  /** Whether the server has sent 100 Continue (to a request that sent `Expect: 100-continue`). */
  continued(): boolean;
}

/** A request whose body the test writes as it goes: held back, cut short, or still being sent when the answer comes. */
export function streamedRequest(url: string, options: { method?: string; path: string; headers?: Record<string, string> }): StreamedRequest {
  const method = options.method ?? 'POST';
  const req = request(`${url}${options.path}`, { method, headers: options.headers });
  let answered = false;
  let continued = false;
  req.on('continue', () => (continued = true));
  const reply = new Promise<RawReply>((resolve, reject) => {
    req.on('response', (res) => {
      answered = true;
      replyOf(res, method, options.path, () => continued).then(resolve, reject);
    });
    req.on('error', reject);
  });
  // A test that stops waiting for the answer must not leave an unhandled rejection behind.
  reply.catch(() => undefined);
  return { req, reply, answered: () => answered, continued: () => continued };
}

export { multipart } from '../../src/adapters/cli/multipart.js';
