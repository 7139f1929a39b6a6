import { readdir, readlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { inject, injectable, type ServiceIdentifier } from 'inversify';
import type { DomainLinks } from '../../../application/ports/domain-links.js';
import type { DomainName } from '../../../domain/custom-domain.js';
import type { ProjectName } from '../../../domain/project-name.js';
import type { Username } from '../../../domain/username.js';
import { fsyncDirectory, mkdirDurable } from '../layout/durability.js';
import { isMissing } from '../threads/fs-errors.js';
import { swapLink, temporaryLinkOf } from './link-swap.js';

export interface DomainRoots {
  readonly domainsRoot: string;
  readonly docsRoot: string;
  readonly replica: string;
}

export const DOMAIN_ROOTS = Symbol.for('sitedrop.DomainRoots') as ServiceIdentifier<DomainRoots>;

/**
 * DOMAINS_ROOT/<host> -> DOCS_ROOT/<user>/<project>: a link to the project's live link,
 * so a deploy, a rollback or a promote shows at the domain with no change here. The web
 * server resolves both links at once per request (nginx's router, realpath), so adding or
 * removing a domain needs no reload. Hosts are validated names (DomainName): lower-case
 * labels, never '.', '..' or a slash.
 */
@injectable()
export class NodeDomainLinks implements DomainLinks {
  constructor(@inject(DOMAIN_ROOTS) private readonly roots: DomainRoots) {}

  async link(domain: DomainName, user: Username, project: ProjectName): Promise<void> {
    await swapLink(this.roots.domainsRoot, domain, join(this.roots.docsRoot, user, project), this.roots.replica);
  }

  async unlink(domain: DomainName): Promise<void> {
    try {
      await unlink(join(this.roots.domainsRoot, domain));
    } catch (error) {
      if (isMissing(error)) return;
      throw error;
    }
    await fsyncDirectory(this.roots.domainsRoot);
  }

  async unlinkSites(user: Username, project?: ProjectName): Promise<void> {
    await mkdirDurable(this.roots.domainsRoot);
    const site = join(this.roots.docsRoot, user, project ?? '');
    const matches = (target: string) => (project === undefined ? target.startsWith(`${site}/`) : target === site);
    let removed = false;
    // One readlink per domain: a thousand take a few milliseconds, and deletes are rare.
    for (const name of await readdir(this.roots.domainsRoot)) {
      const target = await readlink(join(this.roots.domainsRoot, name)).catch(() => undefined);
      if (target === undefined || !matches(target)) continue;
      await unlink(join(this.roots.domainsRoot, name)).catch((error: unknown) => {
        if (!isMissing(error)) throw error;
      });
      removed = true;
    }
    if (removed) await fsyncDirectory(this.roots.domainsRoot);
  }

  async removeLeftovers(): Promise<string[]> {
    const temporary = temporaryLinkOf(this.roots.replica);
    const names = await readdir(this.roots.domainsRoot).catch((error: unknown) => {
      if (isMissing(error)) return [];
      throw error;
    });
    const removed = names.filter((name) => temporary.test(name)).map((name) => join(this.roots.domainsRoot, name));
    for (const path of removed) await unlink(path);
    return removed;
  }
}
