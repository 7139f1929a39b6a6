import { request } from 'node:http';
import { request as requestTls } from 'node:https';
import type { Readable } from 'node:stream';

/** The server answered with an error: its message is printed and the exit code is 1. */
export class ServerError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export type Json = Record<string, unknown>;

/** Talks to a sitedrop server over HTTP only, as any other client would. */
export class ApiClient {
  constructor(
    private readonly server: string,
    private readonly token: string | undefined,
  ) {}

  async call(method: string, path: string, body?: Json): Promise<Json> {
    let response: Response;
    try {
      response = await fetch(new URL(path, this.server), {
        method,
        headers: { ...(this.token ? { authorization: `Bearer ${this.token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      throw new ServerError(0, `cannot reach ${this.server}: ${((error as Error).cause as Error | undefined)?.message ?? (error as Error).message}`);
    }
    return ApiClient.answer(response.status, await response.text());
  }

  /** Streams a multipart deploy (chunked: the archive's size is not known while it is packed). */
  deploy(target: { project: string; preview?: string }, archive: Readable, onBytes: (sent: number) => void): Promise<Json> {
    const boundary = `sitedrop${Math.random().toString(16).slice(2)}`;
    const field = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    // The names before the file: the server judges them before it unpacks a byte.
    const head = Buffer.from(
      field('project', target.project) +
        (target.preview === undefined ? '' : field('preview', target.preview)) +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="site.tar.gz"\r\nContent-Type: application/gzip\r\n\r\n`,
    );
    const url = new URL('/api/v1/deploy', this.server);
    const send = url.protocol === 'https:' ? requestTls : request;
    return new Promise((resolve, reject) => {
      const req = send(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.token ?? ''}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      });
      req.on('error', (error) => reject(new ServerError(0, `cannot reach ${this.server}: ${error.message}`)));
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          try {
            resolve(ApiClient.answer(res.statusCode ?? 0, text));
          } catch (error) {
            reject(error);
          }
        });
      });
      let sent = 0;
      req.write(head);
      archive.on('data', (chunk: Buffer) => {
        sent += chunk.length;
        onBytes(sent);
        if (!req.write(chunk)) {
          archive.pause();
          req.once('drain', () => archive.resume());
        }
      });
      archive.on('error', (error) => {
        req.destroy();
        reject(error);
      });
      archive.on('end', () => req.end(`\r\n--${boundary}--\r\n`));
    });
  }

  private static answer(status: number, text: string): Json {
    let body: Json;
    try {
      body = JSON.parse(text) as Json;
    } catch {
      throw new ServerError(status, `the server answered ${status} with something that is not JSON`);
    }
    if (status < 200 || status >= 300 || body.status !== 'ok') throw new ServerError(status, String(body.error ?? `HTTP ${status}`));
    return body;
  }
}
