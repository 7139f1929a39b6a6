import { copyBytes, DIGEST_BYTES, FILE_FIXED_BYTES, HEADER_BYTES, NO_OBJECT, OBJECT_BYTES } from './packed-layout.js';
import { digestSlot, PackedManifest } from './packed-manifest.js';

/** Bytes of a piece of the files' records: a record (at most 8 + 1,024 bytes) never spans two. */
const PIECE_BYTES = 256 * 1024;
/** Objects a piece of the objects' records holds. */
const PIECE_OBJECTS = Math.floor(PIECE_BYTES / OBJECT_BYTES);

/**
 * A packed manifest made a file at a time, as an archive's files are unpacked: so the
 * release a tarball made is remembered as one an assembly made is (ManifestMemory), and
 * the first redeploy from it need not walk its 40,000 files (docs/performance.md).
 * Byte for byte what `PackedManifest.pack(manifestOf(files))` makes of the same files in
 * the same order. Its records grow in pieces, not by doubling one buffer, so a docs site's
 * 3.7 MB costs that much until the end, and once more for the moment of `build`.
 *
 * Only for files an archive's ledger has checked: distinct paths, each content hashed.
 */
export class PackedManifestBuilder {
  private readonly filePieces: { readonly bytes: Buffer; used: number }[] = [];
  private readonly objectPieces: Buffer[] = [];
  private objectCount = 0;
  private fileCount = 0;
  private bytes = 0;
  /** Open addressing, at most half full: each slot holds an object's index plus one. */
  private table = new Uint32Array(1024);

  /** The next file: its path, its size, and the SHA-256 of its bytes (an empty file's is not kept). */
  add(path: string, size: number, digest: Buffer): void {
    const object = size === 0 ? NO_OBJECT : this.objectFor(digest, size);
    const needed = FILE_FIXED_BYTES + Buffer.byteLength(path);
    let piece = this.filePieces.at(-1);
    if (!piece || piece.used + needed > piece.bytes.length) {
      piece = { bytes: Buffer.allocUnsafe(Math.max(PIECE_BYTES, needed)), used: 0 };
      this.filePieces.push(piece);
    }
    piece.bytes.writeUInt32LE(object, piece.used);
    const pathBytes = piece.bytes.write(path, piece.used + FILE_FIXED_BYTES, 'utf8');
    piece.bytes.writeUInt32LE(pathBytes, piece.used + 4);
    piece.used += FILE_FIXED_BYTES + pathBytes;
    this.fileCount += 1;
    this.bytes += size;
  }

  build(): PackedManifest {
    let length = HEADER_BYTES + this.objectCount * OBJECT_BYTES;
    for (const piece of this.filePieces) length += piece.used;
    const packed = Buffer.allocUnsafeSlow(length);
    packed.writeUInt32LE(this.fileCount, 0);
    packed.writeUInt32LE(this.objectCount, 4);
    packed.writeDoubleLE(this.bytes, 8);
    let at = HEADER_BYTES;
    this.objectPieces.forEach((piece, n) => {
      const used = Math.min(PIECE_OBJECTS, this.objectCount - n * PIECE_OBJECTS) * OBJECT_BYTES;
      packed.set(piece.subarray(0, used), at);
      at += used;
    });
    for (const piece of this.filePieces) {
      packed.set(piece.bytes.subarray(0, piece.used), at);
      at += piece.used;
    }
    return PackedManifest.from(packed);
  }

  /** The index of the content `digest`, numbered as first met. */
  private objectFor(digest: Buffer, size: number): number {
    const mask = this.table.length - 1;
    let slot = digestSlot(digest, 0) & mask;
    for (; this.table[slot] !== 0; slot = (slot + 1) & mask) {
      if (this.isAt(this.table[slot]! - 1, digest)) return this.table[slot]! - 1;
    }
    const index = this.objectCount;
    if (index % PIECE_OBJECTS === 0) this.objectPieces.push(Buffer.allocUnsafe(PIECE_OBJECTS * OBJECT_BYTES));
    const piece = this.objectPieces.at(-1)!;
    const at = (index % PIECE_OBJECTS) * OBJECT_BYTES;
    copyBytes(digest, 0, DIGEST_BYTES, piece, at);
    piece.writeDoubleLE(size, at + DIGEST_BYTES);
    this.objectCount += 1;
    this.table[slot] = index + 1;
    if (this.objectCount * 2 > this.table.length) this.growTable();
    return index;
  }

  private isAt(index: number, digest: Uint8Array): boolean {
    const piece = this.objectPieces[Math.floor(index / PIECE_OBJECTS)]!;
    const at = (index % PIECE_OBJECTS) * OBJECT_BYTES;
    for (let i = 0; i < DIGEST_BYTES; i += 1) if (piece[at + i] !== digest[i]) return false;
    return true;
  }

  private growTable(): void {
    const table = new Uint32Array(this.table.length * 2);
    const mask = table.length - 1;
    for (let index = 0; index < this.objectCount; index += 1) {
      const piece = this.objectPieces[Math.floor(index / PIECE_OBJECTS)]!;
      let slot = digestSlot(piece, (index % PIECE_OBJECTS) * OBJECT_BYTES) & mask;
      while (table[slot] !== 0) slot = (slot + 1) & mask;
      table[slot] = index + 1;
    }
    this.table = table;
  }
}
