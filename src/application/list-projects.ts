import { inject, injectable } from 'inversify';
import type { ProjectName } from '../domain/project-name.js';
import { ReleaseId } from '../domain/release-id.js';
import type { Username } from '../domain/username.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';

export interface ProjectSummary {
  readonly project: ProjectName;
  readonly live: ReleaseId | undefined;
  readonly releases: number;
  /** When the newest release was deployed (release ids are UTC seconds). */
  readonly lastDeployAt: Date | undefined;
}

@injectable()
export class ListProjects {
  constructor(@inject(RELEASE_STORE) private readonly releases: ReleaseStore) {}

  async execute(user: Username): Promise<ProjectSummary[]> {
    const projects = await this.releases.projects(user);
    return Promise.all(
      projects.map(async (project) => {
        const [ids, live] = await Promise.all([this.releases.releases(user, project), this.releases.liveRelease(user, project)]);
        const newest = [...ids].sort().at(-1);
        return { project, live, releases: ids.length, lastDeployAt: newest === undefined ? undefined : ReleaseId.toDate(newest) };
      }),
    );
  }
}
