import { DomainName, type DomainClaim } from '../domain/custom-domain.js';
import { DomainNotFound, InvalidDomain } from '../domain/errors.js';
import type { ProjectName } from '../domain/project-name.js';
import type { Username } from '../domain/username.js';
import type { DomainStore } from './ports/domain-store.js';

/** A domain named in a path: one no project could claim is, like an unclaimed one, not found. */
export function domainInPath(text: string): DomainName {
  try {
    return DomainName.parse(text);
  } catch (error) {
    if (error instanceof InvalidDomain) throw new DomainNotFound();
    throw error;
  }
}

/** The project's own claim on the domain; another project's is as good as none. */
export async function ownClaim(domains: DomainStore, user: Username, project: ProjectName, domain: DomainName): Promise<DomainClaim> {
  const claim = (await domains.list(user, project)).find((c) => c.domain === domain);
  if (claim === undefined) throw new DomainNotFound();
  return claim;
}
