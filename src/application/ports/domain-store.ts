import type { ServiceIdentifier } from 'inversify';
import type { DomainClaim, DomainName } from '../../domain/custom-domain.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { Username } from '../../domain/username.js';

/** Projects' claims on custom domains: one row per (user, project, domain). */
export interface DomainStore {
  /**
   * Keeps the claim, or returns the one this project already has on the domain (with
   * its challenge), whichever came first when two race.
   */
  add(claim: DomainClaim): Promise<DomainClaim>;
  /** Every project's claim on the domain, oldest first. */
  claimsOf(domain: DomainName): Promise<DomainClaim[]>;
  /** A project's claims, by domain name. */
  list(user: Username, project: ProjectName): Promise<DomainClaim[]>;
  /**
   * Marks the project's claim verified (kept as it was when it already is). False when
   * another project's claim on the domain is verified: at most one ever is, even when two race.
   */
  markVerified(user: Username, project: ProjectName, domain: DomainName, at: Date): Promise<boolean>;
  /** The one verified claim on the domain, if any. */
  verified(domain: DomainName): Promise<DomainClaim | undefined>;
  /** False when the project had no claim on it. */
  remove(user: Username, project: ProjectName, domain: DomainName): Promise<boolean>;
  /** Removes the project's claims; returns the domains it had verified. */
  removeProject(user: Username, project: ProjectName): Promise<DomainName[]>;
  /** Removes the user's claims; returns the domains its projects had verified. */
  removeUser(user: Username): Promise<DomainName[]>;
}

export const DOMAIN_STORE = Symbol.for('sitedrop.DomainStore') as ServiceIdentifier<DomainStore>;
