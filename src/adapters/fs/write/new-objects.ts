import { DIGEST_BYTES } from '../threads/fs-ops.js';
import { hintOf } from './object-links.js';

const utf8 = new TextEncoder();
const decoder = new TextDecoder();
/** A record: the digest, the path's length (u16), the path relative to the release. */
const HEAD = DIGEST_BYTES + 2;

/**
 * A tarball job's new objects, left where its release has them instead of linked into the
 * store as they are written: the digest and the release's path of each, packed (about 80
 * bytes an object, outside the heap). The job's later files of the same bytes link the
 * latest; after the publish, the store adopts each by one link (ReleaseAdoption), off the
 * deploy's critical path. Found by the first 30 bits of the digest, then compared whole.
 */
export class NewObjects {
  private bytes = new Uint8Array(64 * 1024);
  private length = 0;
  /** By hint, the offset of the latest record with it. */
  private readonly latest = new Map<number, number>();

  add(digest: Uint8Array, path: string): void {
    const encoded = utf8.encode(path);
    this.reserve(HEAD + encoded.length);
    const at = this.length;
    this.bytes.set(digest.subarray(0, DIGEST_BYTES), at);
    new DataView(this.bytes.buffer).setUint16(at + DIGEST_BYTES, encoded.length);
    this.bytes.set(encoded, at + HEAD);
    this.length += HEAD + encoded.length;
    this.latest.set(hintOf(digest), at);
  }

  /** The path of the latest file of these bytes this job wrote, if any. */
  pathOf(digest: Uint8Array): string | undefined {
    const at = this.latest.get(hintOf(digest));
    if (at === undefined) return undefined;
    for (let i = 0; i < DIGEST_BYTES; i += 1) if (this.bytes[at + i] !== digest[i]) return undefined;
    const size = new DataView(this.bytes.buffer).getUint16(at + DIGEST_BYTES);
    return decoder.decode(this.bytes.subarray(at + HEAD, at + HEAD + size));
  }

  /** The records, packed (a view, not a copy: its buffer is transferred); empty if the job wrote no new object. */
  packed(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }

  private reserve(more: number): void {
    if (this.length + more <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.length + more));
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
  }
}

/** Reads packed records (NewObjects.packed) one at a time, from `at`. */
export function readNewObject(packed: Uint8Array, at: number): { digest: Uint8Array; path: string; next: number } {
  const size = new DataView(packed.buffer, packed.byteOffset, packed.byteLength).getUint16(at + DIGEST_BYTES);
  return {
    digest: packed.subarray(at, at + DIGEST_BYTES),
    path: decoder.decode(packed.subarray(at + HEAD, at + HEAD + size)),
    next: at + HEAD + size,
  };
}
