import { SiteRulesRejected } from './errors.js';
import { compilePattern } from './site-path-pattern.js';
import { CONTROL, decodeOnce, fieldsOf, hasSegment, LONE_SURROGATE, quote, RuleReason, ruleLines, SITE_RULE_LIMITS } from './rule-file-text.js';

export type RedirectStatus = 200 | 301 | 302 | 303 | 307 | 308 | 404;

/** One line of `_redirects`, validated, as written (its `from` and `to` are not decoded). */
export interface RedirectRule {
  readonly line: number;
  readonly from: string;
  readonly to: string;
  readonly status: RedirectStatus;
  readonly force: boolean;
  /** The line wrote its status (the default, 301, is printed back only if it was written). */
  readonly explicitStatus: boolean;
}

const STATUS = /^(200|301|302|303|307|308|404)(!?)$/;
/** `Country=us`, `id=:id`: Netlify's conditions and query matching, which no generated config honours. */
const KEY_VALUE = /^([A-Za-z][A-Za-z0-9_.-]*)=/;
const CONDITIONS = ['country', 'language', 'role', 'cookie'];
const PLACEHOLDERS = /:([A-Za-z_][A-Za-z0-9_]*)/g;

/** Parses `_redirects`; throws SiteRulesRejected naming the first line sitedrop cannot honour. */
export function parseRedirects(text: string): RedirectRule[] {
  const refuse = (line: number | undefined, reason: string) => new SiteRulesRejected('_redirects', line, reason);
  const rules: RedirectRule[] = [];
  for (const { line, text: content } of ruleLines(text, refuse)) {
    if (rules.length === SITE_RULE_LIMITS.redirects) throw refuse(line, `more than ${SITE_RULE_LIMITS.redirects} redirect rules`);
    try {
      rules.push(parseRule(line, fieldsOf(content)));
    } catch (error) {
      if (error instanceof RuleReason) throw refuse(line, error.message);
      throw error;
    }
  }
  return rules;
}

/** Writes rules back one a line; parsing the result gives the same rules (but for line numbers). */
export function printRedirects(rules: readonly RedirectRule[]): string {
  return rules.map((r) => `${r.from} ${r.to}${r.explicitStatus || r.force ? ` ${r.status}${r.force ? '!' : ''}` : ''}\n`).join('');
}

/** Whether a target is an absolute http(s) URL rather than a path in the site. */
export function isExternalTarget(to: string): boolean {
  return !to.startsWith('/');
}

function parseRule(line: number, fields: string[]): RedirectRule {
  for (const field of fields.slice(1)) {
    const key = KEY_VALUE.exec(field)?.[1];
    if (key === undefined) continue;
    if (CONDITIONS.includes(key.toLowerCase())) throw new RuleReason(`conditions are not supported: ${quote(field)}`);
    throw new RuleReason(`query parameter matching is not supported: ${quote(field)}`);
  }
  if (fields.length < 2) throw new RuleReason(`expected 'from to [status]'`);
  if (fields.length > 3) throw new RuleReason(`too many fields: expected 'from to [status]'`);
  const [from, to, written] = fields as [string, string, string | undefined];
  let status: RedirectStatus = 301;
  let force = false;
  if (written !== undefined) {
    const parsed = STATUS.exec(written);
    if (parsed === null) throw new RuleReason(`unknown status ${quote(written)}`);
    status = Number(parsed[1]) as RedirectStatus;
    force = parsed[2] === '!';
  }
  const { params } = compilePattern(from);
  checkTarget(to, status, params);
  return { line, from, to, status, force, explicitStatus: written !== undefined };
}

/** Refuses a target that is neither a path in the site nor (for a 3xx) an http(s) URL, or that could leave the site. */
function checkTarget(to: string, status: RedirectStatus, params: readonly string[]): void {
  if (CONTROL.test(to) || LONE_SURROGATE.test(to)) throw new RuleReason(`control characters are not allowed in a target`);
  if (to.startsWith('/') && !to.startsWith('//')) checkPathTarget(to, status);
  else checkUrlTarget(to, status);
  for (const [, name] of to.matchAll(PLACEHOLDERS)) {
    if (params.includes(name!)) continue;
    if (name === 'splat') throw new RuleReason(`':splat' needs a '*' at the end of the pattern`);
    throw new RuleReason(`':${name}' is not defined by the pattern`);
  }
}

function checkPathTarget(to: string, status: RedirectStatus): void {
  const end = to.search(/[?#]/);
  const path = end === -1 ? to : to.slice(0, end);
  if (hasSegment(path, ['..'])) throw new RuleReason(`target leaves the site: ${quote(to)}`);
  if (path.includes('\\')) throw new RuleReason(`'\\' is not allowed in a target: ${quote(to)}`);
  const decoded = decodeOnce(path);
  if (decoded === undefined) throw new RuleReason(`malformed percent-escape in ${quote(to)}`);
  if (CONTROL.test(decoded)) throw new RuleReason(`control characters are not allowed in a target`);
  if (end !== -1 && (status === 200 || status === 404)) throw new RuleReason(`a rewrite target is a path, not a query: ${quote(to)}`);
}

function checkUrlTarget(to: string, status: RedirectStatus): void {
  let url: URL | undefined;
  try {
    url = /^https?:\/\//i.test(to) ? new URL(to) : undefined;
  } catch {
    url = undefined;
  }
  if (url === undefined || url.hostname === '') throw new RuleReason(`neither a path nor an http(s) URL: ${quote(to)}`);
  if (status === 200) throw new RuleReason(`proxying to another host is not supported: ${quote(to)}`);
  if (status === 404) throw new RuleReason(`a 404 target must be a path in the site: ${quote(to)}`);
}
