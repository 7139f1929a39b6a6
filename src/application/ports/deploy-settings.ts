import type { ServiceIdentifier } from 'inversify';
import type { ArchiveLimits } from '../../domain/archive-policy.js';

export interface DeploySettings {
  readonly releasesKeep: number;
  readonly archiveLimits: ArchiveLimits;
}

export const DEPLOY_SETTINGS = Symbol.for('sitedrop.DeploySettings') as ServiceIdentifier<DeploySettings>;
