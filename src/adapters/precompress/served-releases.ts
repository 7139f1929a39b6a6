import { readdir, readlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { ProjectName } from '../../domain/project-name.js';
import { ReleaseId } from '../../domain/release-id.js';
import { isResourceName } from '../../domain/resource-name.js';
import type { Username } from '../../domain/username.js';
import { isMissing } from '../fs/threads/fs-errors.js';

export interface ServedRelease {
  readonly user: Username;
  readonly project: ProjectName;
  readonly release: ReleaseId;
}

async function names(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter(isResourceName);
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

async function target(link: string): Promise<ReleaseId | undefined> {
  try {
    const release = basename(await readlink(link));
    return ReleaseId.isReleaseId(release) ? release : undefined;
  } catch {
    // Not a link (a project's directory of previews is one level up), or gone meanwhile.
    return undefined;
  }
}

/**
 * Every release a web server serves now: each live link `<docs>/<user>/<project>`, and
 * each preview's `<previews>/<user>/<project>/<preview>`. Start-up queues their siblings,
 * so releases published before siblings were made get theirs.
 */
export async function servedReleases(docsRoot: string, previewsRoot: string): Promise<ServedRelease[]> {
  const served: ServedRelease[] = [];
  for (const user of await names(docsRoot)) {
    for (const project of await names(join(docsRoot, user))) {
      const release = await target(join(docsRoot, user, project));
      if (release) served.push({ user: user as Username, project: project as ProjectName, release });
    }
  }
  for (const user of await names(previewsRoot)) {
    for (const project of await names(join(previewsRoot, user))) {
      for (const preview of await names(join(previewsRoot, user, project))) {
        const release = await target(join(previewsRoot, user, project, preview));
        if (release) served.push({ user: user as Username, project: project as ProjectName, release });
      }
    }
  }
  return served;
}

/**
 * Whether a web server serves this release now, live or as one of its project's previews.
 * A release replaced before its siblings' turn is skipped: a rollback or promote queues it again.
 */
export async function isServed(docsRoot: string, previewsRoot: string, { user, project, release }: ServedRelease): Promise<boolean> {
  if ((await target(join(docsRoot, user, project))) === release) return true;
  for (const preview of await names(join(previewsRoot, user, project))) {
    if ((await target(join(previewsRoot, user, project, preview))) === release) return true;
  }
  return false;
}
