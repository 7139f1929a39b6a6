import { parseHeaders } from './header-rules.js';
import { isExternalTarget, parseRedirects, type RedirectStatus } from './redirect-rules.js';
import { compilePattern } from './site-path-pattern.js';

export { SITE_RULE_LIMITS } from './rule-file-text.js';
export type { RedirectStatus } from './redirect-rules.js';

export interface CompiledRedirect {
  readonly line: number;
  /** Anchored regex source over the site-relative decoded request path (starts with '/'), valid in JavaScript AND Go RE2: only plain capturing groups (...) and non-capturing (?:...), character classes, no lookaround, no backrefs, no named groups. */
  readonly match: string;
  /** The name of each capturing group in `match`, in order ('splat' for the `*`). */
  readonly params: readonly string[];
  /** Every path `match` matches starts with this (decoded): a cheap test before the regex. */
  readonly prefix: string;
  /** The target as written in the file (after validation), with `:name`/`:splat` still to fill. */
  readonly to: string;
  readonly status: RedirectStatus;
  readonly force: boolean;
  /** `to` is an absolute http(s) URL (only allowed with 3xx). */
  readonly external: boolean;
}

export interface CompiledHeaderBlock {
  readonly line: number;
  /** Same regex rules as CompiledRedirect's. */
  readonly match: string;
  readonly params: readonly string[];
  readonly prefix: string;
  /** In file order; names as written (case kept). */
  readonly headers: readonly { readonly name: string; readonly value: string }[];
}

/** What a release asks of the web server, ready for an adapter to turn into configuration. */
export interface SiteRules {
  readonly redirects: readonly CompiledRedirect[];
  readonly headers: readonly CompiledHeaderBlock[];
}

/** Parses and validates both files (undefined: absent); throws SiteRulesRejected naming the file and line. Absent files give empty lists. */
export function compileSiteRules(files: { readonly redirects?: string; readonly headers?: string }): SiteRules {
  const redirects = parseRedirects(files.redirects ?? '').map(({ line, from, to, status, force }) => ({
    line,
    ...compilePattern(from),
    to,
    status,
    force,
    external: isExternalTarget(to),
  }));
  const headers = parseHeaders(files.headers ?? '').map(({ line, path, headers }) => ({ line, ...compilePattern(path), headers }));
  return { redirects, headers };
}

/** True when the rules do nothing: no redirect, and no header block with a header in it. */
export function hasNoRules(rules: SiteRules): boolean {
  return rules.redirects.length === 0 && rules.headers.every((b) => b.headers.length === 0);
}

/**
 * Fills a rule's target from a match's captured groups (in `params` order): each `:name` whose
 * name is a param takes its value as captured (a group that took no part gives ''). Used by
 * tests and by the Caddy adapter's checks; the nginx/njs side does the same thing in JS.
 */
export function fillTarget(to: string, params: readonly string[], values: readonly (string | undefined)[]): string {
  return to.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name: string) => {
    const i = params.indexOf(name);
    return i === -1 ? whole : (values[i] ?? '');
  });
}

/** The headers a request path gets: every matching block in file order, a name set by several blocks joined with ', ' (names compared case-insensitively, first spelling kept). */
export function headersFor(rules: SiteRules, path: string): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  const byName = new Map<string, { name: string; value: string }>();
  for (const block of rules.headers) {
    if (!regexOf(block.match).test(path)) continue;
    for (const { name, value } of block.headers) {
      const seen = byName.get(name.toLowerCase());
      if (seen !== undefined) seen.value = `${seen.value}, ${value}`;
      else {
        const header = { name, value };
        byName.set(name.toLowerCase(), header);
        out.push(header);
      }
    }
  }
  return out;
}

/** The first redirect rule matching `path` among those with force === forced, with its filled target; undefined if none. */
export function redirectFor(rules: SiteRules, path: string, forced: boolean): { rule: CompiledRedirect; target: string } | undefined {
  for (const rule of rules.redirects) {
    if (rule.force !== forced) continue;
    const found = regexOf(rule.match).exec(path);
    if (found !== null) return { rule, target: fillTarget(rule.to, rule.params, found.slice(1)) };
  }
  return undefined;
}

// Sources repeat across sites (`^(?:/(.*))?$`…); compiling each once keeps the oracle cheap in property tests.
const compiled = new Map<string, RegExp>();
function regexOf(source: string): RegExp {
  let regex = compiled.get(source);
  if (regex === undefined) {
    if (compiled.size > 10_000) compiled.clear();
    regex = new RegExp(source);
    compiled.set(source, regex);
  }
  return regex;
}
