import type { ServiceIdentifier } from 'inversify';
import type { Preview, PreviewName } from '../../domain/preview.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { ReleaseId } from '../../domain/release-id.js';
import type { Username } from '../../domain/username.js';

/** The previews' links: `<previews_root>/<user>/<project>/<preview>`, each to a release. */
export interface PreviewLinks {
  /** Creates the preview's link to release `id`, or swaps an existing one, atomically. */
  link(user: Username, project: ProjectName, name: PreviewName, id: ReleaseId): Promise<void>;
  /** The project's previews, by name. */
  list(user: Username, project: ProjectName): Promise<Preview[]>;
  /** False when there was no such preview. */
  unlink(user: Username, project: ProjectName, name: PreviewName): Promise<boolean>;
  removeProject(user: Username, project: ProjectName): Promise<void>;
  removeUser(user: Username): Promise<void>;
  /** Every user's projects that have previews, for the expiry sweep. */
  projectsWithPreviews(): Promise<{ user: Username; project: ProjectName }[]>;
  /** Removes temporary links a crash left; returns what it removed. */
  removeLeftovers(): Promise<string[]>;
}

export const PREVIEW_LINKS = Symbol.for('sitedrop.PreviewLinks') as ServiceIdentifier<PreviewLinks>;
