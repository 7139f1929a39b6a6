import type { ProjectName } from './project-name.js';
import type { Username } from './username.js';

/** `<public_base>/<username>/<project>/`, with one slash however the base ends. */
export function siteUrl(publicBase: string, user: Username, project: ProjectName): string {
  return `${publicBase.replace(/\/+$/, '')}/${user}/${project}/`;
}
