import { createHash } from 'node:crypto';

/** A stable signed 64-bit key for a PostgreSQL advisory lock: the first 8 bytes of a SHA-256. */
export function advisoryKey(name: string): string {
  return createHash('sha256').update(name, 'utf8').digest().readBigInt64BE(0).toString();
}
