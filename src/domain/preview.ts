import { InvalidPreviewName } from './errors.js';
import type { ProjectName } from './project-name.js';
import type { ReleaseId } from './release-id.js';
import { isResourceName } from './resource-name.js';
import type { Username } from './username.js';

/**
 * A preview is a release of a project served at its own address, not the live one
 * (a pull request's build, say). Its name has the username pattern: `pr-42`.
 */
export type PreviewName = string & { readonly __brand: 'PreviewName' };

export const PreviewName = {
  parse(value: string): PreviewName {
    if (!isResourceName(value)) throw new InvalidPreviewName();
    return value as PreviewName;
  },
};

export interface Preview {
  readonly name: PreviewName;
  readonly release: ReleaseId;
  /** When its link was last made: its last deploy. */
  readonly linkedAt: Date;
}

/** A preview lives PREVIEW_TTL_SECONDS after its last deploy. */
export function previewExpiry(preview: Preview, ttlSeconds: number): Date {
  return new Date(preview.linkedAt.getTime() + ttlSeconds * 1000);
}

export function isPreviewExpired(preview: Preview, ttlSeconds: number, now: Date): boolean {
  return now.getTime() >= previewExpiry(preview, ttlSeconds).getTime();
}

/**
 * At most `max` previews per project: a deploy to an existing preview replaces it and
 * is always allowed, a new one only below the limit.
 */
export function mayAddPreview(existing: readonly PreviewName[], name: PreviewName, max: number): boolean {
  return existing.includes(name) || existing.length < max;
}

/** `<preview_base>/<username>/<project>/<preview>/`, with one slash however the base ends. */
export function previewUrl(previewBase: string, user: Username, project: ProjectName, name: PreviewName): string {
  return `${previewBase.replace(/\/+$/, '')}/${user}/${project}/${name}/`;
}
