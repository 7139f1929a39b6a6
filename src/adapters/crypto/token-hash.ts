import { createHash, timingSafeEqual } from 'node:crypto';

/** Stored in place of a token: a stolen database must not hand out working tokens. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Compares digests of equal length, so the time taken says nothing about the secret. */
export function tokensEqual(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}
