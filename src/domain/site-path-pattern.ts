import { CONTROL, decodeOnce, hasSegment, LONE_SURROGATE, quote, RuleReason } from './rule-file-text.js';

/** A placeholder's name, as `_redirects` writes it after the `:`. */
export const PLACEHOLDER_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Compiles a site path pattern (`/a/:name/*`, `/a*`, `/docs/`) to an anchored regex over the
 * decoded request path, with the name of each capturing group in order (`splat` for the `*`).
 * The regex is written in the part of the syntax JavaScript, PCRE and Go's RE2 read alike:
 * `^ $`, `\.`, `\xHH` for any other ASCII punctuation or blank (so that no config file needs
 * to quote it), `([^/]+)`, `(.*)`, `(?:/(.*))?` and `/?`.
 * `prefix` is the decoded text every matching path starts with: a string test that lets a
 * web server skip the regex of most rules.
 * Throws RuleReason (an Error) with the reason a pattern is refused.
 */
export function compilePattern(pattern: string): { match: string; params: string[]; prefix: string } {
  checkText(pattern);
  const { body, tail } = splitTail(pattern);
  if (body === '/') return { match: '^/$', params: [], prefix: '/' };
  const segments = (body.endsWith('/') && tail === '/?' ? body.slice(0, -1) : body).split('/').slice(1);
  const params: string[] = [];
  let match = '^';
  // The decoded text every matching path starts with: the literal segments before any placeholder.
  let prefix = '';
  segments.forEach((segment, i) => {
    if (segment === '') throw new RuleReason(`empty segment in ${quote(pattern)}`);
    match += '/';
    if (params.length === 0) prefix += '/';
    if (!segment.startsWith(':')) {
      match += literal(segment, pattern);
      if (params.length === 0) prefix += decodeOnce(segment)!;
      return;
    }
    const name = segment.slice(1);
    if (!PLACEHOLDER_NAME.test(name)) throw new RuleReason(`a placeholder is a whole segment ':name' of letters, digits and '_': ${quote(segment)}`);
    if (name === 'splat') throw new RuleReason(`':splat' is the name of '*', not a placeholder`);
    if (params.includes(name)) throw new RuleReason(`placeholder ':${name}' is used twice`);
    if (tail === '(.*)' && i === segments.length - 1) throw new RuleReason(`a placeholder is a whole segment: ${quote(`${segment}*`)}`);
    params.push(name);
    match += '([^/]+)';
  });
  match += tail;
  if (tail !== '/?') params.push('splat');
  return { match: `${match}$`, params, prefix };
}

function checkText(pattern: string): void {
  if (!pattern.startsWith('/')) throw new RuleReason(`a path must start with '/': ${quote(pattern)}`);
  if (CONTROL.test(pattern) || LONE_SURROGATE.test(pattern)) throw new RuleReason(`control characters are not allowed in a path`);
  if (/[?#]/.test(pattern)) throw new RuleReason(`query and fragment matching are not supported: ${quote(pattern)}`);
  if (pattern.includes('\\')) throw new RuleReason(`'\\' is not allowed in a path: ${quote(pattern)}`);
  const star = pattern.indexOf('*');
  if (star !== -1 && star !== pattern.length - 1) throw new RuleReason(`'*' is allowed only at the end: ${quote(pattern)}`);
  // Requests are matched decoded, and a server may decode once more: no decoding may hold '.' or '..'.
  if (hasSegment(pattern, ['.', '..'])) throw new RuleReason(`a path may not hold '.' or '..' segments: ${quote(pattern)}`);
}

/** The pattern without its trailing `*`, and what ends the regex: the splat, or an optional trailing slash. */
function splitTail(pattern: string): { body: string; tail: '(?:/(.*))?' | '(.*)' | '/?' } {
  if (pattern.endsWith('/*')) return { body: pattern.slice(0, -2), tail: '(?:/(.*))?' };
  if (pattern.endsWith('*')) return { body: pattern.slice(0, -1), tail: '(.*)' };
  return { body: pattern, tail: '/?' };
}

function literal(segment: string, pattern: string): string {
  const decoded = decodeOnce(segment);
  if (decoded === undefined) throw new RuleReason(`malformed percent-escape in ${quote(pattern)}`);
  if (CONTROL.test(decoded)) throw new RuleReason(`control characters are not allowed in a path`);
  if (decoded.includes('\\')) throw new RuleReason(`'\\' is not allowed in a path: ${quote(pattern)}`);
  let source = '';
  for (const char of decoded) {
    if (/^[A-Za-z0-9/_~-]$/.test(char)) source += char;
    else if (char === '.') source += '\\.';
    else if (char.charCodeAt(0) < 0x80) source += `\\x${char.charCodeAt(0).toString(16).padStart(2, '0').toUpperCase()}`;
    else source += char;
  }
  return source;
}
