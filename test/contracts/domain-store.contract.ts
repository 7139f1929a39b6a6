import { describe, expect, it } from 'vitest';
import type { DomainStore } from '../../src/application/ports/domain-store.js';
import type { DomainClaim, DomainName } from '../../src/domain/custom-domain.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Username } from '../../src/domain/username.js';

const at = (minute: number) => new Date(Date.UTC(2026, 11, 20, 12, minute));
const ann = 'ann' as Username;
const bob = 'bob' as Username;
const docs = 'docs' as ProjectName;
const blog = 'blog' as ProjectName;
const d = (name: string) => name as DomainName;
const claim = (over: Partial<DomainClaim> = {}): DomainClaim => ({
  user: ann,
  project: docs,
  domain: d('docs.example.com'),
  challenge: 'a'.repeat(32),
  createdAt: at(0),
  verifiedAt: undefined,
  ...over,
});

/** What every DomainStore must do, whatever keeps the claims. */
export function domainStoreContract(name: string, open: () => Promise<{ store: DomainStore; close(): Promise<void> }>): void {
  describe(`DomainStore contract: ${name}`, () => {
    const withStore = (test: (store: DomainStore) => Promise<void>) => async () => {
      const { store, close } = await open();
      try {
        await test(store);
      } finally {
        await close();
      }
    };

    it('keeps a claim whole, and a second add of it returns the first, challenge and all', withStore(async (store) => {
      expect(await store.add(claim())).toEqual(claim());
      expect(await store.add(claim({ challenge: 'b'.repeat(32), createdAt: at(5) }))).toEqual(claim());
      expect(await store.list(ann, docs)).toEqual([claim()]);
    }));

    it('two adds racing keep one claim and answer both with it', withStore(async (store) => {
      const both = await Promise.all([store.add(claim({ challenge: 'x'.repeat(32) })), store.add(claim({ challenge: 'y'.repeat(32) }))]);
      expect(both[0]).toEqual(both[1]);
      expect(await store.list(ann, docs)).toHaveLength(1);
    }));

    it("lists a project's claims by domain, and no other project's or user's", withStore(async (store) => {
      await store.add(claim({ domain: d('z.example.com') }));
      await store.add(claim({ domain: d('a.example.com') }));
      await store.add(claim({ project: blog, domain: d('blog.example.com') }));
      await store.add(claim({ user: bob, domain: d('bob.example.com') }));
      expect((await store.list(ann, docs)).map((c) => c.domain)).toEqual(['a.example.com', 'z.example.com']);
      expect(await store.list(bob, docs)).toHaveLength(1);
      expect(await store.list(bob, blog)).toEqual([]);
    }));

    it("holds every project's claim on one domain, each with its own challenge", withStore(async (store) => {
      await store.add(claim());
      await store.add(claim({ user: bob, challenge: 'b'.repeat(32), createdAt: at(1) }));
      expect((await store.claimsOf(d('docs.example.com'))).map((c) => [c.user, c.challenge])).toEqual([[ann, 'a'.repeat(32)], [bob, 'b'.repeat(32)]]);
      expect(await store.claimsOf(d('other.example.com'))).toEqual([]);
    }));

    it('verifies one claim only: another project then cannot, its own again keeps the first time', withStore(async (store) => {
      await store.add(claim());
      await store.add(claim({ user: bob }));
      expect(await store.verified(d('docs.example.com'))).toBeUndefined();
      expect(await store.markVerified(ann, docs, d('docs.example.com'), at(3))).toBe(true);
      expect(await store.markVerified(bob, docs, d('docs.example.com'), at(4))).toBe(false);
      expect(await store.markVerified(ann, docs, d('docs.example.com'), at(9))).toBe(true);
      expect(await store.verified(d('docs.example.com'))).toEqual(claim({ verifiedAt: at(3) }));
      expect((await store.list(bob, docs))[0]?.verifiedAt).toBeUndefined();
      expect(await store.markVerified(ann, blog, d('docs.example.com'), at(3))).toBe(false);
    }));

    it('lets only one of two projects verifying at once win', withStore(async (store) => {
      await store.add(claim());
      await store.add(claim({ user: bob }));
      const results = await Promise.all([store.markVerified(ann, docs, d('docs.example.com'), at(1)), store.markVerified(bob, docs, d('docs.example.com'), at(1))]);
      expect(results.filter(Boolean)).toHaveLength(1);
    }));

    it('removes a claim only through its own user and project', withStore(async (store) => {
      await store.add(claim());
      expect(await store.remove(bob, docs, d('docs.example.com'))).toBe(false);
      expect(await store.remove(ann, blog, d('docs.example.com'))).toBe(false);
      expect(await store.remove(ann, docs, d('docs.example.com'))).toBe(true);
      expect(await store.remove(ann, docs, d('docs.example.com'))).toBe(false);
      expect(await store.list(ann, docs)).toEqual([]);
    }));

    it("removes a project's or a user's claims, naming the verified domains, and frees them for others", withStore(async (store) => {
      await store.add(claim({ domain: d('a.example.com') }));
      await store.add(claim({ domain: d('b.example.com') }));
      await store.add(claim({ project: blog, domain: d('c.example.com') }));
      await store.add(claim({ user: bob, domain: d('a.example.com') }));
      await store.markVerified(ann, docs, d('a.example.com'), at(1));
      await store.markVerified(ann, blog, d('c.example.com'), at(1));
      expect(await store.removeProject(ann, docs)).toEqual(['a.example.com']);
      expect(await store.list(ann, docs)).toEqual([]);
      expect(await store.markVerified(bob, docs, d('a.example.com'), at(2))).toBe(true);
      expect(await store.removeUser(ann)).toEqual(['c.example.com']);
      expect(await store.list(ann, blog)).toEqual([]);
      expect(await store.list(bob, docs)).toHaveLength(1);
    }));
  });
}
