import fc from 'fast-check';

/** Generators of valid site path patterns and redirect targets, shared by the rule-file property tests. */

/** One literal segment as written: plain text, dots inside names, escapes, characters that need escaping in a regex. */
export const literalSegment = fc.oneof(
  fc.stringMatching(/^[a-z0-9_-]{1,8}$/),
  fc.constantFrom('index.html', '.well-known', 'a.b.c', '%20', 'a%2Fb', 'ü', '(x)', '[y]', '{z}', 'a+b', '$', '^', '|', 'a:b', '%25', '~me', 'a%3Fb', 'π.html', '😀'),
);

const placeholderName = fc.stringMatching(/^[a-z_][a-z0-9_]{0,5}$/).filter((n) => n !== 'splat');

export interface GeneratedPattern {
  readonly pattern: string;
  /** Segments as written: a placeholder has its name. */
  readonly segments: readonly { readonly text: string; readonly name: string | undefined }[];
  readonly names: readonly string[];
  readonly tail: '' | '/' | '/*' | '*';
}

/** A valid pattern: literal and placeholder segments (unique names), then nothing, '/', '/*' or '*'. */
export const pattern: fc.Arbitrary<GeneratedPattern> = fc
  .tuple(
    fc.array(fc.oneof(literalSegment.map((text) => ({ text, name: undefined })), placeholderName.map((name) => ({ text: `:${name}`, name }))), { maxLength: 5 }),
    fc.constantFrom('' as const, '/' as const, '/*' as const, '*' as const),
  )
  .map(([segments, tail]) => {
    const seen = new Set<string>();
    const unique = segments.filter((s) => s.name === undefined || (!seen.has(s.name) && seen.add(s.name)));
    // '*' directly after a placeholder would make the placeholder less than a whole segment.
    const last = unique[unique.length - 1];
    const safeTail = tail === '*' && (last === undefined || last.name !== undefined) ? '/*' : tail;
    const body = unique.map((s) => `/${s.text}`).join('');
    const names = unique.flatMap((s) => (s.name === undefined ? [] : [s.name]));
    if (body === '') return { pattern: safeTail === '/*' ? '/*' : '/', segments: [], names, tail: safeTail === '/*' ? ('/*' as const) : ('' as const) };
    return { pattern: `${body}${safeTail}`, segments: unique, names, tail: safeTail };
  });

/** Any UTF-16 code unit, lone surrogates and controls included: what a hostile file could hold. */
export const anyCodeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

/** Pieces rule files are made of, valid and not, so that random lines reach deep into the parsers. */
export const ruleToken = fc.oneof(
  fc.constantFrom('/', '/*', '/a', '/a/*', '/:x', '/:splat', ':splat', ':x', '*', '..', '%2e%2e', '%252e', '%', '%zz', '%C0%AE', '\\', '?', '#', '!', '301', '200!', '404', '418', 'Country=us', 'id=:id', 'https://example.com/:splat', 'http://', 'ftp://x', '//evil', 'X-A:', 'Content-Length: 1', 'a: b', ' ', '\t', '\r', '\u0000', '\u007f', '\uFEFF', '\uD800'),
  fc.string({ unit: anyCodeUnit, maxLength: 6 }),
);
export const ruleLine = fc.array(ruleToken, { maxLength: 6 }).map((tokens) => tokens.join(''));
const blank = fc.constantFrom(' ', '\t', '  ', ' \t');
const path = fc.oneof({ arbitrary: pattern.map((p) => p.pattern), weight: 6 }, ruleToken, ruleLine);
const target = fc.oneof({ arbitrary: fc.constantFrom('/x', '/x/:splat', '/', 'https://example.com/:splat', '/a%20b?q=1'), weight: 6 }, path);
/** Lines shaped like rules (fields, or an indented header) whose fields may each be valid or not. */
const shapedLine = fc.oneof(
  fc.tuple(path, blank, target, fc.constantFrom('', '', ' 301', ' 200', ' 404!', ' 302!', ' 308 # c', ' 418', ' Role=x')).map(([a, b, c, d]) => `${a}${b}${c}${d}`),
  path,
  fc.tuple(blank, fc.constantFrom('X-A', 'Cache-Control', 'x-a', 'Bad Name', 'Server', ''), fc.constantFrom(':', ': ', ' : ', ''), fc.oneof(ruleToken, fc.constantFrom('max-age=1', '', 'a, b'))).map(([b, n, c, v]) => `${b}${n}${c}${v}`),
);
export const ruleText = fc
  .array(fc.oneof({ arbitrary: shapedLine, weight: 12 }, { arbitrary: ruleLine, weight: 1 }, { arbitrary: ruleToken.map((t) => ` ${t}`), weight: 1 }), { maxLength: 6 })
  .chain((lines) => fc.constantFrom('\n', '\r\n').map((eol) => lines.join(eol)));

/** A decoded request path that `p` matches: `values` fill its placeholders in turn, `splat` its `*`, `slash` adds a trailing '/'. */
export function pathFor(p: GeneratedPattern, values: readonly string[], splat: string, slash: boolean): string {
  let n = 0;
  let path = p.segments.map((s) => `/${s.name === undefined ? decodeURIComponent(s.text) : values[n++ % values.length]!}`).join('');
  if (p.tail === '/*') path += splat === '' && slash ? '' : `/${splat}`;
  else if (p.tail === '*') path += splat;
  else if (slash && path !== '') path += '/';
  return path === '' ? '/' : path;
}
