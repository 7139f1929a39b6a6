import { inject, injectable } from 'inversify';
import type { PreviewName } from '../domain/preview.js';
import { ProjectName } from '../domain/project-name.js';
import { ReleaseId } from '../domain/release-id.js';
import type { Username } from '../domain/username.js';
import { existingProject } from './existing-project.js';
import { DEPLOY_RECORDS, type DeployRecords } from './ports/deploy-records.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';

export interface ReleaseSummary {
  readonly release: ReleaseId;
  readonly live: boolean;
  readonly createdAt: Date;
  /** From the deploy record, where one was written. */
  readonly bytes: number | undefined;
  readonly files: number | undefined;
  /** The preview it was deployed for, while it has never been live. */
  readonly preview: PreviewName | undefined;
}

/** The releases on disk, newest first, with what their deploy records say. */
@injectable()
export class ListReleases {
  constructor(
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(DEPLOY_RECORDS) private readonly records: DeployRecords,
  ) {}

  async execute(user: Username, projectName: string): Promise<ReleaseSummary[]> {
    const project = ProjectName.parse(projectName);
    const [{ ids, live }, records] = await Promise.all([existingProject(this.releases, user, project), this.records.forProject(user, project)]);
    const recorded = new Map(records.map((r) => [r.release, r]));
    return [...ids]
      .sort()
      .reverse()
      .map((release) => ({
        release,
        live: release === live,
        createdAt: recorded.get(release)?.createdAt ?? ReleaseId.toDate(release)!,
        bytes: recorded.get(release)?.bytes,
        files: recorded.get(release)?.files,
        preview: recorded.get(release)?.preview,
      }));
  }
}
