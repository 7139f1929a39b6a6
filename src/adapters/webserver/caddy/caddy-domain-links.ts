import { inject, injectable } from 'inversify';
import type { DomainLinks } from '../../../application/ports/domain-links.js';
import type { DomainName } from '../../../domain/custom-domain.js';
import type { ProjectName } from '../../../domain/project-name.js';
import type { Username } from '../../../domain/username.js';
import { NodeDomainLinks } from '../../fs/publish/node-domain-links.js';
import { CaddyWebServer } from './caddy-web-server.js';

/**
 * The domain links, telling Caddy after each change: its HTTPS site names every verified
 * host, and a site with rules is routed at its domains by a route Caddy must load
 * (caddy-domains.ts); nginx, and Caddy's HTTP site for a site without rules, read the
 * links per request. The load runs in the background.
 */
@injectable()
export class CaddyDomainLinks implements DomainLinks {
  constructor(
    @inject(NodeDomainLinks) private readonly links: NodeDomainLinks,
    @inject(CaddyWebServer) private readonly caddy: CaddyWebServer,
  ) {}

  async link(domain: DomainName, user: Username, project: ProjectName): Promise<void> {
    await this.links.link(domain, user, project);
    this.caddy.domainsChanged();
  }

  async unlink(domain: DomainName): Promise<void> {
    await this.links.unlink(domain);
    this.caddy.domainsChanged();
  }

  async unlinkSites(user: Username, project?: ProjectName): Promise<void> {
    await this.links.unlinkSites(user, project);
    this.caddy.domainsChanged();
  }

  removeLeftovers(): Promise<string[]> {
    return this.links.removeLeftovers();
  }
}
