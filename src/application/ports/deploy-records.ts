import type { ServiceIdentifier } from 'inversify';
import type { PreviewName } from '../../domain/preview.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { ReleaseId } from '../../domain/release-id.js';
import type { Username } from '../../domain/username.js';

/** What a successful deploy published, kept in the database every replica shares. */
export interface DeployRecord {
  readonly user: Username;
  readonly project: ProjectName;
  readonly release: ReleaseId;
  readonly bytes: number;
  readonly files: number;
  readonly createdAt: Date;
  /** The preview the release was deployed for, until it has been live; undefined for a live deploy. */
  readonly preview: PreviewName | undefined;
}

export interface DeployRecords {
  /** Replaces any record of the same release (its id can be reused once it is gone). */
  record(entry: DeployRecord): Promise<void>;
  /** Newest first. */
  forProject(user: Username, project: ProjectName): Promise<DeployRecord[]>;
  /** The release has been live (a promote, a rollback to it): it is no longer only a preview's. */
  markLive(user: Username, project: ProjectName, release: ReleaseId): Promise<void>;
}

export const DEPLOY_RECORDS = Symbol.for('sitedrop.DeployRecords') as ServiceIdentifier<DeployRecords>;
