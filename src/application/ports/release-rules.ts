import type { ServiceIdentifier } from 'inversify';
import type { ProjectName } from '../../domain/project-name.js';
import type { ReleaseId } from '../../domain/release-id.js';
import type { SiteRules } from '../../domain/site-rules.js';
import type { Username } from '../../domain/username.js';
import type { StagedRelease } from './staging.js';

/** A site's rule files as written, each undefined when the site has none. */
export interface RuleFiles {
  readonly redirects?: string;
  readonly headers?: string;
}

/** A release staged for publishing, or one committed already. */
export type RulesOf = { readonly staged: StagedRelease } | { readonly user: Username; readonly project: ProjectName; readonly release: ReleaseId };

/**
 * The rules a release asks of its web server: the rule files at its root (`_redirects`,
 * `_headers`), and beside them, under `.sitedrop/`, the rules compiled where the web
 * server reads them. They travel with the release's files, so every swap, rollback and
 * promote switches both at once.
 */
export interface ReleaseRules {
  /** The rule files at the release's root. A file over `maxBytes`, or that is not a regular file, throws SiteRulesRejected. */
  files(of: RulesOf, maxBytes: number): Promise<RuleFiles>;
  /** Whether the release's rules were compiled (a release from before compiling has raw files only). */
  isCompiled(of: RulesOf): Promise<boolean>;
  /** Writes the compiled rules into the release, durably (nothing when they do nothing). */
  write(of: RulesOf, rules: SiteRules): Promise<void>;
  /** The release's compiled rules; no rules when it has none compiled. */
  compiled(of: RulesOf): Promise<SiteRules>;
}

export const RELEASE_RULES = Symbol.for('sitedrop.ReleaseRules') as ServiceIdentifier<ReleaseRules>;
