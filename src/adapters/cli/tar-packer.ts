import { createHash } from 'node:crypto';
import { lstatSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { PassThrough, pipeline, Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { Header } from 'tar/header';
import { Pax } from 'tar/pax';
import { fileChunks, linkRefused, notRegular, readFileSyncInto, SMALL_FILE_BYTES } from './file-chunks.js';

/**
 * A file to pack: its name in the tar and its path under the root. An object of an
 * incremental deploy comes `hashed` (its size and digest, which its bytes must match;
 * mode 0644, a fixed time, so the same bytes always pack the same); a folder's file is
 * described as it is packed (its size, mode and time then).
 */
export interface TarFile {
  readonly name: string;
  readonly path: string;
  readonly hashed?: { readonly size: number; readonly digest: string };
}

const BLOCK = 512;
/** Compressed bytes packed ahead of the connection: lets the next request be ready while one is answered, with memory bounded. */
const PACKED_AHEAD_BYTES = 4 * 1024 * 1024;
/** Pieces of tar handed to gzip at once: each write to zlib is a trip to the thread pool, and headers are 512 bytes. */
const GZIP_INPUT_BYTES = 64 * 1024;
/**
 * Fastest level: what is sent is mostly pages already squeezed by their build, where a
 * higher level costs far more time than it saves bytes (docs/performance.md).
 */
const GZIP_LEVEL = 1;
/**
 * Tar taken in ahead of zlib: with the default 16 KiB the files are read only once zlib
 * asks, so reading and compressing take turns instead of overlapping (docs/performance.md).
 */
const GZIP_AHEAD_BYTES = 1024 * 1024;

/**
 * Extensions of formats that are compressed already: the web's share of rsync's
 * --skip-compress list. Deflate gains a percent or two on them. A list of what not to
 * deflate, unlike the text types given siblings (domain/precompressible.ts): a type
 * named in neither is deflated, as it may well shrink.
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

const changed = (path: string): Error => new Error(`${path} changed while it was being deployed: deploy again`);

/** As node-tar's portable mode writes it: owner read and write, no group or other write, directories listable where readable. */
function portableMode(stats: Stats): number {
  let mode = (stats.mode | 0o600) & 0o7755;
  if (stats.isDirectory()) mode |= (mode & 0o444) >> 2;
  return mode;
}

/** What a header block names an entry whose name only a pax header can hold: ustar's name cut short could end in '..', which the server refuses. */
const PAX_NAMED = 'pax-named';

/** An entry's header block, after a pax header where a field does not fit ustar's (a long name). */
function headerOf(fields: { path: string; type: 'File' | 'Directory'; mode: number; size: number; mtime?: Date }): Buffer {
  const block = Buffer.alloc(BLOCK);
  if (!new Header({ ...fields, uid: 0, gid: 0 }).encode(block, 0)) return block;
  const standIn = fields.type === 'Directory' ? `${PAX_NAMED}/` : PAX_NAMED;
  new Header({ ...fields, path: standIn, uid: 0, gid: 0 }).encode(block.fill(0), 0);
  return Buffer.concat([new Pax({ path: fields.path, size: fields.size, ...(fields.mtime && { mtime: fields.mtime }) }).encode(), block]);
}

/** A folder's file as it is now, never through a link. */
function statOf(root: string, path: string): Stats {
  const stats = lstatSync(join(root, path), { throwIfNoEntry: false });
  if (stats === undefined) throw new Error(`${path} was removed while it was being deployed: deploy again`);
  if (stats.isSymbolicLink()) throw linkRefused(path);
  if (!stats.isFile()) throw notRegular(path);
  return stats;
}

/**
 * A small file's bytes, read synchronously as the hashing reads them (file-chunks.ts
 * says why): one byte more is asked for, so a file grown since it was measured shows it.
 */
function smallFile(root: string, path: string, size: number): Buffer {
  const buffer = Buffer.allocUnsafe(size + 1);
  const read = readFileSyncInto(root, path, buffer, () => undefined, buffer.length);
  if (read !== size) throw changed(path);
  return buffer.subarray(0, read);
}

/**
 * The tar, in pieces of about 64 KiB: directories, then files, small ones read whole and
 * large ones streamed, each checked against the size (and digest) it was packed as. The
 * archive's end only where `ends`: a tar may span two gzip members.
 */
async function* tarPieces(root: string, directories: readonly string[], files: readonly TarFile[], onBytes: (bytes: number) => void, ends: boolean): AsyncGenerator<Buffer> {
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
  for (const directory of directories) {
    const stats = lstatSync(join(root, directory), { throwIfNoEntry: false });
    if (!stats?.isDirectory()) throw changed(directory);
    // No time, as node-tar's portable mode: a directory's changes with every file made in it.
    take(headerOf({ path: `${directory}/`, type: 'Directory', mode: portableMode(stats), size: 0 }));
    if (pendingBytes >= GZIP_INPUT_BYTES) yield flush();
  }
  for (const file of files) {
    const stats = file.hashed ? undefined : statOf(root, file.path);
    const size = file.hashed?.size ?? stats!.size;
    const hash = file.hashed && createHash('sha256');
    let read = 0;
    const count = (chunk: Buffer): void => {
      hash?.update(chunk);
      read += chunk.length;
      onBytes(chunk.length);
    };
    take(headerOf({ path: file.name, type: 'File', size, ...(stats ? { mode: portableMode(stats), mtime: stats.mtime } : { mode: 0o644, mtime: new Date(0) }) }));
    if (size <= SMALL_FILE_BYTES) {
      const bytes = smallFile(root, file.path, size);
      count(bytes);
      take(bytes);
    } else {
      yield flush();
      // One byte more is asked for: a file grown since it was measured shows it.
      for await (const chunk of fileChunks(root, file.path, size + 1)) {
        count(chunk);
        if (read > size) throw changed(file.path);
        yield chunk;
      }
    }
    // A file changed while it was read: the server would refuse such an object anyway, and naming the file is more use.
    if (read !== size || (hash && hash.digest('hex') !== file.hashed!.digest)) throw changed(file.path);
    if (size % BLOCK !== 0) take(Buffer.alloc(BLOCK - (size % BLOCK)));
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
 * A gzip-compressed tar of `directories` (paths under `root`, each before what it holds)
 * and `files`, produced as it is read: at most a few MiB of it are ever in memory. Files
 * of formats already compressed go last, in a second gzip member of stored blocks: gzip
 * -d reads the members as one stream, and deflate would spend as long on a photo as on a
 * page to save a percent of it. `onBytes` hears the file bytes packed so far. Every entry
 * is a plain directory or file with no owner: links are never packed, even hard ones.
 */
export function packTar(root: string, directories: readonly string[], files: readonly TarFile[], onBytes: (packed: number) => void = () => undefined): Readable {
  const deflated = files.filter((file) => !alreadyCompressed(file.path));
  const stored = files.filter((file) => alreadyCompressed(file.path));
  let packed = 0;
  const count = (bytes: number): void => onBytes((packed += bytes));
  async function* members(): AsyncGenerator<Buffer> {
    yield* gzipMember(tarPieces(root, directories, deflated, count, stored.length === 0), GZIP_LEVEL);
    if (stored.length > 0) yield* gzipMember(tarPieces(root, [], stored, count, true), 0);
  }
  const out = new PassThrough({ highWaterMark: PACKED_AHEAD_BYTES });
  pipeline(Readable.from(members(), { objectMode: false }), out, () => undefined);
  return out;
}
