import { createHash } from 'node:crypto';
import { copyBytes, DIGEST_BYTES, EMPTY_FILE_DIGEST, FILE_FIXED_BYTES, HEADER_BYTES, NO_OBJECT, OBJECT_BYTES } from './packed-layout.js';
import type { PackedManifest } from './packed-manifest.js';

const SLASH = 0x2f;
/** Each byte's two lowercase hex digits, as the canonical form spells a digest. */
const HEX_PAIRS = Buffer.from(Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0')).join(''), 'latin1');
/** The path being looked up, as UTF-8: one buffer for every lookup (a thread runs one at a time). */
let sought = Buffer.alloc(2048);

/** Unsigned byte order of x[xs, xe) and y[ys, ye): Buffer.compare's, without a view made per call. */
function compareBytes(x: Uint8Array, xs: number, xe: number, y: Uint8Array, ys: number, ye: number): number {
  const n = Math.min(xe - xs, ye - ys);
  for (let k = 0; k < n; k += 1) {
    const d = x[xs + k]! - y[ys + k]!;
    if (d !== 0) return d;
  }
  return xe - xs - (ye - ys);
}

/** Adds to `dirs` the directories `path` implies; a parent there already has its own there too. */
export function addParents(dirs: Set<string>, path: string): void {
  for (let cut = path.lastIndexOf('/'); cut > 0; cut = path.lastIndexOf('/', cut - 1)) {
    const parent = path.slice(0, cut);
    if (dirs.has(parent)) return;
    dirs.add(parent);
  }
}

/** Adds `dir` ('' is the top, not a directory of its own) and the directories it implies. */
export function addDirectory(dirs: Set<string>, dir: string): void {
  if (dir === '' || dirs.has(dir)) return;
  dirs.add(dir);
  addParents(dirs, dir);
}

/**
 * The files of a packed manifest read where they lie: by position (the manifest's order),
 * and by path through their order by the paths' UTF-8 bytes. 40,000 files cost two arrays
 * of 160 KB, not 40,000 strings and a Map of them that the heap keeps after
 * (docs/performance.md); and a lookup is a binary search, which no choice of paths by a
 * client can make slow, as colliding paths would a hash table's.
 */
export class PackedPaths {
  readonly count: number;
  private readonly packed: Buffer;
  private readonly records: Uint32Array;
  private order: Uint32Array | undefined;

  constructor(manifest: PackedManifest) {
    this.packed = manifest.packed;
    this.count = manifest.fileCount;
    this.records = new Uint32Array(this.count);
    let at = HEADER_BYTES + manifest.objectCount * OBJECT_BYTES;
    for (let i = 0; i < this.count; i += 1) {
      this.records[i] = at;
      at += FILE_FIXED_BYTES + this.packed.readUInt32LE(at + 4);
    }
  }

  /** File `i`'s object index among the manifest's objects; NO_OBJECT for an empty file. */
  object(i: number): number {
    return this.packed.readUInt32LE(this.records[i]!);
  }

  size(i: number): number {
    const object = this.object(i);
    return object === NO_OBJECT ? 0 : this.packed.readDoubleLE(HEADER_BYTES + object * OBJECT_BYTES + DIGEST_BYTES);
  }

  /** File `i`'s digest: a view into the packed bytes, or the empty file's. */
  digest(i: number): Uint8Array {
    const object = this.object(i);
    if (object === NO_OBJECT) return EMPTY_FILE_DIGEST;
    const at = HEADER_BYTES + object * OBJECT_BYTES;
    return this.packed.subarray(at, at + DIGEST_BYTES);
  }

  path(i: number): string {
    return this.packed.toString('utf8', this.pathStart(i), this.pathEnd(i));
  }

  /** Where file `i`'s path bytes start in the packed bytes. */
  pathStart(i: number): number {
    return this.records[i]! + FILE_FIXED_BYTES;
  }

  pathEnd(i: number): number {
    return this.pathStart(i) + this.packed.readUInt32LE(this.records[i]! + 4);
  }

  /** Where file `i`'s directory ends (its last '/'), or -1 at the top. UTF-8 never uses 0x2f inside a character. */
  parentEnd(i: number): number {
    const start = this.pathStart(i);
    for (let at = this.pathEnd(i) - 1; at >= start; at -= 1) if (this.packed[at] === SLASH) return at;
    return -1;
  }

  /** True if files `i` and `j` are in the same directory. */
  sameParent(i: number, j: number): boolean {
    const a = this.parentEnd(i);
    const b = this.parentEnd(j);
    if (a < 0 || b < 0) return a === b;
    return compareBytes(this.packed, this.pathStart(i), a, this.packed, this.pathStart(j), b) === 0;
  }

  /** File `i`'s directory, '' at the top. */
  parent(i: number): string {
    const end = this.parentEnd(i);
    return end < 0 ? '' : this.packed.toString('utf8', this.pathStart(i), end);
  }

  /**
   * The positions in their paths' byte order. An Array's sort, not a typed array's: it is
   * TimSort, which takes the runs a manifest is mostly made of (a client's walk, directory
   * by directory; a redeploy's additions last) as they are.
   */
  sorted(): Uint32Array {
    if (this.order) return this.order;
    const positions: number[] = [];
    for (let i = 0; i < this.count; i += 1) positions.push(i);
    this.order = Uint32Array.from(positions.sort((a, b) => this.compare(a, b)));
    return this.order;
  }

  /** The position of the file at `path`, if the manifest has one. */
  find(path: string): number | undefined {
    if (Buffer.byteLength(path) > sought.length) sought = Buffer.alloc(Buffer.byteLength(path));
    const length = sought.write(path, 0, 'utf8');
    const order = this.sorted();
    let low = 0;
    let high = order.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const i = order[mid]!;
      const d = compareBytes(this.packed, this.pathStart(i), this.pathEnd(i), sought, 0, length);
      if (d === 0) return i;
      if (d < 0) low = mid + 1;
      else high = mid;
    }
    return undefined;
  }

  /**
   * The SHA-256 (hex) of the canonical form, byte for byte manifest-digest.ts's
   * `manifestDigest` of these files: written from the packed bytes into one buffer, with no
   * file made an object or its digest a string.
   */
  canonicalDigest(): string {
    const hash = createHash('sha256');
    const chunk = Buffer.allocUnsafe(64 * 1024);
    let n = 0;
    const order = this.sorted();
    for (let o = 0; o < order.length; o += 1) {
      const i = order[o]!;
      const start = this.pathStart(i);
      const end = this.pathEnd(i);
      // 64 hex digits, a space, at most 16 digits of size, a space, the path (at most
      // PATH_LIMITS' 1,024 bytes) and a newline: far less than the chunk.
      if (n + 83 + end - start > chunk.length) {
        hash.update(chunk.subarray(0, n));
        n = 0;
      }
      const object = this.object(i);
      const digest = object === NO_OBJECT ? EMPTY_FILE_DIGEST : this.packed;
      const at = object === NO_OBJECT ? 0 : HEADER_BYTES + object * OBJECT_BYTES;
      for (let k = at; k < at + DIGEST_BYTES; k += 1) {
        chunk[n++] = HEX_PAIRS[digest[k]! * 2]!;
        chunk[n++] = HEX_PAIRS[digest[k]! * 2 + 1]!;
      }
      chunk[n++] = 0x20;
      n += chunk.write(String(this.size(i)), n, 'latin1');
      chunk[n++] = 0x20;
      n += copyBytes(this.packed, start, end, chunk, n);
      chunk[n++] = 0x0a;
    }
    return hash.update(chunk.subarray(0, n)).digest('hex');
  }

  /** The byte order of file `i`'s path here and file `j`'s in `other`. */
  compareWith(i: number, other: PackedPaths, j: number): number {
    return compareBytes(this.packed, this.pathStart(i), this.pathEnd(i), other.packed, other.pathStart(j), other.pathEnd(j));
  }

  /** True if file `i` here and file `j` in `other` hold the same bytes: both empty, or the same digest. */
  sameContent(i: number, other: PackedPaths, j: number): boolean {
    const mine = this.object(i);
    const theirs = other.object(j);
    if (mine === NO_OBJECT || theirs === NO_OBJECT) return mine === theirs;
    const at = HEADER_BYTES + mine * OBJECT_BYTES;
    const their = HEADER_BYTES + theirs * OBJECT_BYTES;
    for (let k = 0; k < DIGEST_BYTES; k += 1) if (this.packed[at + k] !== other.packed[their + k]) return false;
    return true;
  }

  private compare(i: number, j: number): number {
    return this.compareWith(i, this, j);
  }
}
