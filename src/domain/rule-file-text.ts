/**
 * What `_redirects` and `_headers` share: how their text is cut into lines and fields,
 * the limits on it, and the checks that every decoding of a path is held to.
 */
/**
 * `headerLines` bounds every request's work on the site's headers, and the web server's
 * configuration (Caddy adapts every site's at each load): a 1 MiB file of header lines
 * took nginx seconds a request and Caddy minutes a load (docs/security.md).
 */
export const SITE_RULE_LIMITS = { redirects: 2000, headerBlocks: 100, headerLines: 1000, fileBytes: 1024 * 1024, lineBytes: 4096 } as const;

/** C0 controls and DEL: never in a path, a target or a header value. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
export const CONTROL = /[\x00-\x1f\x7f]/;
/** Half a surrogate pair: not text, and no web server would see the same path. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** Past this many layers of percent-encoding a path is refused rather than decoded further. */
const MAX_DECODINGS = 16;

/** Why a line is refused; the parsers turn it into SiteRulesRejected with the file and line. Any other error is a bug. */
export class RuleReason extends Error {}

export interface RuleLine {
  readonly line: number;
  readonly text: string;
}

/**
 * Shows the offending token in a reason: control characters as \uXXXX, so a line cannot
 * forge lines in an answer or a log, and capped, so one line cannot make a huge message.
 */
export function quote(token: string): string {
  // eslint-disable-next-line no-control-regex
  const shown = token.replace(/[\x00-\x1f\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `'${shown.length > 80 ? `${shown.slice(0, 77)}...` : shown}'`;
}

/** The file's non-blank, non-comment lines; throws `refuse(line, reason)` for a file or line over the limits. */
export function ruleLines(text: string, refuse: (line: number | undefined, reason: string) => Error): RuleLine[] {
  if (overBytes(text, SITE_RULE_LIMITS.fileBytes)) throw refuse(undefined, `larger than ${SITE_RULE_LIMITS.fileBytes} bytes`);
  const lines = (text.startsWith('\uFEFF') ? text.slice(1) : text).split('\n');
  const kept: RuleLine[] = [];
  lines.forEach((raw, i) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (overBytes(line, SITE_RULE_LIMITS.lineBytes)) throw refuse(i + 1, `longer than ${SITE_RULE_LIMITS.lineBytes} bytes`);
    const trimmed = trimBlanks(line);
    if (trimmed === '' || trimmed.startsWith('#')) return;
    kept.push({ line: i + 1, text: line });
  });
  return kept;
}

/** Only spaces and tabs separate fields; any other blank is part of a field (and refused there if it is a control). */
export function trimBlanks(text: string): string {
  return text.replace(/^[ \t]+|[ \t]+$/g, '');
}

/** A line's fields, up to a field that starts a `#` comment. */
export function fieldsOf(line: string): string[] {
  const fields = trimBlanks(line).split(/[ \t]+/);
  const comment = fields.findIndex((f) => f.startsWith('#'));
  return comment === -1 ? fields : fields.slice(0, comment);
}

/** Percent-decodes once as a request path is; undefined for a malformed escape (bad hex, not UTF-8). */
export function decodeOnce(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * Whether any decoding of `text` (as written, then each `%XX` decoded again, byte by byte so a
 * malformed escape elsewhere cannot hide one) has one of `names` as a segment, counting `\`,
 * `?` and `#` as separators too: some server or browser on the way may read them so.
 */
export function hasSegment(text: string, names: readonly string[]): boolean {
  let current = text;
  for (let depth = 0; depth <= MAX_DECODINGS; depth++) {
    if (current.split(/[/\\?#]/).some((s) => names.includes(s))) return true;
    const next = current.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === current) return false;
    current = next;
  }
  throw new RuleReason(`too many layers of percent-encoding in ${quote(text)}`);
}

/** UTF-8 length over `limit`, counted only when the string's length cannot decide it. */
function overBytes(text: string, limit: number): boolean {
  if (text.length > limit) return true;
  if (text.length * 3 <= limit) return false;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes > limit;
}
