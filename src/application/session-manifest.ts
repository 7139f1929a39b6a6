import { BaseReleaseChanged } from '../domain/errors.js';
import { applyManifestChanges, parseManifestBase, type Digest, type Manifest, type ManifestReader } from '../domain/manifest.js';
import type { ArchiveLimits } from '../domain/archive-policy.js';
import { PackedManifest } from '../domain/packed-manifest.js';
import type { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import type { ReleaseStore } from './ports/release-store.js';
import type { SessionObjects } from './ports/session-objects.js';

/** A session's manifest made whole, and the contents its base holds (digest to size), if it had one. */
export interface WholeManifest {
  readonly manifest: Manifest;
  readonly inBase?: ReadonlyMap<Digest, number>;
}

/** A session's manifest, packed, and the contents of it to look for in the store (soughtObjects). */
export interface SessionManifest {
  readonly packed: PackedManifest;
  readonly sought: ReadonlyMap<Digest, number>;
}

/**
 * What a session is opened with. Relative to a base with nothing changed (a client opening
 * on its base before it reads its folder), the base's own manifest as it is kept, not made
 * whole and checked again: it is a release of the project, checked when it was published,
 * and every content of it is in the store (the release links it), so none is looked for.
 * Otherwise the manifest made whole (wholeManifest) and packed.
 */
export async function sessionManifest(releases: ReleaseStore, user: Username, project: ProjectName, reader: ManifestReader, base: unknown, limits: ArchiveLimits): Promise<SessionManifest> {
  if (base !== undefined) {
    const parsed = parseManifestBase(base);
    const changes = reader.changes();
    if (changes.files.length === 0 && changes.removed.length === 0) {
      const packed = await releases.releasePackedManifest(user, project, parsed.release);
      if (packed === undefined || packed.canonicalDigest() !== parsed.digest) throw new BaseReleaseChanged();
      return { packed, sought: new Map() };
    }
  }
  const whole = await wholeManifest(releases, user, project, reader, base, limits);
  return { packed: PackedManifest.pack(whole.manifest), sought: soughtObjects(whole) };
}

/**
 * The manifest a request sent, made whole: as it is, or, relative to `base` (as the client
 * sent it), from that release's files as they are on disk, and only if they are the files
 * the client says they are. Only this user's own release of this project: the store is per
 * user, the release directory per project, so another's release is simply not found.
 */
async function wholeManifest(releases: ReleaseStore, user: Username, project: ProjectName, reader: ManifestReader, base: unknown, limits: ArchiveLimits): Promise<WholeManifest> {
  if (base === undefined) return { manifest: reader.whole() };
  const parsed = parseManifestBase(base);
  // Every check that needs no disk first: a malformed request never costs a walk of the base.
  const changes = reader.changes();
  const packed = await releases.releasePackedManifest(user, project, parsed.release);
  // The digest is the packed manifest's own, worked out once: the open on the base alone did.
  if (packed === undefined || packed.canonicalDigest() !== parsed.digest) throw new BaseReleaseChanged();
  const files = packed.manifestFiles();
  return { manifest: applyManifestChanges(files, changes, limits), inBase: new Map(files.map((file) => [file.digest, file.size])) };
}

/**
 * The contents to look for in the store. The base's own files are in the store (the
 * release links them), so a content the base holds at the size the manifest gives is not
 * looked for; one lost meanwhile is what the publish finds missing, as for any deploy. Any
 * other size is looked up, and refused as the lie it is: the base's file of that content
 * may be among those removed.
 */
function soughtObjects({ manifest, inBase }: WholeManifest): ReadonlyMap<Digest, number> {
  return inBase === undefined ? manifest.objects : new Map([...manifest.objects].filter(([digest, size]) => inBase.get(digest) !== size));
}

/**
 * Of `missing`, what the key's `earlier` sessions did not upload: what they did is the
 * key's own, and is kept with session `id` too, whatever becomes of them.
 */
export async function notUploadedBefore(objects: SessionObjects, earlier: readonly string[], id: string, missing: Digest[], manifest: PackedManifest): Promise<Digest[]> {
  if (earlier.length === 0 || missing.length === 0) return missing;
  const shared = new Set(await objects.shareUploads(earlier, id, new Map(missing.map((digest) => [digest, manifest.sizeOf(digest)!]))));
  return missing.filter((digest) => !shared.has(digest));
}
