import type { DnsTxt, TxtLookup } from '../../src/application/ports/dns-txt.js';
import type { DomainLinks } from '../../src/application/ports/domain-links.js';
import type { DomainStore } from '../../src/application/ports/domain-store.js';
import type { DomainClaim, DomainName } from '../../src/domain/custom-domain.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Username } from '../../src/domain/username.js';

const mine = (c: DomainClaim, user: Username, project: ProjectName) => c.user === user && c.project === project;

/** DomainStore in memory, held to the same contract as the database's. */
export class InMemoryDomainStore implements DomainStore {
  private claims: DomainClaim[] = [];

  async add(claim: DomainClaim): Promise<DomainClaim> {
    const own = this.claims.find((c) => mine(c, claim.user, claim.project) && c.domain === claim.domain);
    if (own !== undefined) return own;
    this.claims.push(claim);
    return claim;
  }

  async claimsOf(domain: DomainName): Promise<DomainClaim[]> {
    return this.claims.filter((c) => c.domain === domain);
  }

  async list(user: Username, project: ProjectName): Promise<DomainClaim[]> {
    return this.claims.filter((c) => mine(c, user, project)).sort((a, b) => (a.domain < b.domain ? -1 : 1));
  }

  async markVerified(user: Username, project: ProjectName, domain: DomainName, at: Date): Promise<boolean> {
    const at0 = this.claims.findIndex((c) => mine(c, user, project) && c.domain === domain);
    const claim = this.claims[at0];
    if (claim === undefined) return false;
    if (claim.verifiedAt !== undefined) return true;
    if (this.claims.some((c) => c.domain === domain && c.verifiedAt !== undefined)) return false;
    this.claims[at0] = { ...claim, verifiedAt: at };
    return true;
  }

  async verified(domain: DomainName): Promise<DomainClaim | undefined> {
    return this.claims.find((c) => c.domain === domain && c.verifiedAt !== undefined);
  }

  async remove(user: Username, project: ProjectName, domain: DomainName): Promise<boolean> {
    const before = this.claims.length;
    this.claims = this.claims.filter((c) => !(mine(c, user, project) && c.domain === domain));
    return this.claims.length < before;
  }

  private removeWhere(gone: (c: DomainClaim) => boolean): DomainName[] {
    const removed = this.claims.filter(gone);
    this.claims = this.claims.filter((c) => !gone(c));
    return removed.filter((c) => c.verifiedAt !== undefined).map((c) => c.domain);
  }

  async removeProject(user: Username, project: ProjectName): Promise<DomainName[]> {
    return this.removeWhere((c) => mine(c, user, project));
  }

  async removeUser(user: Username): Promise<DomainName[]> {
    return this.removeWhere((c) => c.user === user);
  }
}

/** TXT records a test sets, by name; a name set to a failure fails its lookup. */
export class FakeDnsTxt implements DnsTxt {
  readonly records = new Map<string, TxtLookup>();
  readonly asked: string[] = [];

  async lookup(name: string): Promise<TxtLookup> {
    this.asked.push(name);
    return this.records.get(name) ?? { records: [] };
  }
}

/** The host links, as a map from host to the site it serves. */
export class InMemoryDomainLinks implements DomainLinks {
  readonly links = new Map<string, string>();

  async link(domain: DomainName, user: Username, project: ProjectName): Promise<void> {
    this.links.set(domain, `${user}/${project}`);
  }

  async unlink(domain: DomainName): Promise<void> {
    this.links.delete(domain);
  }

  async unlinkSites(user: Username, project?: ProjectName): Promise<void> {
    for (const [domain, site] of this.links) {
      if (project === undefined ? site.startsWith(`${user}/`) : site === `${user}/${project}`) this.links.delete(domain);
    }
  }

  async removeLeftovers(): Promise<string[]> {
    return [];
  }

  /** Which site a host shows, as the web server would find it. */
  async siteOf(domain: string): Promise<string | undefined> {
    return this.links.get(domain);
  }
}
