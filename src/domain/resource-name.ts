/** The spec's shared pattern for usernames and project names (1 to 64 characters). */
export const RESOURCE_NAME_PATTERN = /^[a-z0-9]([a-z0-9_-]{0,62}[a-z0-9])?$/;

export function isResourceName(value: string): boolean {
  return RESOURCE_NAME_PATTERN.test(value);
}
