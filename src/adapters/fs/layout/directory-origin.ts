import type { BigIntStats } from 'node:fs';

/**
 * A directory's device, inode and birth time: what its compressed siblings, added after
 * the commit, leave as it was, and what one removed and made again under the same name
 * does not share, even if the filesystem gives it the freed inode number (a birth time of
 * 0 where the filesystem keeps none). Its own module: the writer thread names the
 * staging area it writes by it too, without loading the main thread's layout.
 */
export const originOf = (info: BigIntStats): string => `${info.dev}:${info.ino}:${info.birthtimeNs}`;
