import { createHash } from 'node:crypto';
import { PassThrough, pipeline, Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { Header } from 'tar/header';
import { fileChunks, readFileSyncInto, SMALL_FILE_BYTES } from './file-chunks.js';

/** An object the server lacks: its digest, its size, and one path in the folder holding those bytes. */
export interface MissingObject {
  readonly digest: string;
  readonly size: number;
  readonly path: string;
}

/**
 * One request's worth: small enough that a failed request costs little to resend and
 * stays far below MAX_UPLOAD_BYTES (100 MB by default), large enough that the server's
 * fixed cost per batch (a flush to disk) is paid a few times, not dozens: more than half
 * of a site missing goes as a tarball instead, so 40,000 files are at most two requests.
 */
export const BATCH_LIMITS = { bytes: 32 * 1024 * 1024, files: 10_000 };

/** Objects in upload order, cut into batches; one larger than a batch travels alone. */
export function batchObjects(objects: readonly MissingObject[], limits = BATCH_LIMITS): MissingObject[][] {
  const batches: MissingObject[][] = [];
  let current: MissingObject[] = [];
  let bytes = 0;
  for (const object of objects) {
    if (current.length === limits.files || (current.length > 0 && bytes + object.size > limits.bytes)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(object);
    bytes += object.size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

const BLOCK = 512;
/** Compressed bytes packed ahead of the connection: lets the next batch be ready while one is answered, with memory bounded. */
const PACKED_AHEAD_BYTES = 4 * 1024 * 1024;

function header(object: MissingObject): Buffer {
  // Named by digest at the root, 0644, no owner names, a fixed time: the same bytes always pack the same.
  const block = Buffer.alloc(BLOCK);
  new Header({ path: object.digest, type: 'File', mode: 0o644, uid: 0, gid: 0, size: object.size, mtime: new Date(0) }).encode(block, 0);
  return block;
}

/** Pieces of tar handed to gzip at once: each write to zlib is a trip to the thread pool, and headers are 512 bytes. */
const GZIP_INPUT_BYTES = 64 * 1024;
/**
 * Fastest level: the batch is mostly pages already squeezed by their build or fresh
 * media, where a higher level costs far more time than it saves bytes (docs/performance.md).
 */
const GZIP_LEVEL = 1;
/**
 * Tar taken in ahead of zlib: with the default 16 KiB the files are read only once zlib
 * asks, so reading and compressing take turns instead of overlapping (docs/performance.md).
 */
const GZIP_AHEAD_BYTES = 1024 * 1024;

const isSmall = (object: MissingObject): boolean => object.size <= SMALL_FILE_BYTES;

/**
 * Extensions of formats that are compressed already: the web's share of rsync's
 * --skip-compress list. Deflate gains a percent or two on them.
 */
const COMPRESSED_FORMATS = new Set([
  'jpg', 'jpeg', 'png', 'gif', 'webp', 'avif', 'heic', 'heif', 'jxl',
  'woff', 'woff2',
  'mp3', 'mp4', 'm4a', 'm4v', 'mov', 'webm', 'mkv', 'ogg', 'oga', 'ogv', 'opus', 'flac', 'aac',
  'zip', 'gz', 'tgz', 'br', 'zst', 'xz', 'bz2', '7z', 'rar', 'jar', 'apk',
]);

/** Whether `path` names a file of a format that is compressed already, by its extension. */
export function alreadyCompressed(path: string): boolean {
  const dot = path.lastIndexOf('.');
  return dot > path.lastIndexOf('/') && COMPRESSED_FORMATS.has(path.slice(dot + 1).toLowerCase());
}

/**
 * A small file's bytes, read synchronously as the hashing reads them (file-chunks.ts
 * says why): one byte more is asked for, so a file grown since it was hashed shows it.
 */
function smallFile(root: string, object: MissingObject): Buffer {
  const buffer = Buffer.allocUnsafe(object.size + 1);
  // One read: a file grown past its size is refused below, whatever it has grown to.
  const read = readFileSyncInto(root, object.path, buffer, () => undefined, buffer.length);
  return buffer.subarray(0, read);
}

/**
 * The tar, in pieces of about 64 KiB: small files read whole, large ones streamed, each
 * checked against the digest it was hashed to. The archive's end only where `ends`: a
 * batch may be two gzip members, one tar.
 */
async function* tarEntries(root: string, batch: readonly MissingObject[], onBytes: (bytes: number) => void, ends: boolean): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const take = (piece: Buffer): void => {
    pending.push(piece);
    pendingBytes += piece.length;
  };
  const flush = (): Buffer => {
    const piece = Buffer.concat(pending);
    pending = [];
    pendingBytes = 0;
    return piece;
  };
  for (const object of batch) {
    const hash = createHash('sha256');
    let read = 0;
    const count = (chunk: Buffer): void => {
      hash.update(chunk);
      read += chunk.length;
      onBytes(chunk.length);
    };
    take(header(object));
    if (isSmall(object)) {
      const bytes = smallFile(root, object);
      count(bytes);
      take(bytes);
    } else {
      yield flush();
      for await (const chunk of fileChunks(root, object.path, object.size)) {
        count(chunk);
        yield chunk;
      }
    }
    // The server would refuse the object anyway; saying which file changed is more use.
    if (read !== object.size || hash.digest('hex') !== object.digest) throw new Error(`${object.path} changed while it was being deployed: deploy again`);
    if (object.size % BLOCK !== 0) take(Buffer.alloc(BLOCK - (object.size % BLOCK)));
    if (pendingBytes >= GZIP_INPUT_BYTES) yield flush();
  }
  if (ends) take(Buffer.alloc(2 * BLOCK));
  if (pendingBytes > 0) yield flush();
}

/** `pieces` deflated at `level` as one gzip member, as zlib gives it out. */
async function* gzipMember(pieces: AsyncIterable<Buffer>, level: number): AsyncGenerator<Buffer> {
  const gzip = createGzip({ level, chunkSize: 64 * 1024 });
  // A failed read ends the member with its error; a member given up ends the reading.
  pipeline(Readable.from(pieces, { objectMode: false, highWaterMark: GZIP_AHEAD_BYTES }), gzip, () => undefined);
  yield* gzip as AsyncIterable<Buffer>;
}

/**
 * A batch as the protocol's PUT wants it, a gzip-compressed tar, produced as it is read:
 * at most a few MiB of it are ever in memory, whatever the batch holds. Files of formats
 * already compressed go last, in a second gzip member of stored blocks: gzip -d reads the
 * members as one stream, and deflate would spend as long on a photo as on a page to save
 * a percent of it. `onBytes` hears the file bytes packed so far.
 */
export function packObjects(root: string, batch: readonly MissingObject[], onBytes: (packed: number) => void = () => undefined): Readable {
  const deflated = batch.filter((object) => !alreadyCompressed(object.path));
  const stored = batch.filter((object) => alreadyCompressed(object.path));
  let packed = 0;
  const count = (bytes: number): void => onBytes((packed += bytes));
  async function* members(): AsyncGenerator<Buffer> {
    if (deflated.length > 0 || stored.length === 0) yield* gzipMember(tarEntries(root, deflated, count, stored.length === 0), GZIP_LEVEL);
    if (stored.length > 0) yield* gzipMember(tarEntries(root, stored, count, true), 0);
  }
  const out = new PassThrough({ highWaterMark: PACKED_AHEAD_BYTES });
  pipeline(Readable.from(members(), { objectMode: false }), out, () => undefined);
  return out;
}
