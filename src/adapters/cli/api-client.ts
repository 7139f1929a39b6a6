import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { request as requestTls } from 'node:https';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { ManifestFile } from '../../domain/manifest.js';
import type { DomainAnswer, DomainsAnswer, KeyAnswer, KeysAnswer, LiveAnswer, NewKey, PreviewsAnswer, ProjectsAnswer, ReleasesAnswer, TokenAnswer, UsersAnswer } from './api-answers.js';
import { formContentType, newBoundary, streamedForm } from './multipart.js';

/** The server answered with an error: its message is printed and the exit code is 1. */
export class ServerError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The whole answer, for errors that carry more than a message (a publish's missing objects). */
    readonly body: Json = {},
    /** Seconds the server asked to wait before trying again (Retry-After), where it said. */
    readonly retryAfter?: number,
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
  /** Retry-After in seconds, where the answer gave it so. */
  readonly retryAfter?: number;
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

  private async call(method: string, path: string, body?: Json): Promise<Json> {
    const reply = await this.fetch(method, path, body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    return ApiClient.answer(reply, { statusOk: true });
  }

  /** Streams a multipart deploy (chunked: the archive's size is not known while it is packed). */
  async deploy(target: DeployTarget, archive: Readable, onBytes: (sent: number) => void): Promise<Json> {
    const boundary = newBoundary();
    const fields = [{ name: 'project', body: target.project }, ...(target.preview === undefined ? [] : [{ name: 'preview', body: target.preview }])];
    // The names before the file: the server judges them before it unpacks a byte.
    const { head, tail } = streamedForm(boundary, fields, { name: 'file', filename: 'site.tar.gz' });
    async function* form(): AsyncGenerator<Buffer> {
      yield head;
      let sent = 0;
      for await (const chunk of archive as AsyncIterable<Buffer>) {
        onBytes((sent += chunk.length));
        yield chunk;
      }
      yield tail;
    }
    const reply = await this.stream('POST', '/api/v1/deploy', formContentType(boundary), Readable.from(form(), { objectMode: false }));
    return ApiClient.answer(reply, { statusOk: true });
  }

  projects(): Promise<ProjectsAnswer> {
    return this.call('GET', '/api/v1/projects') as Promise<ProjectsAnswer>;
  }

  releases(project: string): Promise<ReleasesAnswer> {
    return this.call('GET', `${ApiClient.project(project)}/releases`) as Promise<ReleasesAnswer>;
  }

  /** Without `release`, the one before the live one. */
  rollback(project: string, release: string | undefined): Promise<LiveAnswer> {
    return this.call('POST', `${ApiClient.project(project)}/rollback`, release ? { release } : undefined) as Promise<LiveAnswer>;
  }

  previews(project: string): Promise<PreviewsAnswer> {
    return this.call('GET', `${ApiClient.project(project)}/previews`) as Promise<PreviewsAnswer>;
  }

  promote(project: string, preview: string, release: string | undefined): Promise<LiveAnswer> {
    return this.call('POST', `${ApiClient.project(project)}/previews/${encodeURIComponent(preview)}/promote`, release ? { release } : undefined) as Promise<LiveAnswer>;
  }

  async deletePreview(project: string, preview: string): Promise<void> {
    await this.call('DELETE', `${ApiClient.project(project)}/previews/${encodeURIComponent(preview)}`);
  }

  async deleteProject(project: string): Promise<void> {
    await this.call('DELETE', ApiClient.project(project));
  }

  createKey(project: string, key: NewKey): Promise<KeyAnswer> {
    return this.call('POST', `${ApiClient.project(project)}/keys`, { ...key }) as Promise<KeyAnswer>;
  }

  keys(project: string): Promise<KeysAnswer> {
    return this.call('GET', `${ApiClient.project(project)}/keys`) as Promise<KeysAnswer>;
  }

  async revokeKey(project: string, id: string): Promise<void> {
    await this.call('DELETE', `${ApiClient.project(project)}/keys/${encodeURIComponent(id)}`);
  }

  addDomain(project: string, domain: string): Promise<DomainAnswer> {
    return this.call('POST', `${ApiClient.project(project)}/domains`, { domain }) as Promise<DomainAnswer>;
  }

  domains(project: string): Promise<DomainsAnswer> {
    return this.call('GET', `${ApiClient.project(project)}/domains`) as Promise<DomainsAnswer>;
  }

  verifyDomain(project: string, domain: string): Promise<DomainAnswer> {
    return this.call('POST', `${ApiClient.project(project)}/domains/${encodeURIComponent(domain)}/verify`) as Promise<DomainAnswer>;
  }

  async removeDomain(project: string, domain: string): Promise<void> {
    await this.call('DELETE', `${ApiClient.project(project)}/domains/${encodeURIComponent(domain)}`);
  }

  /** Creates the user, or rerolls the token of one that exists: the server does whichever applies. */
  issueToken(username: string): Promise<TokenAnswer> {
    return this.call('POST', '/api/v1/auth', { username }) as Promise<TokenAnswer>;
  }

  async deleteUser(username: string, files: 'delete' | 'persist'): Promise<void> {
    await this.call('DELETE', '/api/v1/auth', { username, files });
  }

  users(): Promise<UsersAnswer> {
    return this.call('GET', '/api/v1/users') as Promise<UsersAnswer>;
  }

  /** Opens an incremental deploy: the manifest, gzip-compressed (40,000 paths are megabytes of JSON). */
  async openDeploy(target: DeployTarget, manifest: ManifestBody, signal?: AbortSignal, sent?: () => void): Promise<DeploySession> {
    const body = await compress(JSON.stringify({ ...target, ...manifest }));
    return ApiClient.sessionOf(await this.fetch('POST', '/api/v1/deploys', { body, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, signal, sent }));
  }

  /** A session as an open or a revision answers it. */
  private static sessionOf(reply: Reply): DeploySession {
    const session = ApiClient.answer(reply);
    if (typeof session.id !== 'string' || !Array.isArray(session.missing)) throw new ServerError(reply.status, 'the server answered the manifest without a session id or a list of missing files');
    return session as unknown as DeploySession;
  }

  /**
   * Opens an incremental deploy on `base` alone, before the folder is read: the server
   * builds the release from the base while this machine finds what changed (then
   * `reviseDeploy`). `sent` is told once the request has left, so that the caller's
   * synchronous work that follows does not hold it back.
   */
  openOnBase(target: DeployTarget, base: NonNullable<ManifestBody['base']>, sent: () => void, signal?: AbortSignal): Promise<DeploySession> {
    return this.openDeploy(target, { base, files: [], removed: [] }, signal, sent);
  }

  /** The session's manifest again, whole or relative to a base: the site as this machine has found it. */
  async reviseDeploy(id: string, manifest: ManifestBody, signal?: AbortSignal): Promise<DeploySession> {
    const body = await compress(JSON.stringify(manifest));
    return ApiClient.sessionOf(await this.fetch('PUT', `${ApiClient.session(id)}/manifest`, { body, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, signal }));
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

  private static project(name: string): string {
    return `/api/v1/projects/${encodeURIComponent(name)}`;
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

  private fetch(method: string, path: string, init: { body?: string | Buffer; headers?: Record<string, string>; signal?: AbortSignal; sent?: () => void }): Promise<Reply> {
    const length = { 'content-length': String(init.body === undefined ? 0 : Buffer.byteLength(init.body)) };
    return this.exchange(method, path, { ...this.authorization(), ...init.headers, ...length }, init.body, init.signal, init.sent);
  }

  /**
   * A body of unknown size, with backpressure: the body is read only as fast as the
   * connection takes it. On a connection of its own: answered early (a refusal), the
   * server may not have read all that was sent, and a request after it on the same
   * connection (the deploy's clean-up) would wait behind those bytes until it is closed.
   */
  private stream(method: string, path: string, contentType: string, body: Readable, signal?: AbortSignal): Promise<Reply> {
    return this.exchange(method, path, { ...this.authorization(), 'content-type': contentType }, body, signal);
  }

  /**
   * One request and its answer, over node:http rather than fetch: the first fetch of a
   * process loads undici, which costs a deploy more than its requests (docs/performance.md). A
   * connection silent for IDLE_MS either way is given up, as fetch's would have been; a
   * redirect is reported, not followed (the address to use is the one it names).
   */
  private exchange(method: string, path: string, headers: Record<string, string>, body: Readable | string | Buffer | undefined, signal?: AbortSignal, sent?: () => void): Promise<Reply> {
    const url = new URL(path, this.server);
    const send = url.protocol === 'https:' ? requestTls : request;
    const streamed = body instanceof Readable ? body : undefined;
    return new Promise((resolve, reject) => {
      // A streamed upload on a connection of its own, closed after its answer (stream()).
      const req = send(url, { method, signal, headers, timeout: IDLE_MS, ...(streamed ? { agent: false } : {}) });
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
        const retryAfter = /^[0-9]+$/.test(res.headers['retry-after'] ?? '') ? Number(res.headers['retry-after']) : undefined;
        // An early answer (a refusal) ends the upload: the rest of the body is not wanted.
        res.on('end', () => {
          streamed?.destroy();
          resolve({ status, text, retryAfter });
        });
      });
      if (sent) req.once('finish', sent);
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
    const { status, text, retryAfter } = reply;
    if (status === 204) return {};
    let body: Json;
    try {
      body = JSON.parse(text) as Json;
    } catch {
      throw new ServerError(status, `the server answered ${status} with something that is not JSON`);
    }
    if (status < 200 || status >= 300 || (options.statusOk && body.status !== 'ok')) throw new ServerError(status, String(body.error ?? `HTTP ${status}`), body, retryAfter);
    return body;
  }
}
