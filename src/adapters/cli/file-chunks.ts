import { close, closeSync, constants, createReadStream, fstat, fstatSync, open, openSync, read, readSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { UsageError } from './usage-error.js';

export const linkRefused = (path: string): UsageError => new UsageError(`${path} is a symbolic link: the server refuses links, replace it with the file it points to`);
export const notRegular = (path: string): UsageError => new UsageError(`${path} is not a regular file or directory`);

// Plain descriptors, not fs/promises' FileHandle: over 40,000 small files they take half the time.
const openFile = promisify(open);
const statFile = promisify(fstat);
const readAt = promisify(read);
const closeFile = promisify(close);

/** O_NONBLOCK as well: a FIFO swapped in for a file since the walk must be refused, not waited on at open. */
const READ_NEW = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Up to this a file is read in one call; a larger one streams, so memory never holds more than this of one file. */
export const SMALL_FILE_BYTES = 256 * 1024;

/**
 * The bytes of the regular file `root/path` (at most `limit` of them), never through a
 * link: one buffer when it is small, chunks when it is not.
 */
export async function* fileChunks(root: string, path: string, limit = Infinity): AsyncGenerator<Buffer> {
  // O_NOFOLLOW: a file swapped for a link since the folder was walked is refused, not followed;
  // O_NONBLOCK: a FIFO swapped in is refused below, not waited on at open.
  const fd = await openFile(join(root, path), READ_NEW).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ELOOP') throw linkRefused(path);
    throw error.code === 'ENOENT' ? new Error(`${path} was removed while it was being deployed: deploy again`) : error;
  });
  try {
    const info = await statFile(fd);
    if (!info.isFile()) throw notRegular(path);
    const size = Math.min(info.size, limit);
    if (size <= SMALL_FILE_BYTES) {
      const buffer = Buffer.allocUnsafe(size);
      const { bytesRead } = size === 0 ? { bytesRead: 0 } : await readAt(fd, buffer, 0, size, 0);
      if (bytesRead > 0) yield buffer.subarray(0, bytesRead);
      return;
    }
    const end = limit === Infinity ? undefined : limit - 1;
    yield* createReadStream('', { fd, autoClose: false, start: 0, end }) as AsyncIterable<Buffer>;
  } finally {
    await closeFile(fd);
  }
}

/**
 * Calls `take` with the bytes of the regular file `root/path`, in order, synchronously:
 * one call for a small file, chunks of at most `buffer`'s length for a larger one. Each
 * chunk is a view of `buffer`, overwritten by the next. Returns the bytes read: a file
 * that changes meanwhile is described as read; past `limit` bytes the rest is not read.
 * Synchronous on purpose: over thousands of
 * small files, four thread-pool round trips per file (open, fstat, read, close) cost more
 * than the reading (docs/performance.md).
 */
export function readFileSyncInto(root: string, path: string, buffer: Buffer, take: (chunk: Buffer) => void, limit = Infinity): number {
  let fd: number;
  try {
    fd = openSync(join(root, path), READ_NEW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw linkRefused(path);
    throw code === 'ENOENT' ? new Error(`${path} was removed while it was being deployed: deploy again`) : error;
  }
  try {
    if (!fstatSync(fd).isFile()) throw notRegular(path);
    let total = 0;
    for (;;) {
      const read = readSync(fd, buffer, 0, buffer.length, total);
      if (read > 0) take(buffer.subarray(0, read));
      total += read;
      // A short read of a regular file is its end: no second call to hear 0.
      if (read < buffer.length || total >= limit) return total;
    }
  } finally {
    closeSync(fd);
  }
}
