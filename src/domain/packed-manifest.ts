import { EMPTY_DIGEST, type Digest, type Manifest, type ManifestFile } from './manifest.js';
import { DIGEST_BYTES, EMPTY_FILE_DIGEST, FILE_FIXED_BYTES, HEADER_BYTES, NO_OBJECT, OBJECT_BYTES } from './packed-layout.js';
import { PackedPaths } from './packed-paths.js';

const DIGEST = /^[0-9a-f]{64}$/;
/** The digest being looked up, as bytes: one buffer, not one per lookup (a thread runs one lookup at a time). */
const SOUGHT = Buffer.alloc(DIGEST_BYTES);

/** A file as the packed form holds it: its digest the 32 bytes, a view into the packed bytes. */
export interface PackedFile {
  readonly path: string;
  readonly size: number;
  readonly digest: Uint8Array;
  /** Its content's index among the manifest's objects (objectIndex), or undefined for an empty file. */
  readonly object: number | undefined;
}

/**
 * A checked manifest as one run of bytes rather than tens of thousands of objects: what
 * a deploy session keeps between its requests (in the database, handed to the threads
 * that build the release) without each request making a 40,000-entry array and map
 * again, which the service's heap kept long after (docs/performance.md). Little-endian:
 *
 *   files (u32), objects (u32), bytes (f64)
 *   objects x (digest: 32 bytes, size: f64)
 *   files x (object index: u32, NO_OBJECT for an empty file; path length: u32; path: UTF-8)
 *
 * A digest is looked up in a hash table of the objects' indexes made when first needed
 * (a few hundred KB for 40,000 objects): neither sorting 40,000 strings nor a Map of them
 * is needed. Its slots come from every byte of the digest mixed with a seed of this
 * process's own, not from the digest's first bytes: a client names its digests as it
 * likes, and 40,000 that share their first bytes would make every lookup walk them all.
 *
 * Only ever made from a manifest already checked (manifest.ts): it holds no rule of its own.
 */
/**
 * Bytes for a manifest packed in this process, in memory the file-system threads share:
 * posted to one (a redeploy posts its base and its new manifest several times), they are
 * not copied there to wait for that thread's next collection. Nothing writes to a
 * manifest's bytes once packed. V8 does not count shared memory towards a thread's
 * collections, so bytes read from the database, posted once if at all, stay as they are.
 */
export function sharedBytes(length: number): Buffer {
  return Buffer.from(new SharedArrayBuffer(length));
}

export class PackedManifest {
  private table: Uint32Array | undefined;
  /** canonicalDigest's, once asked: a release remembered (ManifestMemory) is named by it at each redeploy from it. */
  private digest: string | undefined;

  private constructor(
    readonly packed: Buffer,
    readonly fileCount: number,
    readonly objectCount: number,
    /** The files' bytes in all, as Manifest.bytes. */
    readonly bytes: number,
  ) {}

  static pack(manifest: Manifest): PackedManifest {
    let length = HEADER_BYTES + manifest.objects.size * OBJECT_BYTES;
    for (const file of manifest.files) length += FILE_FIXED_BYTES + Buffer.byteLength(file.path);
    const packed = sharedBytes(length);
    packed.writeUInt32LE(manifest.files.length, 0);
    packed.writeUInt32LE(manifest.objects.size, 4);
    packed.writeDoubleLE(manifest.bytes, 8);
    let at = HEADER_BYTES;
    for (const [digest, size] of manifest.objects) {
      at += packed.write(digest, at, DIGEST_BYTES, 'hex');
      at = packed.writeDoubleLE(size, at);
    }
    const result = new PackedManifest(packed, manifest.files.length, manifest.objects.size, manifest.bytes);
    for (const file of manifest.files) {
      const index = file.size === 0 ? NO_OBJECT : result.indexOf(file.digest);
      if (index === NO_OBJECT && file.size > 0) throw new Error(`not a checked manifest: ${file.digest} is not among its objects`);
      at = packed.writeUInt32LE(index, at);
      const pathBytes = packed.write(file.path, at + 4, 'utf8');
      at = packed.writeUInt32LE(pathBytes, at) + pathBytes;
    }
    // Made again if a lookup needs it: a manifest kept (ManifestMemory) is counted by its bytes alone.
    result.table = undefined;
    return result;
  }

  /**
   * The packed form read back (from the database, or another thread); a run of bytes of
   * another shape is an error, not a manifest. Whole bytes are kept as they are: shared
   * ones (another thread's) stay shared, and the database's are not copied on each
   * request that reads a session (posted, they are cloned as before). A view into a
   * larger buffer (pg hands small values out of an 8 KiB one) is copied: posted to a
   * thread or kept, it would carry the whole buffer with it.
   */
  static from(bytes: Uint8Array): PackedManifest {
    const malformed = (): Error => new Error('not a packed manifest');
    if (!(bytes instanceof Uint8Array)) throw malformed();
    const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    const packed = whole ? Buffer.from(bytes.buffer, 0, bytes.byteLength) : sharedBytes(bytes.byteLength);
    if (!whole) packed.set(bytes);
    if (packed.length < HEADER_BYTES) throw malformed();
    const fileCount = packed.readUInt32LE(0);
    const objectCount = packed.readUInt32LE(4);
    let at = HEADER_BYTES + objectCount * OBJECT_BYTES;
    for (let i = 0; i < fileCount; i += 1) {
      if (at + FILE_FIXED_BYTES > packed.length) throw malformed();
      const index = packed.readUInt32LE(at);
      if (index !== NO_OBJECT && index >= objectCount) throw malformed();
      at += FILE_FIXED_BYTES + packed.readUInt32LE(at + 4);
    }
    if (at !== packed.length) throw malformed();
    return new PackedManifest(packed, fileCount, objectCount, packed.readDoubleLE(8));
  }

  /** The size the manifest gives the content `digest` (64 lowercase hex digits), if it lists it. */
  sizeOf(digest: string): number | undefined {
    if (!DIGEST.test(digest)) return undefined;
    const index = this.indexOf(digest);
    return index === NO_OBJECT ? undefined : this.packed.readDoubleLE(HEADER_BYTES + index * OBJECT_BYTES + DIGEST_BYTES);
  }

  /** Where the content `digest` is among the objects (0 to objectCount - 1), if the manifest lists it. */
  objectIndex(digest: string): number | undefined {
    if (!DIGEST.test(digest)) return undefined;
    const index = this.indexOf(digest);
    return index === NO_OBJECT ? undefined : index;
  }

  /** The SHA-256 of its canonical form (manifest-digest.ts), worked out once. */
  canonicalDigest(): string {
    this.digest ??= new PackedPaths(this).canonicalDigest();
    return this.digest;
  }

  /** canonicalDigest's if it is known already, without working it out. */
  knownDigest(): string | undefined {
    return this.digest;
  }

  /**
   * Its canonical digest as another thread worked it out from these same bytes, so that
   * `canonicalDigest` need not; ignored if it is not one, or once it is known here.
   */
  knowDigest(digest: string): void {
    if (DIGEST.test(digest)) this.digest ??= digest;
  }

  /** The bytes of its distinct contents: what a session's uploads may add up to at most. */
  objectBytes(): number {
    let bytes = 0;
    for (let at = HEADER_BYTES + DIGEST_BYTES, i = 0; i < this.objectCount; i += 1, at += OBJECT_BYTES) bytes += this.packed.readDoubleLE(at);
    return bytes;
  }

  /** Every distinct non-empty content with its size, as Manifest.objects. */
  *objects(): Generator<[Digest, number]> {
    for (let at = HEADER_BYTES, i = 0; i < this.objectCount; i += 1, at += OBJECT_BYTES) {
      yield [this.packed.toString('hex', at, at + DIGEST_BYTES) as Digest, this.packed.readDoubleLE(at + DIGEST_BYTES)];
    }
  }

  /** The files in the manifest's order, one at a time: nothing but the file in hand is made. */
  *files(): Generator<PackedFile> {
    for (const { path, object } of this.entries()) {
      if (object === undefined) yield { path, size: 0, digest: EMPTY_FILE_DIGEST, object: undefined };
      else {
        const index = (object - HEADER_BYTES) / OBJECT_BYTES;
        yield { path, size: this.packed.readDoubleLE(object + DIGEST_BYTES), digest: this.packed.subarray(object, object + DIGEST_BYTES), object: index };
      }
    }
  }

  /** The manifest as objects again, for the few steps that need the whole of it at once. */
  manifest(): Manifest {
    return { files: this.manifestFiles(), objects: new Map(this.objects()), bytes: this.bytes };
  }

  /** Its files as objects again, in order. */
  manifestFiles(): ManifestFile[] {
    const files: ManifestFile[] = [];
    for (const { path, object } of this.entries()) {
      if (object === undefined) files.push({ path, size: 0, digest: EMPTY_DIGEST });
      else files.push({ path, size: this.packed.readDoubleLE(object + DIGEST_BYTES), digest: this.packed.toString('hex', object, object + DIGEST_BYTES) as Digest });
    }
    return files;
  }

  /** Each file's path and where its object's record starts (undefined for an empty file). */
  private *entries(): Generator<{ path: string; object: number | undefined }> {
    let at = HEADER_BYTES + this.objectCount * OBJECT_BYTES;
    for (let i = 0; i < this.fileCount; i += 1) {
      const index = this.packed.readUInt32LE(at);
      const pathBytes = this.packed.readUInt32LE(at + 4);
      const path = this.packed.toString('utf8', at + FILE_FIXED_BYTES, at + FILE_FIXED_BYTES + pathBytes);
      at += FILE_FIXED_BYTES + pathBytes;
      yield { path, object: index === NO_OBJECT ? undefined : HEADER_BYTES + index * OBJECT_BYTES };
    }
  }

  /** The index of the object `digest` (64 lowercase hex digits) in the table; NO_OBJECT if absent. */
  private indexOf(digest: string): number {
    SOUGHT.write(digest, 0, DIGEST_BYTES, 'hex');
    const table = (this.table ??= this.hashTable());
    const mask = table.length - 1;
    for (let slot = digestSlot(SOUGHT, 0) & mask; ; slot = (slot + 1) & mask) {
      const entry = table[slot]!;
      if (entry === 0) return NO_OBJECT;
      if (this.isAt(entry - 1, SOUGHT)) return entry - 1;
    }
  }

  /** Open addressing, at most half full: each slot holds an object's index plus one, 0 when empty. */
  private hashTable(): Uint32Array {
    let slots = 2;
    while (slots < this.objectCount * 2) slots *= 2;
    const table = new Uint32Array(slots);
    const mask = slots - 1;
    for (let index = 0; index < this.objectCount; index += 1) {
      let slot = digestSlot(this.packed, HEADER_BYTES + index * OBJECT_BYTES) & mask;
      while (table[slot] !== 0) slot = (slot + 1) & mask;
      table[slot] = index + 1;
    }
    return table;
  }

  // Byte by byte, not Buffer.compare: digests that differ nearly always do so in their
  // first byte or two, and a call into C++ per probe cost more than the whole comparison.
  private isAt(index: number, digest: Uint8Array): boolean {
    const at = HEADER_BYTES + index * OBJECT_BYTES;
    for (let i = 0; i < DIGEST_BYTES; i += 1) if (this.packed[at + i] !== digest[i]) return false;
    return true;
  }
}

/** Unknown outside this process: which digests share a slot cannot be worked out beforehand. */
const SEED = crypto.getRandomValues(new Uint32Array(DIGEST_BYTES / 4)).map((word) => word | 1);

/** A digest's 32 bytes at `at` mixed into 32 bits, each word by multiplication with its own odd seed. */
export function digestSlot(bytes: Buffer, at: number): number {
  let hash = 0;
  for (let word = 0; word < SEED.length; word += 1) {
    hash = Math.imul(hash ^ bytes.readUInt32LE(at + word * 4), SEED[word]!);
    hash ^= hash >>> 16;
  }
  return hash >>> 0;
}
