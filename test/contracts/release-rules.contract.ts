import { describe, expect, it } from 'vitest';
import { SiteRulesRejected } from '../../src/domain/errors.js';
import { compileSiteRules } from '../../src/domain/site-rules.js';
import { alice, docs, going, LIMITS, over, R1, type DeploysUnderTest } from './deploys-under-test.js';

const RULES = compileSiteRules({ redirects: '/a /b 302\n/c /d 200!\n', headers: '/*\n  X-A: 1\n' });

/**
 * What every ReleaseRules must do for the use cases: read a release's rule files as
 * written, keep compiled rules with the release from staging to committed, and say
 * whether a release has them.
 */
export function releaseRulesContract(name: string, open: () => Promise<DeploysUnderTest>): void {
  describe(`ReleaseRules contract: ${name}`, () => {
    it("reads a staged release's rule files as written, and none when it has none", over(open, async (d) => {
      const staged = await d.staging.stage(alice, d.namedArchive({ 'index.html': 'home', _redirects: '/a /b\n', _headers: '/*\n  X-A: 1\n' }), LIMITS, going());
      expect(await d.rules.files({ staged }, 1000)).toEqual({ redirects: '/a /b\n', headers: '/*\n  X-A: 1\n' });
      const plain = await d.staging.stage(alice, d.namedArchive({ 'index.html': 'home' }), LIMITS, going());
      expect(await d.rules.files({ staged: plain }, 1000)).toEqual({});
    }));

    it('refuses a rule file over the limit with SiteRulesRejected naming it', over(open, async (d) => {
      const staged = await d.staging.stage(alice, d.namedArchive({ 'index.html': 'home', _headers: `/*\n  X-A: ${'x'.repeat(100)}\n` }), LIMITS, going());
      const refused = d.rules.files({ staged }, 50);
      await expect(refused).rejects.toBeInstanceOf(SiteRulesRejected);
      await expect(refused).rejects.toThrow(/^invalid _headers: /);
    }));

    it('keeps compiled rules with the release once committed, and says it has them', over(open, async (d) => {
      const staged = await d.staging.stage(alice, d.namedArchive({ 'index.html': 'home', _redirects: '/a /b 302\n' }), LIMITS, going());
      expect(await d.rules.isCompiled({ staged })).toBe(false);
      await d.rules.write({ staged }, RULES);
      expect(await d.rules.isCompiled({ staged })).toBe(true);
      await d.store.commit(staged, alice, docs, R1);
      const committed = { user: alice, project: docs, release: R1 };
      expect(await d.rules.isCompiled(committed)).toBe(true);
      expect(await d.rules.compiled(committed)).toEqual(RULES);
      expect(await d.rules.files(committed, 1000)).toEqual({ redirects: '/a /b 302\n' });
    }));

    it('writes nothing for rules that do nothing, and a committed release without compiled rules has none', over(open, async (d) => {
      const staged = await d.staging.stage(alice, d.namedArchive({ 'index.html': 'home' }), LIMITS, going());
      await d.rules.write({ staged }, compileSiteRules({}));
      expect(await d.rules.isCompiled({ staged })).toBe(false);
      await d.store.commit(staged, alice, docs, R1);
      const committed = { user: alice, project: docs, release: R1 };
      expect(await d.rules.compiled(committed)).toEqual(compileSiteRules({}));
      await d.rules.write(committed, RULES);
      expect(await d.rules.compiled(committed)).toEqual(RULES);
    }));
  });
}
