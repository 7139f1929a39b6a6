import { mkdtemp, readdir, readlink, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NodeDomainLinks } from '../../src/adapters/fs/publish/node-domain-links.js';
import type { DomainLinks } from '../../src/application/ports/domain-links.js';
import type { DomainName } from '../../src/domain/custom-domain.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Username } from '../../src/domain/username.js';
import { InMemoryDomainLinks } from '../support/domain-fakes.js';

interface LinksUnderTest {
  readonly links: DomainLinks;
  /** `user/project` a host shows, or undefined. */
  siteOf(domain: string): Promise<string | undefined>;
  close(): Promise<void>;
}

const d = (name: string) => name as DomainName;
const u = (name: string) => name as Username;
const p = (name: string) => name as ProjectName;

function domainLinksContract(name: string, open: () => Promise<LinksUnderTest>): void {
  describe(`DomainLinks contract: ${name}`, () => {
    const withLinks = (test: (t: LinksUnderTest) => Promise<void>) => async () => {
      const t = await open();
      try {
        await test(t);
      } finally {
        await t.close();
      }
    };

    it('links a host to a project, moves it, and unlinks it (twice is no error)', withLinks(async ({ links, siteOf }) => {
      await links.link(d('docs.example.com'), u('ann'), p('docs'));
      expect(await siteOf('docs.example.com')).toBe('ann/docs');
      await links.link(d('docs.example.com'), u('ann'), p('blog'));
      expect(await siteOf('docs.example.com')).toBe('ann/blog');
      await links.unlink(d('docs.example.com'));
      await links.unlink(d('docs.example.com'));
      expect(await siteOf('docs.example.com')).toBeUndefined();
    }));

    it("unlinks every host of one project, or of one user, and no one else's", withLinks(async ({ links, siteOf }) => {
      await links.link(d('a.example.com'), u('ann'), p('docs'));
      await links.link(d('b.example.com'), u('ann'), p('docs'));
      await links.link(d('c.example.com'), u('ann'), p('blog'));
      await links.link(d('d.example.com'), u('ann2'), p('docs'));
      await links.link(d('e.example.com'), u('bob'), p('docs'));
      await links.unlinkSites(u('ann'), p('docs'));
      expect(await siteOf('a.example.com')).toBeUndefined();
      expect(await siteOf('b.example.com')).toBeUndefined();
      expect(await siteOf('c.example.com')).toBe('ann/blog');
      await links.unlinkSites(u('ann'));
      expect(await siteOf('c.example.com')).toBeUndefined();
      expect(await siteOf('d.example.com')).toBe('ann2/docs');
      expect(await siteOf('e.example.com')).toBe('bob/docs');
    }));
  });
}

describe('host links in DOMAINS_ROOT, after a crash', () => {
  it("removes this replica's temporary links at start-up, and nothing else", async () => {
    const root = await mkdtemp(join(tmpdir(), 'sitedrop-domains-'));
    const roots = { domainsRoot: join(root, 'domains'), docsRoot: join(root, 'docs'), replica: 'a' };
    const links = new NodeDomainLinks(roots);
    await links.link(d('kept.example.com'), u('ann'), p('docs'));
    await symlink('/nowhere', join(roots.domainsRoot, '.left.example.com.tmp+a+0123456789ab'));
    await symlink('/nowhere', join(roots.domainsRoot, '.other.example.com.tmp+b+0123456789ab'));
    expect(await links.removeLeftovers()).toEqual([join(roots.domainsRoot, '.left.example.com.tmp+a+0123456789ab')]);
    expect((await readdir(roots.domainsRoot)).sort()).toEqual(['.other.example.com.tmp+b+0123456789ab', 'kept.example.com']);
    expect(await new NodeDomainLinks({ ...roots, domainsRoot: join(root, 'never-made') }).removeLeftovers()).toEqual([]);
    await rm(root, { recursive: true, force: true });
  });
});

domainLinksContract('in-memory fake', async () => {
  const links = new InMemoryDomainLinks();
  return { links, siteOf: (domain) => links.siteOf(domain), close: async () => undefined };
});

domainLinksContract('links in DOMAINS_ROOT', async () => {
  const root = await mkdtemp(join(tmpdir(), 'sitedrop-domains-'));
  const roots = { domainsRoot: join(root, 'domains'), docsRoot: join(root, 'docs'), replica: 'test' };
  return {
    links: new NodeDomainLinks(roots),
    siteOf: async (domain) => {
      const target = await readlink(join(roots.domainsRoot, domain)).catch(() => undefined);
      return target === undefined ? undefined : relative(roots.docsRoot, target);
    },
    close: async () => {
      // Nothing but the links themselves: no temporary link is ever left behind.
      expect((await readdir(roots.domainsRoot).catch(() => [])).filter((n) => n.startsWith('.'))).toEqual([]);
      await rm(root, { recursive: true, force: true });
    },
  };
});
