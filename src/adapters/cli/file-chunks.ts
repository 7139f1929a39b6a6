import { close, constants, createReadStream, fstat, open, read } from 'node:fs';
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

/** Up to this a file is read in one call; a larger one streams, so memory never holds more than this of one file. */
export const SMALL_FILE_BYTES = 256 * 1024;

/**
 * The bytes of the regular file `root/path` (at most `limit` of them), never through a
 * link: one buffer when it is small, chunks when it is not.
 */
export async function* fileChunks(root: string, path: string, limit = Infinity): AsyncGenerator<Buffer> {
  // O_NOFOLLOW: a file swapped for a link since the folder was walked is refused, not followed.
  const fd = await openFile(join(root, path), constants.O_RDONLY | constants.O_NOFOLLOW).catch((error: NodeJS.ErrnoException) => {
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
