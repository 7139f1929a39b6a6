import type { ServiceIdentifier } from 'inversify';
import type { DomainName } from '../../domain/custom-domain.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { Username } from '../../domain/username.js';

/**
 * What the web server reads to serve verified domains: one entry per verified domain,
 * naming the project whose live site it shows. Both changes are atomic and take effect
 * with no reload.
 */
export interface DomainLinks {
  link(domain: DomainName, user: Username, project: ProjectName): Promise<void>;
  /** Nothing happens when there was no link. */
  unlink(domain: DomainName): Promise<void>;
  /**
   * Removes every link to the project's site (every project of the user's, without one),
   * whatever the store says: a site deleted and deployed again is never served at a
   * domain whose claim went with the first.
   */
  unlinkSites(user: Username, project?: ProjectName): Promise<void>;
  /** At start-up: removes the temporary links a crash left behind; returns their paths. */
  removeLeftovers(): Promise<string[]>;
}

export const DOMAIN_LINKS = Symbol.for('sitedrop.DomainLinks') as ServiceIdentifier<DomainLinks>;
