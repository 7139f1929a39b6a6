import { InvalidRequestBody } from './http-errors.js';

/** A JSON body that must be an object; anything else is not a valid request. */
export function jsonObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidRequestBody();
  return body as Record<string, unknown>;
}

/** A field that, when present, must be a string. */
export function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new InvalidRequestBody();
  return value;
}

/** An optional JSON object with an optional string `release` (a rollback's target, a promote's reviewed release). */
export function releaseOf(body: unknown): string | undefined {
  return body === undefined ? undefined : optionalString(jsonObject(body), 'release');
}
