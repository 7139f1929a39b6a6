import type { ServiceIdentifier } from 'inversify';
import type { ProjectName } from '../../domain/project-name.js';
import type { Username } from '../../domain/username.js';

/**
 * Serialises changes to the release tree. Work on one project runs alone; work on a
 * whole user (deleting it) waits for, and holds off, every project of that user.
 */
export interface DeployLock {
  withProject<T>(user: Username, project: ProjectName, work: () => Promise<T>): Promise<T>;
  withUser<T>(user: Username, work: () => Promise<T>): Promise<T>;
}

export const DEPLOY_LOCK = Symbol.for('sitedrop.DeployLock') as ServiceIdentifier<DeployLock>;
