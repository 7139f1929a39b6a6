import type { Readable } from 'node:stream';
import { packTar } from './tar-packer.js';

/** An object the server lacks: its digest, its size, and one path in the folder holding those bytes. */
export interface MissingObject {
  readonly digest: string;
  readonly size: number;
  readonly path: string;
}

/**
 * One request's worth: small enough that a failed request costs little to resend and
 * stays far below MAX_UPLOAD_BYTES (100 MB by default), large enough that the server's
 * fixed cost per batch (a flush to disk) is paid a few times, not dozens: more than half
 * of a site missing goes as a tarball instead, so 40,000 files are at most two requests.
 */
export const BATCH_LIMITS = { bytes: 32 * 1024 * 1024, files: 10_000 };

/** Objects in upload order, cut into batches; one larger than a batch travels alone. */
export function batchObjects(objects: readonly MissingObject[], limits = BATCH_LIMITS): MissingObject[][] {
  const batches: MissingObject[][] = [];
  let current: MissingObject[] = [];
  let bytes = 0;
  for (const object of objects) {
    if (current.length === limits.files || (current.length > 0 && bytes + object.size > limits.bytes)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(object);
    bytes += object.size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/**
 * A batch as the protocol's PUT wants it, a gzip-compressed tar of the objects named by
 * digest at its root, each checked against the digest it was hashed to, produced as it
 * is read (tar-packer.ts). `onBytes` hears the file bytes packed so far.
 */
export function packObjects(root: string, batch: readonly MissingObject[], onBytes: (packed: number) => void = () => undefined): Readable {
  return packTar(root, [], batch.map((object) => ({ name: object.digest, path: object.path, hashed: object })), onBytes);
}
