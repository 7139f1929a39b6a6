import { createHash } from 'node:crypto';
import type { Digest } from '../../src/domain/manifest.js';

/** SHA-256 of some bytes (text as UTF-8), as a manifest names content: 64 lowercase hex digits. */
export const sha256 = (bytes: Buffer | string): Digest => createHash('sha256').update(bytes).digest('hex') as Digest;

/** The same digest as its 32 raw bytes, as an object's base32 name in the store encodes it. */
export const sha256Bytes = (bytes: Buffer | string): Buffer => createHash('sha256').update(bytes).digest();
