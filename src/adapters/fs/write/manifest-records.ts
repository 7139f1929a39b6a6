import { createHash, type Hash } from 'node:crypto';
import { closeSync, lstatSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { originOf } from '../layout/directory-origin.js';
import { encodeKeptHead, RECORD_BYTES_MAX, RECORDS_FORMAT, RECORDS_HEAD_BYTES, WRITTEN_RECORDS, writeRecord } from '../store/kept-manifest-file.js';

/** Records held before they are written: a few writes for a 40,000-file site, never its whole manifest in memory. */
const PENDING_BYTES = 64 * 1024;

/**
 * A tarball's files as its writer puts them in place (path, digest, size), written as
 * records beside the staging area (kept-manifest-file.ts), so that the release it
 * becomes is a redeploy's base without a walk of its files. The head, which names the
 * staging area's origin (the release's, renamed) and the records' checksum, is written
 * last over the room left for it: records without one are no manifest.
 */
export class ManifestRecords {
  /** Undefined once finished or given up: a failure here costs a walk, never the deploy. */
  private fd: number | undefined;
  private readonly origin: string;
  private readonly sha256: Hash = createHash('sha256');
  /** Records not written yet, up to PENDING_BYTES. */
  private readonly pending = Buffer.allocUnsafe(PENDING_BYTES + RECORD_BYTES_MAX);
  private pendingBytes = 0;
  private at = RECORDS_HEAD_BYTES;

  private constructor(
    private readonly path: string,
    origin: string,
    fd: number,
  ) {
    this.origin = origin;
    this.fd = fd;
  }

  /** Records of the staging area `root`, in `fresh`, its own directory beside it; undefined if they cannot be made there (a walk then stands in). */
  static open(root: string, fresh: string): ManifestRecords | undefined {
    const path = `${fresh}/${WRITTEN_RECORDS}`;
    try {
      const origin = originOf(lstatSync(root, { bigint: true }));
      return new ManifestRecords(path, origin, openSync(path, 'wx', 0o600));
    } catch {
      return undefined;
    }
  }

  add(path: string, digest: Uint8Array, size: number): void {
    if (this.fd === undefined) return;
    this.pendingBytes = writeRecord(this.pending, this.pendingBytes, path, digest, size);
    if (this.pendingBytes >= PENDING_BYTES) this.attempt(() => this.write());
  }

  /** Writes what is left and the head, and closes the file. */
  finish(): void {
    this.attempt(() => {
      this.write();
      writeAt(this.fd!, encodeKeptHead({ format: RECORDS_FORMAT, origin: this.origin, sha256: this.sha256.digest('hex') }), 0);
      const fd = this.fd!;
      this.fd = undefined;
      closeSync(fd);
    });
  }

  /**
   * Closes the file, if it is open, left without a head: the writer failed the job, whose
   * directory goes with it. (A job the unpack thread refuses is finished as any other,
   * and its records go with its staging area.)
   */
  abandon(): void {
    const fd = this.fd;
    this.fd = undefined;
    try {
      if (fd !== undefined) closeSync(fd);
    } catch {
      // A close can report a write's failure (NFS): the records are no good, the deploy is.
    }
  }

  private attempt(work: () => void): void {
    if (this.fd === undefined) return;
    try {
      work();
    } catch {
      // The disk full, say: the deploy goes on, and its release is walked when it is a base.
      // Removed, so that the commit does not put a headless file over a good one.
      this.abandon();
      try {
        unlinkSync(this.path);
      } catch {
        // Then the commit moves a file without a head, which no reader takes for a manifest.
      }
    }
  }

  private write(): void {
    const bytes = this.pending.subarray(0, this.pendingBytes);
    this.sha256.update(bytes);
    writeAt(this.fd!, bytes, this.at);
    this.at += bytes.length;
    this.pendingBytes = 0;
  }
}

function writeAt(fd: number, data: Uint8Array, position: number): void {
  for (let offset = 0; offset < data.length; ) offset += writeSync(fd, data, offset, data.length - offset, position + offset);
}
