import { SiteRulesRejected } from './errors.js';
import { compilePattern } from './site-path-pattern.js';
import { CONTROL, fieldsOf, LONE_SURROGATE, quote, RuleReason, ruleLines, SITE_RULE_LIMITS, trimBlanks } from './rule-file-text.js';

/** A path line of `_headers` and the indented `Name: value` lines under it, as written. */
export interface HeaderBlock {
  readonly line: number;
  readonly path: string;
  readonly headers: readonly { name: string; value: string }[];
}

/** RFC 9110's token: what a header name may be. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Framing, connection and server-owned headers: set by a site they would break responses or lie about them. */
const REFUSED = [
  'content-length', 'transfer-encoding', 'content-encoding', 'content-range', 'connection', 'date', 'server',
  'location', 'trailer', 'upgrade', 'accept-ranges', 'age', 'allow', 'alt-svc',
];
/**
 * Headers whose effect reaches past the site: every site shares one origin at its path
 * address, so a cookie may be set for another site's path (HttpOnly, which no script can),
 * a service worker allowed the whole origin answers every site's requests, and clearing
 * site data clears every site's.
 */
const ORIGIN_WIDE = ['set-cookie', 'service-worker-allowed', 'clear-site-data'];
/** Names of every script object's own properties (`constructor`, `__proto__`, `toString`, …): nginx's script engine cannot set them as headers. */
const BUILT_IN = Object.getOwnPropertyNames(Object.prototype).map((name) => name.toLowerCase());

/** Parses `_headers`; throws SiteRulesRejected naming the first line sitedrop cannot honour. */
export function parseHeaders(text: string): HeaderBlock[] {
  const refuse = (line: number | undefined, reason: string) => new SiteRulesRejected('_headers', line, reason);
  const blocks: { line: number; path: string; headers: { name: string; value: string }[] }[] = [];
  let headerLines = 0;
  for (const { line, text: content } of ruleLines(text, refuse)) {
    try {
      if (/^[ \t]/.test(content)) {
        const block = blocks[blocks.length - 1];
        if (block === undefined) throw new RuleReason('header line before any path');
        if (headerLines === SITE_RULE_LIMITS.headerLines) throw new RuleReason(`more than ${SITE_RULE_LIMITS.headerLines} header lines`);
        block.headers.push(parseHeader(content));
        headerLines += 1;
        continue;
      }
      if (blocks.length === SITE_RULE_LIMITS.headerBlocks) throw new RuleReason(`more than ${SITE_RULE_LIMITS.headerBlocks} header blocks`);
      blocks.push({ line, path: parsePath(content), headers: [] });
    } catch (error) {
      if (error instanceof RuleReason) throw refuse(line, error.message);
      throw error;
    }
  }
  return blocks;
}

/** Writes blocks back, headers indented by two spaces; parsing the result gives the same blocks (but for line numbers). */
export function printHeaders(blocks: readonly HeaderBlock[]): string {
  return blocks.map((b) => `${b.path}\n${b.headers.map((h) => `  ${h.name}: ${h.value}\n`).join('')}`).join('');
}

function parsePath(content: string): string {
  const fields = fieldsOf(content);
  const path = fields[0]!;
  if (!path.startsWith('/') && /^[^/]*:/.test(content)) throw new RuleReason(`a header line must be indented under its path: ${quote(trimBlanks(content))}`);
  if (fields.length > 1) throw new RuleReason(`a path line holds one path: ${quote(trimBlanks(content))}`);
  compilePattern(path);
  return path;
}

function parseHeader(content: string): { name: string; value: string } {
  const text = trimBlanks(content);
  const colon = text.indexOf(':');
  if (colon === -1) throw new RuleReason(`expected 'Name: value': ${quote(text)}`);
  const name = trimBlanks(text.slice(0, colon));
  const value = trimBlanks(text.slice(colon + 1));
  if (!TOKEN.test(name)) throw new RuleReason(`invalid header name ${quote(name)}`);
  if (REFUSED.includes(name.toLowerCase())) throw new RuleReason(`header ${quote(name)} may not be set`);
  if (ORIGIN_WIDE.includes(name.toLowerCase())) throw new RuleReason(`header ${quote(name)} may not be set: its effect reaches other sites`);
  if (BUILT_IN.includes(name.toLowerCase())) throw new RuleReason(`invalid header name ${quote(name)}`);
  if (CONTROL.test(value) || LONE_SURROGATE.test(value)) throw new RuleReason('invalid header value');
  return { name, value };
}
