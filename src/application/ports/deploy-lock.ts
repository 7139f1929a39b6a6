import type { ServiceIdentifier } from 'inversify';
import type { ProjectName } from '../../domain/project-name.js';
import type { Username } from '../../domain/username.js';

/**
 * Serialises changes to the release tree. Work on one project runs alone; work on a
 * whole user (deleting it) waits for, and holds off, every project of that user.
 */
export interface DeployLock {
  withProject<T>(user: Username, project: ProjectName, work: (held: HeldProjectLock) => Promise<T>): Promise<T>;
  withUser<T>(user: Username, work: () => Promise<T>): Promise<T>;
}

/** A project lock, as seen by the work running under it. */
export interface HeldProjectLock {
  /**
   * Also holds the user's storage lock, from now until the project lock is released:
   * of the user's projects, one at a time holds it, so work that reads the user's total
   * usage and then adds to it (the storage quota) is not raced by another project.
   * It can only be taken while a project lock is held, and goes with it, so the order is
   * always project then storage, and the two cannot deadlock.
   */
  lockUserStorage(): Promise<void>;
}

export const DEPLOY_LOCK = Symbol.for('sitedrop.DeployLock') as ServiceIdentifier<DeployLock>;
