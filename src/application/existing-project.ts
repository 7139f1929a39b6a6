import { ProjectNotFound } from '../domain/errors.js';
import type { ProjectName } from '../domain/project-name.js';
import type { ReleaseId } from '../domain/release-id.js';
import type { Username } from '../domain/username.js';
import type { ReleaseStore } from './ports/release-store.js';

/** A project's releases and live release; a project with neither does not exist. */
export async function existingProject(
  releases: ReleaseStore,
  user: Username,
  project: ProjectName,
): Promise<{ ids: ReleaseId[]; live: ReleaseId | undefined }> {
  const [ids, live] = await Promise.all([releases.releases(user, project), releases.liveRelease(user, project)]);
  if (ids.length === 0 && live === undefined) throw new ProjectNotFound();
  return { ids, live };
}
