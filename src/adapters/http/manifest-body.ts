import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { PATH_LIMITS } from '../../domain/archive-policy.js';
import type { ManifestReader } from '../../domain/manifest.js';
import { bodyCoding, gzipFailure } from './body-coding.js';
import { InvalidRequestBody, UploadTooLarge } from './http-errors.js';
import { JsonTokens, type JsonEvents } from './json-tokens.js';
import { optionalString } from './request-body.js';
import { NO_SLOT, watchUpload, type UploadLimits, type UploadSlot } from './upload-body.js';

/** What POST /api/v1/deploys's body holds besides the manifest's entries. */
export interface ManifestFields {
  readonly project: string | undefined;
  readonly preview: string | undefined;
  /** As the client sent it, for the use case to check. */
  readonly base: unknown;
}

type Field = 'project' | 'preview' | 'base' | 'files' | 'removed';
const FIELDS: ReadonlySet<string> = new Set<Field>(['project', 'preview', 'base', 'files', 'removed']);
/** The members of an object a manifest reads (an entry's, a base's); any other is read and dropped. */
type Member = 'path' | 'size' | 'digest' | 'release';
const MEMBERS = new Map<string, Member>((['path', 'size', 'digest', 'release'] as const).map((name) => [name, name]));
/** Such an object, its members none yet: one shape for all, set in place (tens of thousands of entries). */
const unread = (): Record<Member, unknown> => ({ path: undefined, size: undefined, digest: undefined, release: undefined });

/**
 * Longer than any string a manifest may hold (a path is at most 1,024 bytes, six of JSON
 * each if all are escaped): a longer one is refused for what it begins with, as a path
 * too long, a name or a digest that does not match, without being held whole.
 */
const STRING_BYTES = PATH_LIMITS.maxPathBytes * 8;
/** A manifest nests three deep (the body, `files`, an entry); this leaves room for odd but harmless members. */
const DEPTH = 32;

/**
 * One value of the body as far as a manifest reads it: a scalar whole; an object with its
 * MEMBERS, their scalars kept and their objects and arrays standing as empty ones; any
 * other array as an empty one. Every check the domain makes of a value sees what it would
 * in JSON.parse's, and a value never costs more than a few strings, whatever it holds.
 */
class ShallowValue {
  value: unknown;
  private level = 0;
  private member: Member | undefined;
  private keep = true;

  /** Begins the next value (one at a time); `keep` false: a member the manifest does not read, read to its end and dropped. */
  reset(keep: boolean): this {
    this.keep = keep;
    this.value = undefined;
    this.level = 0;
    this.member = undefined;
    return this;
  }

  open(kind: 'object' | 'array'): void {
    // Plain objects: only MEMBERS are ever set on them, never a `__proto__`; one absent is undefined, as it is in JSON.parse's.
    if (this.level === 0 && this.keep) this.value = kind === 'object' ? unread() : [];
    else if (this.level === 1 && this.member !== undefined) this.set(kind === 'object' ? {} : []);
    this.level += 1;
  }

  /** True once the value is whole. */
  close(): boolean {
    this.level -= 1;
    return this.level === 0;
  }

  key(name: string): void {
    if (this.level === 1) this.member = this.keep ? MEMBERS.get(name) : undefined;
  }

  /** True once the value is whole: a scalar is. */
  scalar(value: string | number | boolean | null): boolean {
    if (this.level === 0) {
      if (this.keep) this.value = value;
      return true;
    }
    if (this.level === 1 && this.member !== undefined) this.set(value);
    return false;
  }

  private set(value: unknown): void {
    (this.value as Record<string, unknown>)[this.member!] = value;
    this.member = undefined;
  }
}

/** The body's members, routed as they come: the lists' entries one by one to the reader, the rest kept shallow. */
class ManifestEvents implements JsonEvents {
  readonly fields = new Map<Field, unknown>();
  private inBody = false;
  private field: string | undefined;
  /** Inside `files` or `removed`, a list: each of its values is an entry. */
  private list: 'files' | 'removed' | undefined;
  /** The value being read, when one is: `shallow`, reused from one to the next. */
  private item: ShallowValue | undefined;
  private readonly shallow = new ShallowValue();

  constructor(private readonly reader: ManifestReader) {}

  open(kind: 'object' | 'array'): void {
    if (this.item) this.item.open(kind);
    else if (!this.inBody) {
      if (kind !== 'object') throw new InvalidRequestBody();
      this.inBody = true;
    } else if (this.list === undefined && kind === 'array' && (this.field === 'files' || this.field === 'removed')) {
      this.list = this.field;
      if (this.list === 'files') this.reader.filesField([]);
      else this.reader.removedField([]);
    } else {
      this.item = this.shallow.reset(this.list !== undefined || FIELDS.has(this.field ?? ''));
      this.item.open(kind);
    }
  }

  close(): void {
    if (this.item) {
      if (!this.item.close()) return;
      const { value } = this.item;
      this.item = undefined;
      this.take(value);
    } else if (this.list !== undefined) this.list = undefined;
    else this.inBody = false;
  }

  key(name: string): void {
    if (this.item) return this.item.key(name);
    // JSON.parse keeps the last of two; a body read as it streams cannot take the first back.
    if (FIELDS.has(name) && this.fields.has(name as Field)) throw new InvalidRequestBody();
    this.field = name;
    if (FIELDS.has(name)) this.fields.set(name as Field, undefined);
  }

  scalar(value: string | number | boolean | null): void {
    if (this.item) {
      this.item.scalar(value);
      return;
    }
    if (!this.inBody) throw new InvalidRequestBody();
    this.take(value);
  }

  private take(value: unknown): void {
    if (this.list === 'files') this.reader.file(value);
    else if (this.list === 'removed') this.reader.removed(value);
    else if (this.field === 'files') this.reader.filesField(value);
    else if (this.field === 'removed') this.reader.removedField(value);
    else if (this.field === 'project' || this.field === 'preview' || this.field === 'base') this.fields.set(this.field, value);
  }
}

/**
 * Reads POST /api/v1/deploys's body into `reader` as it arrives: inflated when it is gzip,
 * tokenized as it comes, every entry of `files` and `removed` handed to the reader as
 * soon as it is whole. A body is refused at its first entry over a limit, having read no
 * further, and nothing of it is held but what the reader keeps. `limits.maxBytes` caps
 * its bytes both as sent and as inflated (413); a client silent for `idleSeconds` has
 * stalled (408), and so has one that hardly sends for `stallSeconds` once its `turn` is
 * taken back for an open that waits. `read.inflated` counts the bytes read so far,
 * whatever the outcome.
 */
export function readManifestBody(
  req: IncomingMessage,
  reader: ManifestReader,
  limits: UploadLimits,
  read: { inflated: number } = { inflated: 0 },
  turn: UploadSlot = NO_SLOT,
): Promise<ManifestFields> {
  const gunzip = bodyCoding(req) === 'gzip' ? createGunzip() : undefined;
  const source: Readable = gunzip ?? req;
  const events = new ManifestEvents(reader);
  const tokens = new JsonTokens(events, { stringBytes: STRING_BYTES, depth: DEPTH });
  return new Promise<ManifestFields>((resolve, reject) => {
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      watch.stop();
      source.off('data', onData);
      return true;
    };
    const fail = (error: unknown): void => {
      if (!settle()) return;
      // What is left of the body is drained once the answer is out (middleware.ts), unread.
      if (gunzip) {
        req.unpipe(gunzip);
        gunzip.destroy();
      } else req.pause();
      reject(error);
    };
    // Its turn (SessionOpens), not a deploy slot, is what a client that hardly sends loses to an open that waits.
    const watch = watchUpload(req, limits, turn, fail);
    const onData = (chunk: Buffer): void => {
      read.inflated += chunk.length;
      try {
        if (read.inflated > limits.maxBytes) throw new UploadTooLarge();
        tokens.write(chunk);
      } catch (error) {
        fail(error);
      }
    };
    source.on('data', onData);
    source.once('end', () => {
      try {
        tokens.end();
        const body = Object.fromEntries(events.fields);
        const fields = { project: optionalString(body, 'project'), preview: optionalString(body, 'preview'), base: body.base };
        if (settle()) resolve(fields);
      } catch (error) {
        fail(error);
      }
    });
    if (gunzip) {
      gunzip.on('error', (error) => fail(gzipFailure(error)));
      req.pipe(gunzip);
    }
  });
}
