import { ArchiveRejected } from './errors.js';
import { shownName, type ArchiveLimits } from './archive-policy.js';

/**
 * What the byte stream of an archive may be, around its entries: tar inflated once from
 * gzip, no bigger than its limits allow, with little after its end, and read without
 * the parser's complaint.
 */
/** Leading bytes of compressed formats; a tar header never starts with these in a valid name. */
const COMPRESSED: readonly (readonly [string, readonly number[]])[] = [
  ['gzip', [0x1f, 0x8b]],
  ['zstd', [0x28, 0xb5, 0x2f, 0xfd]],
  ['xz', [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]],
  ['bzip2', [0x42, 0x5a, 0x68]],
  ['lz4', [0x04, 0x22, 0x4d, 0x18]],
  ['compress (.Z)', [0x1f, 0x9d]],
  ['lzip', [0x4c, 0x5a, 0x49, 0x50]],
];

export const TAR_BLOCK = 512;

function isTarHeader(block: Uint8Array): boolean {
  if (block.every((byte) => byte === 0)) return true;
  const field = new TextDecoder('latin1').decode(block.subarray(148, 156)).replace(/[\0 ]+$/, '').trim();
  if (!/^[0-7]{1,8}$/.test(field)) return false;
  let sum = 0;
  for (let i = 0; i < TAR_BLOCK; i += 1) sum += i >= 148 && i < 156 ? 0x20 : (block[i] ?? 0);
  return sum === parseInt(field, 8);
}

/**
 * The first block of the inflated stream must be a tar header. sitedrop's own gunzip is
 * the only decompression: the tar parser would inflate a second gzip or zstd layer itself,
 * outside every cap, so a stream that is compressed again is refused before it is parsed.
 * `head` is the first TAR_BLOCK bytes, or fewer when the stream ended sooner.
 */
export function assertTarStart(head: Uint8Array): void {
  const starts = (magic: readonly number[]) => magic.every((byte, i) => head[i] === byte);
  // gzip and zstd first: node-tar would decompress those whatever the rest of the block says.
  const twice = COMPRESSED.slice(0, 2).find(([, magic]) => starts(magic));
  if (twice) throw compressedTwice(twice[0]);
  if (head.length === TAR_BLOCK && isTarHeader(head)) return;
  const other = COMPRESSED.slice(2).find(([, magic]) => starts(magic));
  if (other) throw compressedTwice(other[0]);
  throw new ArchiveRejected('the inflated stream is not a tar archive');
}

function compressedTwice(kind: string): ArchiveRejected {
  return new ArchiveRejected(`archive is compressed twice: the inflated stream is ${kind}, not tar (upload a .tar.gz compressed once)`);
}

/** Zeros after the tar end-of-archive marker beyond this are a bomb, not padding (records are 10 KiB). */
const MAX_TRAILER_BYTES = 1024 * 1024;

/**
 * The inflated byte stream of one archive, before and after the tar end marker: caps
 * what a small upload may inflate to (headers and PAX records on top of the file bytes)
 * and what may follow the end marker.
 */
export class InflatedStream {
  private readonly cap: number;
  private total = 0;
  private trailer = 0;

  constructor(limits: ArchiveLimits) {
    this.cap = limits.maxBytes + limits.maxFiles * 3 * TAR_BLOCK + 64 * 1024 * 1024;
  }

  /** Counts inflated bytes; `afterEnd` when they follow the tar end marker. */
  take(bytes: number, afterEnd: boolean): void {
    this.total += bytes;
    if (this.total > this.cap) throw new ArchiveRejected(`archive decompresses to more than ${this.cap} bytes`);
    if (!afterEnd) return;
    this.trailer += bytes;
    if (this.trailer > MAX_TRAILER_BYTES) throw new ArchiveRejected('unexpected data after the end of the tar archive');
  }
}

/** A stream its parser could not read; the parser's words are shown as a name is. */
export function unreadable(format: 'gzip' | 'tar', message: string): ArchiveRejected {
  return new ArchiveRejected(format === 'gzip' ? `not a valid gzip stream: ${shownName(message)}` : `invalid tar archive: ${shownName(message)}`);
}

/**
 * Any warning of the tar parser refuses the archive: node-tar warns where it would skip
 * or repair something (a bad checksum, a truncated entry), and a site published without
 * it would not be the one archived.
 */
export function parserWarning(message: string): ArchiveRejected {
  return unreadable('tar', message);
}
