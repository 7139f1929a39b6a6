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

/** Starts a deploy and sends only the first `sentBytes` of its body, holding the rest back. */
export function slowUpload(url: string, token: string, project: string, archive: Buffer, sentBytes: number): SlowUpload {
  const body = multipart('SlowB0undary', [{ name: 'project', body: project }, { name: 'file', filename: 'site.tgz', body: archive }]);
  const req = request(`${url}/api/v1/deploy`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=SlowB0undary', 'content-length': String(body.length) },
  });
  const response = new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        try {
          checkAgainstContract({ method: 'POST', path: '/api/v1/deploy', status: res.statusCode ?? 0, header: nodeHeaders(res.headers), body: text });
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} });
        } catch (error) {
          reject(error as Error);
        }
      });
    });
    req.on('error', reject);
  });
  response.catch(() => undefined);
  req.write(body.subarray(0, sentBytes));
  return { req, response, finish: () => req.end(body.subarray(sentBytes)) };
}

export async function until(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
