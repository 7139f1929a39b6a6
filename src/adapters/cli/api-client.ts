import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { request as requestTls } from 'node:https';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { ManifestFile } from '../../domain/manifest.js';

/** The server answered with an error: its message is printed and the exit code is 1. */
export class ServerError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The whole answer, for errors that carry more than a message (a publish's missing objects). */
    readonly body: Json = {},
  ) {
    super(message);
  }
}

export type Json = Record<string, unknown>;

/** A deploy session of the incremental protocol: what the server still lacks of a manifest. */
export interface DeploySession {
  readonly id: string;
  /** The whole site's files and bytes as the server took the manifest. */
  readonly files: number;
  readonly bytes: number;
  readonly missing: string[];
  readonly missingBytes: number;
}

/** What POST /api/v1/deploys takes: every file, or with `base` the difference from one of the project's releases. */
export interface ManifestBody {
  readonly files: readonly ManifestFile[];
  readonly base?: { readonly release: string; readonly digest: string };
  readonly removed?: readonly string[];
}

export interface DeployTarget {
  readonly project: string;
  readonly preview?: string;
}

interface Reply {
  readonly status: number;
  readonly text: string;
}

const compress = promisify(gzip);
/** A connection that sends nothing for this long is given up: what fetch's 300 s were. */
const IDLE_MS = 300_000;

/** Talks to a sitedrop server over HTTP only, as any other client would. */
export class ApiClient {
  constructor(
    readonly server: string,
    private readonly token: string | undefined,
  ) {}

  /** Tells one credential from another without keeping it: a SHA-256 of the token (of nothing without one). */
  get account(): string {
    return createHash('sha256').update(this.token ?? '').digest('hex');
  }

  async call(method: string, path: string, body?: Json): Promise<Json> {
    const reply = await this.fetch(method, path, body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    return ApiClient.answer(reply, { statusOk: true });
  }

  /** Streams a multipart deploy (chunked: the archive's size is not known while it is packed). */
  async deploy(target: DeployTarget, archive: Readable, onBytes: (sent: number) => void): Promise<Json> {
    const boundary = `sitedrop${Math.random().toString(16).slice(2)}`;
    const field = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    // The names before the file: the server judges them before it unpacks a byte.
    const head = Buffer.from(
      field('project', target.project) +
        (target.preview === undefined ? '' : field('preview', target.preview)) +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="site.tar.gz"\r\nContent-Type: application/gzip\r\n\r\n`,
    );
    async function* form(): AsyncGenerator<Buffer> {
      yield head;
      let sent = 0;
      for await (const chunk of archive as AsyncIterable<Buffer>) {
        onBytes((sent += chunk.length));
        yield chunk;
      }
      yield Buffer.from(`\r\n--${boundary}--\r\n`);
    }
    const reply = await this.stream('POST', '/api/v1/deploy', `multipart/form-data; boundary=${boundary}`, Readable.from(form(), { objectMode: false }));
    return ApiClient.answer(reply, { statusOk: true });
  }

  /** Opens an incremental deploy: the manifest, gzip-compressed (40,000 paths are megabytes of JSON). */
  async openDeploy(target: DeployTarget, manifest: ManifestBody, signal?: AbortSignal): Promise<DeploySession> {
    const body = await compress(JSON.stringify({ ...target, ...manifest }));
    const reply = await this.fetch('POST', '/api/v1/deploys', { body, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, signal });
    const session = ApiClient.answer(reply);
    if (typeof session.id !== 'string' || !Array.isArray(session.missing)) throw new ServerError(reply.status, 'the server answered the manifest without a session id or a list of missing files');
    return session as unknown as DeploySession;
  }

  /** One batch of objects, a gzip-compressed tar streamed as it is packed. */
  async uploadObjects(id: string, batch: Readable, signal?: AbortSignal): Promise<void> {
    ApiClient.answer(await this.stream('PUT', `${ApiClient.session(id)}/objects`, 'application/gzip', batch, signal));
  }

  /** Goes live; a ServerError 409 whose body lists `missing` asks for those objects first. */
  async publishDeploy(id: string): Promise<Json> {
    return ApiClient.answer(await this.fetch('POST', `${ApiClient.session(id)}/publish`, {}), { statusOk: true });
  }

  async deleteDeploy(id: string): Promise<void> {
    ApiClient.answer(await this.fetch('DELETE', ApiClient.session(id), {}));
  }

  private static session(id: string): string {
    return `/api/v1/deploys/${encodeURIComponent(id)}`;
  }

  private authorization(): Record<string, string> {
    return this.token ? { authorization: `Bearer ${this.token}` } : {};
  }

  private unreachable(error: Error): ServerError {
    return new ServerError(0, `cannot reach ${this.server}: ${(error.cause as Error | undefined)?.message ?? error.message}`);
  }

  private fetch(method: string, path: string, init: { body?: string | Buffer; headers?: Record<string, string>; signal?: AbortSignal }): Promise<Reply> {
    const length = { 'content-length': String(init.body === undefined ? 0 : Buffer.byteLength(init.body)) };
    return this.exchange(method, path, { ...this.authorization(), ...init.headers, ...length }, init.body, init.signal);
  }

  /** A body of unknown size, with backpressure: the body is read only as fast as the connection takes it. */
  private stream(method: string, path: string, contentType: string, body: Readable, signal?: AbortSignal): Promise<Reply> {
    return this.exchange(method, path, { ...this.authorization(), 'content-type': contentType }, body, signal);
  }

  /**
   * One request and its answer, over node:http rather than fetch: the first fetch of a
   * process loads undici, 35 ms of every deploy on this machine (a request: 3 ms). A
   * connection silent for IDLE_MS either way is given up, as fetch's would have been; a
   * redirect is reported, not followed (the address to use is the one it names).
   */
  private exchange(method: string, path: string, headers: Record<string, string>, body: Readable | string | Buffer | undefined, signal?: AbortSignal): Promise<Reply> {
    const url = new URL(path, this.server);
    const send = url.protocol === 'https:' ? requestTls : request;
    const streamed = body instanceof Readable ? body : undefined;
    return new Promise((resolve, reject) => {
      const req = send(url, { method, signal, headers, timeout: IDLE_MS });
      const fail = (error: Error) => {
        streamed?.destroy();
        req.destroy();
        reject(signal?.aborted ? signal.reason : error);
      };
      req.on('timeout', () => fail(new ServerError(0, `${this.server} sent nothing for ${IDLE_MS / 1000} s: giving up`)));
      req.on('error', (error) => fail(this.unreachable(error)));
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400) {
          res.resume();
          return fail(new ServerError(status, `the server answered ${status}, a redirect to ${res.headers.location ?? 'nowhere'}: give that address as --server`));
        }
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('error', (error) => fail(this.unreachable(error)));
        // An early answer (a refusal) ends the upload: the rest of the body is not wanted.
        res.on('end', () => {
          streamed?.destroy();
          resolve({ status, text });
        });
      });
      if (!streamed) return void req.end(body);
      streamed.on('error', (error) => {
        req.destroy();
        reject(error);
      });
      streamed.pipe(req);
    });
  }

  /** Old calls answer `"status": "ok"`; the incremental protocol's answers carry no status, any 2xx is success. */
  private static answer(reply: Reply, options: { statusOk?: boolean } = {}): Json {
    const { status, text } = reply;
    if (status === 204) return {};
    let body: Json;
    try {
      body = JSON.parse(text) as Json;
    } catch {
      throw new ServerError(status, `the server answered ${status} with something that is not JSON`);
    }
    if (status < 200 || status >= 300 || (options.statusOk && body.status !== 'ok')) throw new ServerError(status, String(body.error ?? `HTTP ${status}`), body);
    return body;
  }
}
