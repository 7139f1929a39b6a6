import { DIGEST_BYTES } from '../threads/fs-ops.js';
import { hintOf } from './object-links.js';

const utf8 = new TextEncoder();
const decoder = new TextDecoder();
/** A record: the digest, the path's length (u16), the path relative to the release. */
const HEAD = DIGEST_BYTES + 2;
/** Records are kept in chunks of this size: a list that grows copies nothing, and wastes less than a chunk. */
const CHUNK = 64 * 1024;

/**
 * A tarball job's new objects, left where its release has them instead of linked into the
 * store as they are written (or the session's uploads an assembly linked): the digest and
 * the release's path of each, packed (about 80
 * bytes an object, outside the heap). The job's later files of the same bytes link the
 * latest; after the publish, the store adopts each by one link (ReleaseAdoption), off the
 * deploy's critical path. Found by the first 30 bits of the digest, then compared whole.
 */
export class NewObjects {
  private readonly chunks: Uint8Array[] = [];
  /** How far each chunk's records reach. */
  private readonly ends: number[] = [];
  /** By hint, where the latest record with it starts: chunk * CHUNK + offset. */
  private readonly latest = new Map<number, number>();

  add(digest: Uint8Array, path: string): void {
    const encoded = utf8.encode(path);
    const size = HEAD + encoded.length;
    if (this.chunks.length === 0 || this.ends.at(-1)! + size > CHUNK) {
      this.chunks.push(new Uint8Array(Math.max(CHUNK, size)));
      this.ends.push(0);
    }
    const last = this.chunks.length - 1;
    const chunk = this.chunks[last]!;
    const at = this.ends[last]!;
    chunk.set(digest.subarray(0, DIGEST_BYTES), at);
    new DataView(chunk.buffer).setUint16(at + DIGEST_BYTES, encoded.length);
    chunk.set(encoded, at + HEAD);
    this.ends[last] = at + size;
    this.latest.set(hintOf(digest), last * CHUNK + at);
  }

  /** The path of the latest file of these bytes this job wrote, if any. */
  pathOf(digest: Uint8Array): string | undefined {
    const where = this.latest.get(hintOf(digest));
    if (where === undefined) return undefined;
    const chunk = this.chunks[Math.floor(where / CHUNK)]!;
    const at = where % CHUNK;
    for (let i = 0; i < DIGEST_BYTES; i += 1) if (chunk[at + i] !== digest[i]) return undefined;
    const size = new DataView(chunk.buffer).getUint16(at + DIGEST_BYTES);
    return decoder.decode(chunk.subarray(at + HEAD, at + HEAD + size));
  }

  /** The records, packed in one buffer of their size; empty if the job wrote no new object. */
  packed(): Uint8Array {
    const packed = new Uint8Array(this.ends.reduce((sum, end) => sum + end, 0));
    let length = 0;
    for (const [i, chunk] of this.chunks.entries()) {
      packed.set(chunk.subarray(0, this.ends[i]), length);
      length += this.ends[i]!;
    }
    return packed;
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
