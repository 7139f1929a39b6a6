import type { ManifestBase } from './manifest.js';
import { PackedManifest } from './packed-manifest.js';
import type { PreviewName } from './preview.js';
import type { ProjectName } from './project-name.js';
import type { Username } from './username.js';

/**
 * An incremental deploy's session lives DEPLOY_SESSION_SECONDS after its last use
 * (opening it, asking what is missing, an upload), so a long upload of many batches
 * never expires under its client, and one abandoned goes within that time.
 */
export function sessionExpiry(lastUse: Date, ttlSeconds: number): Date {
  return new Date(lastUse.getTime() + ttlSeconds * 1000);
}

export function isSessionExpired(expiresAt: Date, now: Date): boolean {
  return now.getTime() >= expiresAt.getTime();
}

/** A session's last use, read back from its expiry (the inverse of `sessionExpiry` for the same ttl). */
export function sessionLastUse(expiresAt: Date, ttlSeconds: number): Date {
  return new Date(expiresAt.getTime() - ttlSeconds * 1000);
}

/** Who opened a session: the user's own token (no key), or one of the user's deploy keys. */
export interface SessionSigner {
  readonly user: Username;
  readonly keyId: string | undefined;
}

/** What a session deploys, and who opened it. */
export interface SessionTarget extends SessionSigner {
  readonly project: ProjectName;
  readonly preview: PreviewName | undefined;
}

/**
 * Who may use a session once it is open: the user's own token any of the user's; a
 * deploy key (`keyId`) only those it opened. What a session draws on goes by who opened
 * it (objectScope): a key on its owner's session would draw on the owner's whole store.
 */
export function mayUseSession(keyId: string | undefined, session: SessionSigner): boolean {
  return keyId === undefined || keyId === session.keyId;
}

/**
 * DEPLOY_SESSIONS_MAX is each signer's own: the user's token has that many, and each
 * deploy key as many of its own. A key is a CI secret: it can use up only its own
 * allowance, never its owner's deploys nor another key's.
 */
export function sameSigner(a: SessionSigner, b: SessionSigner): boolean {
  return a.user === b.user && a.keyId === b.keyId;
}

/**
 * A session unused this long is taken for a deploy cut off in flight (a cancelled CI job,
 * a killed runner): one in use makes a request at least every upload batch.
 */
export const SUPERSEDE_AFTER_IDLE_SECONDS = 60;

/**
 * A new session supersedes an older one of the same signer, project and preview once the
 * older has been idle SUPERSEDE_AFTER_IDLE_SECONDS: the new one deploys the same target in
 * its place, so a cut-off pipeline never holds a place the next one needs. One in use, or
 * anyone else's, is left alone.
 */
export function supersedes(newer: SessionTarget, older: SessionTarget & { readonly expiresAt: Date }, now: Date, ttlSeconds: number): boolean {
  const idleMs = now.getTime() - sessionLastUse(older.expiresAt, ttlSeconds).getTime();
  return sameSigner(newer, older) && newer.project === older.project && newer.preview === older.preview && idleMs >= SUPERSEDE_AFTER_IDLE_SECONDS * 1000;
}

/** The one project whose content a deploy key's session may draw on (objectScope). */
export interface ProjectScope {
  readonly project: ProjectName;
}

/**
 * What a session's objects may come from besides what it uploaded itself. The user's own
 * token: the user's whole store (undefined). A deploy key covers one project, so its
 * session draws only on that project's content: the files of its releases (live, older,
 * previews') and what that key's sessions uploaded. Anything else is missing, at the
 * open, at every later answer and at the publish, and must be uploaded: a key never
 * learns, nor copies, what the owner's other projects hold.
 */
export function objectScope(keyId: string | undefined, project: ProjectName): ProjectScope | undefined {
  return keyId === undefined ? undefined : { project };
}

/**
 * What a session holds of its manifest: the manifest, packed; or, while it is exactly the
 * files of the release it was opened on (nothing changed yet), that release by name and
 * digest, its files found again on disk at each use. A redeploy opens on its base before
 * the client has read its folder: the base's whole manifest copied into the database
 * there, and read back at each request, would be work for nothing.
 */
export type HeldManifest = PackedManifest | ManifestBase;

/** Whether a session holds its base by name rather than a manifest packed. */
export function holdsBase(held: HeldManifest): held is ManifestBase {
  return !(held instanceof PackedManifest);
}
