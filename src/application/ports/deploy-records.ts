import type { ServiceIdentifier } from 'inversify';
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
}

export interface DeployRecords {
  /** Replaces any record of the same release (its id can be reused once it is gone). */
  record(entry: DeployRecord): Promise<void>;
  /** Newest first. */
  forProject(user: Username, project: ProjectName): Promise<DeployRecord[]>;
}

export const DEPLOY_RECORDS = Symbol.for('sitedrop.DeployRecords') as ServiceIdentifier<DeployRecords>;
