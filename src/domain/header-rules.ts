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

/** Parses `_headers`; throws SiteRulesRejected naming the first line sitedrop cannot honour. */
export function parseHeaders(text: string): HeaderBlock[] {
  const refuse = (line: number | undefined, reason: string) => new SiteRulesRejected('_headers', line, reason);
  const blocks: { line: number; path: string; headers: { name: string; value: string }[] }[] = [];
  for (const { line, text: content } of ruleLines(text, refuse)) {
    try {
      if (/^[ \t]/.test(content)) {
        const block = blocks[blocks.length - 1];
        if (block === undefined) throw new RuleReason('header line before any path');
        block.headers.push(parseHeader(content));
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
  if (CONTROL.test(value) || LONE_SURROGATE.test(value)) throw new RuleReason('invalid header value');
  return { name, value };
}
