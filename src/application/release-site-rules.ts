import { SiteRulesRejected } from '../domain/errors.js';
import { compileSiteRules, SITE_RULE_LIMITS, type SiteRules } from '../domain/site-rules.js';
import type { ReleaseRules, RulesOf } from './ports/release-rules.js';
import type { StagedRelease } from './ports/staging.js';

/**
 * Compiles a staged release's rule files into it, before it is published: a line
 * sitedrop cannot honour refuses the deploy (SiteRulesRejected), and nothing changes.
 */
export async function compileStagedRules(rules: ReleaseRules, staged: StagedRelease): Promise<SiteRules> {
  const of = { staged };
  const compiled = compileSiteRules(await rules.files(of, SITE_RULE_LIMITS.fileBytes));
  await rules.write(of, compiled);
  return compiled;
}

/**
 * The rules of a committed release, about to be served again (a rollback, a promote, a
 * start-up). One published before sitedrop compiled rules gets them compiled now; if
 * its files cannot be honoured, it is served with none (its rule files never are served).
 */
export async function rulesOfRelease(rules: ReleaseRules, of: RulesOf): Promise<SiteRules> {
  if (await rules.isCompiled(of)) return rules.compiled(of);
  try {
    const compiled = compileSiteRules(await rules.files(of, SITE_RULE_LIMITS.fileBytes));
    await rules.write(of, compiled);
    return compiled;
  } catch (error) {
    if (error instanceof SiteRulesRejected) return compileSiteRules({});
    throw error;
  }
}
