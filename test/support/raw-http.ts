import { request } from 'node:http';
import { checkAgainstContract, nodeHeaders } from './openapi-contract.js';

export interface RawReply {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
  /** Whether the server sent 100 Continue. */
  continued: boolean;
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
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString();
        const method = options.method ?? 'POST';
        try {
          checkAgainstContract({ method, path: options.path.split('?')[0]!, status: res.statusCode ?? 0, header: nodeHeaders(res.headers), body: text });
        } catch (error) {
          reject(error as Error);
          return;
        }
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {}, headers: res.headers, continued });
      });
    });
    req.on('error', reject);
    const send = () => {
      for (const chunk of options.chunks ?? []) req.write(chunk);
      req.end();
    };
    if (options.waitForContinue) req.on('continue', send);
    else send();
  });
}

export function multipart(boundary: string, parts: { name: string; filename?: string; body: Buffer | string }[], close = true): Buffer {
  const out: Buffer[] = [];
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"` : ''}`;
    out.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.filename ? 'Content-Type: application/gzip\r\n' : ''}\r\n`));
    out.push(Buffer.from(part.body));
    out.push(Buffer.from('\r\n'));
  }
  if (close) out.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(out);
}
