import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { PRECOMPRESS_MIN_BYTES, type PrecompressedCoding } from '../../domain/precompressible.js';

export interface SiblingSettings {
  readonly brotliQuality: number;
  readonly gzipLevel: number;
  readonly minBytes: number;
  /** Larger files get no siblings: each is compressed whole in the thread's memory. */
  readonly maxBytes: number;
  /**
   * A batch is flushed (one syncfs) and linked once it holds this many bytes or files. Small:
   * a deploy that starts while the run waits flushes what it left unflushed with its own syncfs.
   */
  readonly batchBytes: number;
  readonly batchFiles: number;
}

export const SIBLING_SETTINGS: SiblingSettings = {
  // Measured on the bench's pages: brotli 5 is as small as 7 for less CPU (docs: 67 against 76 us a
  // page), 11 is 30-60x slower for 5-10% less; gzip 9 is no smaller than 6.
  brotliQuality: 5,
  gzipLevel: 6,
  minBytes: PRECOMPRESS_MIN_BYTES,
  maxBytes: 32 * 1024 * 1024,
  batchBytes: 1024 * 1024,
  batchFiles: 256,
};

export function compressorsFor(settings: SiblingSettings): Record<PrecompressedCoding, (bytes: Buffer) => Buffer> {
  return {
    br: (bytes) =>
      brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: settings.brotliQuality, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } }),
    gz: (bytes) => gzipSync(bytes, { level: settings.gzipLevel }),
  };
}
