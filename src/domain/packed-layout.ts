// The packed manifest's layout (packed-manifest.ts), shared by what reads it in place.
import { EMPTY_DIGEST } from './manifest.js';

export const HEADER_BYTES = 16; // files (u32), objects (u32), bytes (f64)
export const DIGEST_BYTES = 32;
export const OBJECT_BYTES = DIGEST_BYTES + 8; // digest, size (f64)
export const FILE_FIXED_BYTES = 8; // object index (u32), path length (u32)
/** An empty file's object index: it has no object (manifest.ts, EMPTY_DIGEST). */
export const NO_OBJECT = 0xffffffff;
/** An empty file's digest as bytes: it has no object record to hold it. */
export const EMPTY_FILE_DIGEST = Buffer.from(EMPTY_DIGEST, 'hex');

/**
 * Copies source[start, end) into target at `at`, returning the bytes copied: Buffer#copy
 * makes a view per call, which for 40,000 short paths was tens of MiB of garbage.
 */
export function copyBytes(source: Uint8Array, start: number, end: number, target: Uint8Array, at: number): number {
  for (let k = start; k < end; k += 1) target[at + k - start] = source[k]!;
  return end - start;
}
