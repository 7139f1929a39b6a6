import { describe, expect, it } from 'vitest';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { AddDomain } from '../../src/application/add-domain.js';
import { CheckDomain } from '../../src/application/check-domain.js';
import { DeleteProject } from '../../src/application/delete-project.js';
import { DeleteUser } from '../../src/application/delete-user.js';
import { ListDomains } from '../../src/application/list-domains.js';
import { RemoveDomain } from '../../src/application/remove-domain.js';
import { VerifyDomain } from '../../src/application/verify-domain.js';
import { DomainInUse, DomainNotFound, DomainNotVerified, InvalidDomain, InvalidProjectName, ProjectNotFound, TooManyDomains } from '../../src/domain/errors.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { FakeDnsTxt, InMemoryDomainLinks, InMemoryDomainStore } from '../support/domain-fakes.js';
import {
  FixedClock,
  InMemoryDeployKeyStore,
  InMemoryDeploys,
  InMemoryDeploySessions,
  InMemoryPreviewLinks,
  InMemoryTokenStore,
  InMemoryWebServer,
  SequenceTokenGenerator,
} from '../support/fakes.js';

const ann = 'ann' as Username;
const bob = 'bob' as Username;
const release = '20261220T120000' as ReleaseId;

function world(max = 20) {
  const disk = new InMemoryDeploys();
  const store = new InMemoryDomainStore();
  const links = new InMemoryDomainLinks();
  const dns = new FakeDnsTxt();
  const lock = new InProcessDeployLock();
  const clock = new FixedClock(new Date('2026-12-20T12:00:00.000Z'));
  const tokens = new InMemoryTokenStore();
  const settings = { max, reservedHosts: ['sites.example.net', 'previews.example.net'] };
  const live = (user: Username, project: string) => {
    disk.put(user, project as ProjectName, release, 1);
    disk.live.set(`${user}/${project}`, release);
  };
  live(ann, 'docs');
  live(ann, 'blog');
  live(bob, 'docs');
  const w = {
    disk, store, links, dns, tokens, live,
    add: new AddDomain(store, disk.store, lock, new SequenceTokenGenerator(), clock, settings),
    list: new ListDomains(store, disk.store),
    verify: new VerifyDomain(store, links, dns, disk.store, lock, clock),
    remove: new RemoveDomain(store, links, lock),
    check: new CheckDomain(store, disk.store),
    deleteProject: new DeleteProject(disk.store, lock, new InMemoryDeployKeyStore(), new InMemoryPreviewLinks(), new InMemoryDeploySessions(), disk.objects, disk.staging, new InMemoryWebServer(), store, links),
    deleteUser: new DeleteUser(tokens, disk.store, lock, new InMemoryDeployKeyStore(), new InMemoryPreviewLinks(), new InMemoryDeploySessions(), disk.objects, disk.staging, new InMemoryWebServer(), store, links),
    /** Publishes the claim's challenge and verifies it. */
    async claimAndVerify(user: Username, project: string, domain: string) {
      const claim = await w.add.execute(user, project, domain);
      dns.records.set(`_sitedrop-challenge.${claim.domain}`, { records: [claim.challenge] });
      return w.verify.execute(user, project, domain);
    },
  };
  return w;
}

describe('adding a domain', () => {
  it('normalises the name and answers a challenge of its own, the same one when added again', async () => {
    const w = world();
    const claim = await w.add.execute(ann, 'docs', 'Docs.Example.COM.');
    expect(claim).toMatchObject({ domain: 'docs.example.com', verifiedAt: undefined });
    expect(claim.challenge.length).toBeGreaterThanOrEqual(16);
    expect(await w.add.execute(ann, 'docs', 'docs.example.com')).toEqual(claim);
    const bobs = await w.add.execute(bob, 'docs', 'docs.example.com');
    expect(bobs.challenge).not.toBe(claim.challenge);
  });

  it('refuses a bad name, sitedrop\'s own hosts, a bad or unknown project, and changes nothing', async () => {
    const w = world();
    await expect(w.add.execute(ann, 'docs', '1.2.3.4')).rejects.toBeInstanceOf(InvalidDomain);
    await expect(w.add.execute(ann, 'docs', 'Sites.Example.net')).rejects.toBeInstanceOf(InvalidDomain);
    await expect(w.add.execute(ann, 'docs', 42)).rejects.toBeInstanceOf(InvalidDomain);
    await expect(w.add.execute(ann, 'Bad!', 'a.example.com')).rejects.toBeInstanceOf(InvalidProjectName);
    await expect(w.add.execute(ann, 'nothing', 'a.example.com')).rejects.toBeInstanceOf(ProjectNotFound);
    expect(await w.store.claimsOf('a.example.com' as never)).toEqual([]);
  });

  it('allows DOMAINS_MAX per project; one more is refused, the same one again is not', async () => {
    const w = world(2);
    await w.add.execute(ann, 'docs', 'a.example.com');
    await w.add.execute(ann, 'docs', 'b.example.com');
    await expect(w.add.execute(ann, 'docs', 'c.example.com')).rejects.toBeInstanceOf(TooManyDomains);
    await w.add.execute(ann, 'docs', 'b.example.com');
    await w.add.execute(ann, 'blog', 'c.example.com');
  });

  it('once verified by one project, is refused to every other', async () => {
    const w = world();
    await w.add.execute(bob, 'docs', 'docs.example.com');
    await w.claimAndVerify(ann, 'docs', 'docs.example.com');
    await expect(w.add.execute(bob, 'docs', 'docs.example.com')).rejects.toBeInstanceOf(DomainInUse);
    await expect(w.add.execute(ann, 'blog', 'docs.example.com')).rejects.toBeInstanceOf(DomainInUse);
  });
});

describe('verifying a domain', () => {
  it('passes on the TXT record holding the value, links the site, and asks DNS no more once verified', async () => {
    const w = world();
    const claim = await w.add.execute(ann, 'docs', 'docs.example.com');
    w.dns.records.set('_sitedrop-challenge.docs.example.com', { records: ['other', claim.challenge] });
    const verified = await w.verify.execute(ann, 'docs', 'DOCS.example.com');
    expect(verified.verifiedAt).toEqual(new Date('2026-12-20T12:00:00.000Z'));
    expect(await w.links.siteOf('docs.example.com')).toBe('ann/docs');
    w.dns.records.clear();
    expect((await w.verify.execute(ann, 'docs', 'docs.example.com')).verifiedAt).toEqual(verified.verifiedAt);
    expect(w.dns.asked).toEqual(['_sitedrop-challenge.docs.example.com']);
  });

  it('fails saying what it found, and changes nothing', async () => {
    const w = world();
    await w.add.execute(ann, 'docs', 'docs.example.com');
    w.dns.records.set('_sitedrop-challenge.docs.example.com', { records: ['wrong'] });
    await expect(w.verify.execute(ann, 'docs', 'docs.example.com')).rejects.toThrow(new DomainNotVerified('found 1 TXT record(s) at _sitedrop-challenge.docs.example.com, none the challenge: "wrong"'));
    w.dns.records.set('_sitedrop-challenge.docs.example.com', { failure: 'ETIMEOUT' });
    await expect(w.verify.execute(ann, 'docs', 'docs.example.com')).rejects.toBeInstanceOf(DomainNotVerified);
    expect((await w.list.execute(ann, 'docs'))[0]?.verifiedAt).toBeUndefined();
    expect(w.links.links.size).toBe(0);
  });

  it('is refused when another project verified first, even with the right record, and without asking DNS', async () => {
    const w = world();
    const bobs = await w.add.execute(bob, 'docs', 'docs.example.com');
    await w.claimAndVerify(ann, 'docs', 'docs.example.com');
    w.dns.records.set('_sitedrop-challenge.docs.example.com', { records: [bobs.challenge] });
    const asked = w.dns.asked.length;
    await expect(w.verify.execute(bob, 'docs', 'docs.example.com')).rejects.toBeInstanceOf(DomainInUse);
    expect(w.dns.asked.length).toBe(asked);
    expect(await w.links.siteOf('docs.example.com')).toBe('ann/docs');
  });

  it("finds no claim of another user's, or of a name no one could claim", async () => {
    const w = world();
    await w.claimAndVerify(ann, 'docs', 'docs.example.com');
    await expect(w.verify.execute(bob, 'docs', 'docs.example.com')).rejects.toBeInstanceOf(DomainNotFound);
    await expect(w.verify.execute(ann, 'docs', '../../etc')).rejects.toBeInstanceOf(DomainNotFound);
    await expect(w.verify.execute(ann, 'nothing', 'docs.example.com')).rejects.toBeInstanceOf(ProjectNotFound);
  });
});

describe('listing, removing and checking domains', () => {
  it("lists a project's own claims only: never another user's claim or verification", async () => {
    const w = world();
    await w.claimAndVerify(ann, 'docs', 'docs.example.com');
    await w.add.execute(ann, 'docs', 'a.example.com');
    expect((await w.list.execute(ann, 'docs')).map((c) => [c.domain, c.verifiedAt !== undefined])).toEqual([['a.example.com', false], ['docs.example.com', true]]);
    expect(await w.list.execute(bob, 'docs')).toEqual([]);
    await expect(w.list.execute(ann, 'nothing')).rejects.toBeInstanceOf(ProjectNotFound);
  });

  it("removes a project's own claim (unlinking it), never another user's", async () => {
    const w = world();
    await w.claimAndVerify(ann, 'docs', 'docs.example.com');
    await w.add.execute(bob, 'docs', 'docs.example.com').catch(() => undefined);
    await expect(w.remove.execute(bob, 'docs', 'docs.example.com')).rejects.toBeInstanceOf(DomainNotFound);
    expect(await w.links.siteOf('docs.example.com')).toBe('ann/docs');
    await w.remove.execute(ann, 'docs', 'docs.example.com');
    expect(await w.links.siteOf('docs.example.com')).toBeUndefined();
    await expect(w.remove.execute(ann, 'docs', 'docs.example.com')).rejects.toBeInstanceOf(DomainNotFound);
    // Free again: bob may claim and verify it.
    await w.claimAndVerify(bob, 'docs', 'docs.example.com');
    expect(await w.links.siteOf('docs.example.com')).toBe('bob/docs');
  });

  it("an unverified claim's removal leaves another project's verified link alone", async () => {
    const w = world();
    await w.add.execute(bob, 'docs', 'docs.example.com');
    await w.claimAndVerify(ann, 'docs', 'docs.example.com');
    await w.remove.execute(bob, 'docs', 'docs.example.com');
    expect(await w.links.siteOf('docs.example.com')).toBe('ann/docs');
  });

  it('checks true exactly for a verified domain whose project has a live release, without DNS', async () => {
    const w = world();
    await w.add.execute(ann, 'blog', 'blog.example.com');
    expect(await w.check.execute('blog.example.com')).toBe(false);
    await w.claimAndVerify(ann, 'docs', 'docs.example.com');
    const asked = w.dns.asked.length;
    expect(await w.check.execute('docs.example.com')).toBe(true);
    expect(await w.check.execute('DOCS.example.com.')).toBe(true);
    expect(await w.check.execute('unknown.example.com')).toBe(false);
    expect(await w.check.execute('not a name')).toBe(false);
    expect(await w.check.execute(undefined)).toBe(false);
    w.disk.live.delete('ann/docs');
    expect(await w.check.execute('docs.example.com')).toBe(false);
    expect(w.dns.asked.length).toBe(asked);
  });

  it("deleting a project or a user removes its domains and their links, and frees them", async () => {
    const w = world();
    await w.claimAndVerify(ann, 'docs', 'docs.example.com');
    await w.claimAndVerify(ann, 'blog', 'blog.example.com');
    await w.claimAndVerify(bob, 'docs', 'bob.example.com');
    await w.deleteProject.execute(ann, 'docs');
    expect(await w.links.siteOf('docs.example.com')).toBeUndefined();
    expect(await w.check.execute('docs.example.com')).toBe(false);
    await w.claimAndVerify(bob, 'docs', 'docs.example.com');
    await w.tokens.save(ann, 'A'.repeat(32) as never);
    await w.deleteUser.execute({ username: 'ann', files: 'persist' });
    expect(await w.links.siteOf('blog.example.com')).toBeUndefined();
    expect(await w.store.claimsOf('blog.example.com' as never)).toEqual([]);
    expect(await w.links.siteOf('bob.example.com')).toBe('bob/docs');
    expect(await w.links.siteOf('docs.example.com')).toBe('bob/docs');
  });
});
