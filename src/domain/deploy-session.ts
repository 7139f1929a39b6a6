import type { ProjectName } from './project-name.js';

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
 * learns, nor copies, what the owner's other projects hold (issue 26, point 5).
 */
export function objectScope(keyId: string | undefined, project: ProjectName): ProjectScope | undefined {
  return keyId === undefined ? undefined : { project };
}
