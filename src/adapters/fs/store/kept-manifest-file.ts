import { hash } from 'node:crypto';
import { PATH_LIMITS } from '../../../domain/archive-policy.js';
import type { Digest, ManifestFile } from '../../../domain/manifest.js';

/**
 * The file a project's latest known manifest is kept in (kept-manifests.ts),
 * `<user>/.manifests/<project>` beside the user's projects and store, in none of its
 * releases, which no web server configuration serves beyond. A head line, then the
 * manifest in one of two forms:
 *
 *   {"format":3,"origin":…,"release":…,"sha256":…,"digest":…}\n  packed (packed-manifest.ts), as the main thread keeps it
 *   {"format":2,"origin":…,"sha256":…}   …   \n       records, as the writer writes a tarball's files
 *
 * A record is a file in the order the archive had it: digest (32 bytes), size (f64),
 * path length (u32), path (UTF-8), little-endian. The writer cannot write the packed
 * form as it goes (the distinct contents come before the files), so it writes records,
 * with its head padded to a fixed length and written last, and a walk turns them into
 * the packed form the first time the release is a base. `sha256` is of the bytes after
 * the head: a file cut short or damaged is not a manifest. `digest`, where it was known
 * when the file was kept, is the manifest's canonical one (manifest-digest.ts), which a
 * redeploy compares with the client's: read back, a restart need not work it out on the
 * main thread. A wrong one could only refuse that base (a 409 the CLI falls back from).
 */
/** The directory of a user's kept manifests, one file per project: no project name starts with a dot. */
export const KEPT_MANIFESTS = '.manifests';
/** Where a tarball job's writer leaves its records, in the job's own directory beside its staging area (StagingObjects.fresh). */
export const WRITTEN_RECORDS = 'manifest';
/**
 * 3, not 1: a release published before a session's publish confirmed the sizes no probe
 * had seen may have kept sizes its files do not have; format 1 is walked instead, once.
 */
export const PACKED_FORMAT = 3;
export const RECORDS_FORMAT = 2;
/** The writer's head, padded with spaces to this length with its line break. */
export const RECORDS_HEAD_BYTES = 512;
/** Bytes read for the head: a directory's origin, a release id and a digest, with room to spare. */
export const HEAD_BYTES_MAX = 1024;
const RECORD_FIXED_BYTES = 32 + 8 + 4;

export interface KeptHead {
  readonly format: typeof PACKED_FORMAT | typeof RECORDS_FORMAT;
  /** directory-origin.ts's of the release when its manifest was kept: what it is the manifest of. */
  readonly origin: string;
  /** Its id, where the one keeping it knew it. */
  readonly release?: string;
  readonly sha256: string;
  /** The manifest's canonical digest, where it was known when the file was kept (packed form only). */
  readonly digest?: string;
}

/** The head at the start of `start` and its length with its line break, or undefined if it does not start with one. */
export function parseKeptHead(start: Uint8Array): { head: KeptHead; length: number } | undefined {
  const end = start.indexOf(0x0a);
  if (end < 0) return undefined;
  try {
    const head = JSON.parse(Buffer.from(start.buffer, start.byteOffset, end).toString('utf8')) as Partial<KeptHead>;
    const known = head.format === PACKED_FORMAT || head.format === RECORDS_FORMAT;
    const optional = (value: unknown): boolean => value === undefined || typeof value === 'string';
    const ok = known && typeof head.origin === 'string' && typeof head.sha256 === 'string' && optional(head.release) && optional(head.digest);
    return ok ? { head: head as KeptHead, length: end + 1 } : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the file of head `head` is the manifest of the directory of origin `origin` (release `release`, if the head names one). */
export function describes(head: KeptHead, origin: string, release?: string): boolean {
  return head.origin === origin && (head.release === undefined || release === undefined || head.release === release);
}

/** The head's `sha256` of `body`, the bytes after it (the writer's records hash theirs as they go, the same way). */
export function checksumOf(body: Uint8Array): string {
  return hash('sha256', body);
}

/** Whether `body`, the bytes after the head, are those the head was written for: not cut short, not damaged. */
export function isWhole(head: KeptHead, body: Uint8Array): boolean {
  return checksumOf(body) === head.sha256;
}

/** The head line; a writer's padded to RECORDS_HEAD_BYTES. */
export function encodeKeptHead(head: KeptHead): Buffer {
  const line = JSON.stringify(head);
  if (head.format === PACKED_FORMAT) return Buffer.from(`${line}\n`);
  if (Buffer.byteLength(line) >= RECORDS_HEAD_BYTES) throw new Error('a records head longer than its room');
  return Buffer.from(`${line.padEnd(RECORDS_HEAD_BYTES - 1)}\n`);
}

/** The largest record: a path as long as the archive policy allows. */
export const RECORD_BYTES_MAX = RECORD_FIXED_BYTES + PATH_LIMITS.maxPathBytes;

/** Writes one file's record into `into` at `at` (room for RECORD_BYTES_MAX there); returns where it ends. */
export function writeRecord(into: Buffer, at: number, path: string, digest: Uint8Array, size: number): number {
  into.set(digest, at);
  into.writeDoubleLE(size, at + 32);
  const pathBytes = into.write(path, at + RECORD_FIXED_BYTES, 'utf8');
  into.writeUInt32LE(pathBytes, at + 40);
  return at + RECORD_FIXED_BYTES + pathBytes;
}

/**
 * Hands up to `count` records of `records` from `at` to `add`; returns where the next
 * starts (records.length once all are read), or undefined if they are not whole records.
 */
export function readRecords(records: Buffer, at: number, count: number, add: (file: ManifestFile) => void): number | undefined {
  for (let read = 0; read < count && at < records.length; read += 1) {
    if (at + RECORD_FIXED_BYTES > records.length) return undefined;
    const end = at + RECORD_FIXED_BYTES + records.readUInt32LE(at + 40);
    if (end > records.length) return undefined;
    add({ path: records.toString('utf8', at + RECORD_FIXED_BYTES, end), size: records.readDoubleLE(at + 32), digest: records.toString('hex', at, at + 32) as Digest });
    at = end;
  }
  return at;
}
