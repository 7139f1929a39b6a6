import { shownName, type ArchiveLimits, type EntryKind } from './archive-policy.js';
import { ArchiveRejected } from './errors.js';
import { isDigest } from './manifest.js';
import type { PackedManifest } from './packed-manifest.js';

/**
 * The limits of an incremental deploy's batch of objects: no more entries than the
 * manifest has objects, no more bytes than they hold between them.
 */
export function batchLimits(manifest: PackedManifest): ArchiveLimits {
  return { maxFiles: manifest.objectCount, maxBytes: manifest.objectBytes() };
}

/** The objects a session's batches may hold: a manifest's, by digest (packed-manifest.ts). */
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
  if (wanted === undefined) throw new ArchiveRejected(`not an object of this deploy's manifest: ${path}`);
  if (size !== wanted) throw new ArchiveRejected(`object is ${size} bytes, the manifest says ${wanted}: ${path}`);
}

/** An object's bytes must hash to its name: anything else is another file, or a lie. */
export function assertObjectBytes(name: string, digest: string): void {
  if (digest !== name) throw new ArchiveRejected(`object's bytes do not match its name (their SHA-256 is ${digest}): ${name}`);
}
