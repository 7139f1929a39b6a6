import { BaseReleaseChanged } from '../domain/errors.js';
import { parseManifestBase, type Digest, type ManifestBase, type ManifestReader } from '../domain/manifest.js';
import { uploadableObjects } from '../domain/object-batch.js';
import { applyPackedChanges } from '../domain/packed-changes.js';
import type { ArchiveLimits } from '../domain/archive-policy.js';
import type { HeldManifest } from '../domain/deploy-session.js';
import { PackedManifest } from '../domain/packed-manifest.js';
import type { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import type { DeploySessions, SessionHolding } from './ports/deploy-sessions.js';
import type { ReleaseStore } from './ports/release-store.js';
import type { SessionObjects } from './ports/session-objects.js';

/** A session's manifest, packed, the contents of it to look for in the store, and what the session holds of it. */
export interface SessionManifest {
  readonly packed: PackedManifest;
  readonly sought: ReadonlyMap<Digest, number>;
  /** The base alone when the manifest is exactly its files (HeldManifest). */
  readonly held: HeldManifest;
}

/**
 * What a session is opened (or revised) with: the manifest as it came, or, relative to
 * `base` (as the client sent it), that release's files as they are on disk with the
 * changes applied, and only if they are the files the client says they are. Only this
 * user's own release of this project: the store is per user, the release directory per
 * project, so another's release is simply not found. The base is kept packed, named by its
 * digest worked out once, and met every rule when it was published: with nothing changed
 * it is the session's manifest as it is, and changes are checked against the files it
 * keeps (applyPackedChanges), never made into 40,000 objects and checked whole again.
 *
 * Sought: the base's own contents are in the store (the release links them), so a
 * content the base holds at the size the manifest gives is not looked for; one lost
 * meanwhile is what the publish finds missing, as for any deploy. Any other size is
 * looked up, and refused as the lie it is: the base's file of that content may be among
 * those removed.
 */
export async function sessionManifest(releases: ReleaseStore, user: Username, project: ProjectName, reader: ManifestReader, base: unknown, limits: ArchiveLimits): Promise<SessionManifest> {
  if (base === undefined) {
    const manifest = reader.whole();
    const packed = PackedManifest.pack(manifest);
    return { packed, sought: manifest.objects, held: packed };
  }
  const parsed = parseManifestBase(base);
  // Every check that needs no disk first: a malformed request never costs a walk of the base.
  const changes = reader.changes();
  const packed = await baseManifest(releases, user, project, parsed);
  if (changes.files.length === 0 && changes.removed.length === 0) return { packed, sought: new Map(), held: parsed };
  const sought = new Map<Digest, number>();
  for (const file of changes.files) if (file.size > 0 && packed.sizeOf(file.digest) !== file.size) sought.set(file.digest, file.size);
  const changed = applyPackedChanges(packed, changes, limits);
  return { packed: changed, sought, held: changed };
}

/**
 * The files of the user's release `base.release` of the project as they are on disk,
 * packed, if they are still the files `base.digest` names; BaseReleaseChanged if the
 * release is gone (pruned, deleted) or they are not.
 */
export async function baseManifest(releases: ReleaseStore, user: Username, project: ProjectName, base: ManifestBase): Promise<PackedManifest> {
  const packed = await releases.releasePackedManifest(user, project, base.release);
  if (packed === undefined || packed.canonicalDigest() !== base.digest) throw new BaseReleaseChanged();
  return packed;
}

/**
 * Of `missing`, what the key's `earlier` sessions did not upload: what they did is the
 * key's own, and is kept with session `id` too, whatever becomes of them. Shared, they
 * are uploads as a batch's are: the session is marked first (beginUploads), so that no
 * revision replaces the holding (`version`, as this request wrote it) they were counted
 * in; one that did meanwhile gets nothing shared.
 */
export async function notUploadedBefore(
  objects: SessionObjects,
  sessions: DeploySessions,
  earlier: readonly string[],
  { id, version }: { readonly id: string; readonly version: number },
  missing: Digest[],
  manifest: PackedManifest,
): Promise<Digest[]> {
  if (earlier.length === 0 || missing.length === 0) return missing;
  // Only those with uploads: a session with none to share from stays open to revision.
  const uploaded = new Set(await objects.sessionsWithUploads());
  const from = earlier.filter((other) => uploaded.has(other));
  if (from.length === 0 || (await sessions.beginUploads(id)) !== version) return missing;
  const shared = new Set(await objects.shareUploads(from, id, new Map(missing.map((digest) => [digest, manifest.sizeOf(digest)!]))));
  return missing.filter((digest) => !shared.has(digest));
}

/**
 * What a session holds once `unconfirmed` are among what it may upload: `manifest`, held
 * as `held`, and the bytes of those objects, which the user's quota counts for it. Worked
 * out here alone, for an open, a revision and objects found missing since.
 */
export function sessionHolding(manifest: PackedManifest, held: HeldManifest, unconfirmed: readonly Digest[]): SessionHolding {
  return { manifest: held, unconfirmed, uploadBytes: uploadableObjects(manifest, unconfirmed).objectBytes() };
}
