import type { ServiceIdentifier } from 'inversify';
import type { ArchiveLimits } from '../../domain/archive-policy.js';

export interface DeploySettings {
  readonly releasesKeep: number;
  readonly archiveLimits: ArchiveLimits;
  /** The most bytes a user's kept releases may hold (USER_MAX_BYTES); absent, no quota. */
  readonly userMaxBytes?: number;
}

export const DEPLOY_SETTINGS = Symbol.for('sitedrop.DeploySettings') as ServiceIdentifier<DeploySettings>;
