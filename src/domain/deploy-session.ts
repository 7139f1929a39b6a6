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
