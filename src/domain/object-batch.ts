import { shownName, type ArchiveLimits, type EntryKind } from './archive-policy.js';
import { ArchiveRejected } from './errors.js';
import { isDigest, type Digest } from './manifest.js';
import { PackedManifest } from './packed-manifest.js';

/**
 * The limits of an incremental deploy's batch of objects: no more entries than the
 * objects it may upload (uploadableObjects), no more bytes than they hold between them.
 */
export function batchLimits(manifest: PackedManifest): ArchiveLimits {
  return { maxFiles: manifest.objectCount, maxBytes: manifest.objectBytes() };
}

/**
 * The objects a session may upload: those no probe found when its manifest was checked
 * (DeploySession.unconfirmed, which grows by any found missing since), at the manifest's
 * sizes; its whole manifest's where those are not known. Its batches may hold these and
 * no other, so their bytes bound what the session can leave on the host, and are what
 * the user's quota holds it to (assertUploadsFit).
 */
export function uploadableObjects(manifest: PackedManifest, unconfirmed: readonly Digest[] | undefined): PackedManifest {
  if (unconfirmed === undefined) return manifest;
  const objects = new Map<Digest, number>();
  for (const digest of unconfirmed) {
    const size = manifest.sizeOf(digest);
    if (size !== undefined) objects.set(digest, size);
  }
  return PackedManifest.pack({ files: [], objects, bytes: 0 });
}

/** The objects a session's batches may hold, by digest (uploadableObjects). */
export interface ExpectedObjects {
  /** The size the manifest gives the content `digest`, if it lists it. */
  sizeOf(digest: string): number | undefined;
}

/**
 * A batch of objects is a tar archive with stricter rules: every entry a file at its
 * root, named by a digest the session asked for, of the manifest's size for it. Checked
 * on each entry's header, before its bytes are read.
 */
export function assertExpectedObject(expected: ExpectedObjects, kind: EntryKind, path: string, size: number): void {
  if (kind !== 'file' || !isDigest(path)) throw new ArchiveRejected(`not an object (a file named by its SHA-256 at the archive's root): ${shownName(path)}`);
  const wanted = expected.sizeOf(path);
  if (wanted === undefined) throw new ArchiveRejected(`not an object this deploy is missing: ${path}`);
  if (size !== wanted) throw new ArchiveRejected(`object is ${size} bytes, the manifest says ${wanted}: ${path}`);
}

/** An object's bytes must hash to its name: anything else is another file, or a lie. */
export function assertObjectBytes(name: string, digest: string): void {
  if (digest !== name) throw new ArchiveRejected(`object's bytes do not match its name (their SHA-256 is ${digest}): ${name}`);
}
