import { request, type ClientRequest } from 'node:http';
import { checkAgainstContract, nodeHeaders } from './openapi-contract.js';
import { multipart } from './raw-http.js';

export interface SlowUpload {
  readonly req: ClientRequest;
  /** Resolves with the status and body once the server answers (or rejects if the socket dies). */
  readonly response: Promise<{ status: number; body: Record<string, unknown> }>;
  /** Sends the rest of the body. */
  finish(): void;
}

/** An upload's request with its whole `body` ready, none of it sent yet, and its answer checked against the contract. */
function startUpload(url: string, token: string, method: string, path: string, body: Buffer, headers: Record<string, string>) {
  const req = request(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-length': String(body.length), ...headers } });
  const response = new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        try {
          checkAgainstContract({ method, path, status: res.statusCode ?? 0, header: nodeHeaders(res.headers), body: text });
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} });
        } catch (error) {
          reject(error as Error);
        }
      });
    });
    req.on('error', reject);
  });
  response.catch(() => undefined);
  return { req, body, response };
}

function startDeploy(url: string, token: string, project: string, archive: Buffer, headers: Record<string, string> = {}) {
  const body = multipart('SlowB0undary', [{ name: 'project', body: project }, { name: 'file', filename: 'site.tgz', body: archive }]);
  return startUpload(url, token, 'POST', '/api/v1/deploy', body, { 'content-type': 'multipart/form-data; boundary=SlowB0undary', ...headers });
}

/** Starts a deploy and sends only the first `sentBytes` of its body, holding the rest back. */
export function slowUpload(url: string, token: string, project: string, archive: Buffer, sentBytes: number): SlowUpload {
  const { req, body, response } = startDeploy(url, token, project, archive);
  req.write(body.subarray(0, sentBytes));
  return { req, response, finish: () => req.end(body.subarray(sentBytes)) };
}

/** Starts an incremental deploy's batch of objects and sends only the first `sentBytes` of it. */
export function slowBatch(url: string, token: string, session: string, batch: Buffer, sentBytes: number): SlowUpload {
  const { req, body, response } = startUpload(url, token, 'PUT', `/api/v1/deploys/${session}/objects`, batch, { 'content-type': 'application/gzip' });
  req.write(body.subarray(0, sentBytes));
  return { req, response, finish: () => req.end(body.subarray(sentBytes)) };
}

export interface SteadyUpload {
  readonly req: ClientRequest;
  readonly response: Promise<{ status: number; body: Record<string, unknown> }>;
  /** The share of the body sent so far, from 0 to 1. */
  sent(): number;
}

/**
 * A slow but steady client: it sends `Expect: 100-continue`, so that it starts only once
 * the service wants its body (its turn has come), and then sends `bytesPerSecond`, a
 * tenth of it every 100 ms.
 */
export function steadyUpload(url: string, token: string, project: string, archive: Buffer, bytesPerSecond: number): SteadyUpload {
  const { req, body, response } = startDeploy(url, token, project, archive, { expect: '100-continue' });
  const step = Math.ceil(bytesPerSecond / 10);
  let at = 0;
  req.once('continue', () => {
    const timer = setInterval(() => {
      const chunk = body.subarray(at, at + step);
      at += chunk.length;
      if (at < body.length) req.write(chunk);
      else {
        clearInterval(timer);
        req.end(chunk);
      }
    }, 100);
    req.once('close', () => clearInterval(timer));
  });
  req.flushHeaders();
  return { req, response, sent: () => at / body.length };
}
