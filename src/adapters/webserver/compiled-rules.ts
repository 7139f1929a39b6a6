import { RESERVED_DIRECTORY } from '../../domain/archive-policy.js';
import type { CompiledRedirect, SiteRules } from '../../domain/site-rules.js';

/**
 * How a release's compiled rules lie on disk, under `.sitedrop/` in the release, for the
 * nginx router (nginx/sitedrop-router.js) to read at request time. Split in two so that
 * a request for a file reads only the small part: `head.json` holds what every request
 * may need (forced rules, headers, and how many other rules there are); `redirects.json`
 * the rules that apply only when no file matches, read only then.
 */
export const RULES_DIRECTORY = RESERVED_DIRECTORY;
export const HEAD_FILE = 'head.json';
export const REDIRECTS_FILE = 'redirects.json';

interface Head {
  readonly forced: readonly CompiledRedirect[];
  readonly headers: SiteRules['headers'];
  readonly redirects: number;
}

/** The files to write, in the order to write them (the head, which says they are there, last); none for rules that do nothing. */
export function rulesFiles(rules: SiteRules): { name: string; text: string }[] {
  if (rules.redirects.length === 0 && rules.headers.length === 0) return [];
  const forced = rules.redirects.filter((r) => r.force);
  const rest = rules.redirects.filter((r) => !r.force);
  const head: Head = { forced, headers: rules.headers, redirects: rest.length };
  return [
    { name: REDIRECTS_FILE, text: JSON.stringify(rest) },
    { name: HEAD_FILE, text: JSON.stringify(head) },
  ];
}

/** The rules back from the two files' texts, in the file's order (lines ascending). */
export function rulesFromFiles(head: string, redirects: string): SiteRules {
  const { forced, headers } = JSON.parse(head) as Head;
  const rest = JSON.parse(redirects) as CompiledRedirect[];
  return { redirects: [...forced, ...rest].sort((a, b) => a.line - b.line), headers };
}
