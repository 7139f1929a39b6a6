import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SiteRulesRejected } from '../../src/domain/errors.js';
import { parseHeaders, printHeaders, type HeaderBlock } from '../../src/domain/header-rules.js';
import { pattern, ruleText } from '../support/site-rule-arbitraries.js';

const refusal = (text: string) => {
  try {
    parseHeaders(text);
  } catch (error) {
    expect(error).toBeInstanceOf(SiteRulesRejected);
    return error as SiteRulesRejected;
  }
  throw new Error(`accepted: ${JSON.stringify(text)}`);
};
const withoutLines = (blocks: readonly HeaderBlock[]) => blocks.map(({ line: _, ...rest }) => rest);
const REFUSED = ['Content-Length', 'Transfer-Encoding', 'Content-Encoding', 'Content-Range', 'Connection', 'Date', 'Server', 'Location', 'Trailer', 'Upgrade', 'Accept-Ranges', 'Age', 'Allow', 'Alt-Svc'];

describe('_headers', () => {
  it('reads path lines and their indented headers, with comments, blanks, CRLF and a BOM', () => {
    const text = '\uFEFF# site-wide\r\n/*\r\n  X-Frame-Options: DENY\r\n\tcache-control:max-age=60  \r\n  # a comment\r\n\r\n/assets/*  # hashed\n  Cache-Control: public, max-age=31536000, immutable\n  X-Empty:\n  Link: </a.css>; rel=preload; as=style # not a comment\n/empty/\n';
    expect(parseHeaders(text)).toEqual([
      { line: 2, path: '/*', headers: [{ name: 'X-Frame-Options', value: 'DENY' }, { name: 'cache-control', value: 'max-age=60' }] },
      { line: 7, path: '/assets/*', headers: [{ name: 'Cache-Control', value: 'public, max-age=31536000, immutable' }, { name: 'X-Empty', value: '' }, { name: 'Link', value: '</a.css>; rel=preload; as=style # not a comment' }] },
      { line: 11, path: '/empty/', headers: [] },
    ]);
    expect(parseHeaders('')).toEqual([]);
  });

  it.each([
    ['/a\n  X-A 1', "expected 'Name: value'"],
    ['/a\n  Bad Name: 1', "invalid header name 'Bad Name'"],
    ['/a\n  : 1', "invalid header name ''"],
    ['/a\n  X(A): 1', 'invalid header name'],
    ['/a\n  X-Ü: 1', 'invalid header name'],
    ['/a\n  X-A: a\u0001b', 'invalid header value'],
    ['/a\n  X-A: a\u007fb', 'invalid header value'],
    ['/a\n  X-A: a\rb', 'invalid header value'],
    ['/a\n  X-A: a\u000bb', 'invalid header value'],
    ['/a\n  X-A: \uDC00', 'invalid header value'],
    ['/a\nX-A: 1', 'a header line must be indented'],
    ['/a /b', 'a path line holds one path'],
    ['a', "a path must start with '/'"],
    ['/a?x', 'query and fragment matching are not supported'],
    ['/a/../b', "'.' or '..' segments"],
    ['/a/%2e%2e', "'.' or '..' segments"],
    ['/a/*/b', "'*' is allowed only at the end"],
    ...REFUSED.map((name) => [`/a\n  ${name}: x`, `header '${name}' may not be set`]),
    ['/a\n  content-LENGTH: 1', "header 'content-LENGTH' may not be set"],
  ])('refuses %j: %s', (body, reason) => {
    const lines = body.split('\n').length;
    const error = refusal(`# first\n/ok\n  X-Ok: 1\n${body}\n/after\n`);
    expect(error.file).toBe('_headers');
    expect(error.line).toBe(3 + lines);
    expect(error.reason).toContain(reason);
    expect(error.message).toBe(`invalid _headers: line ${3 + lines}: ${error.reason}`);
  });

  it('refuses a header line before any path, and a tab in a value (every control is refused)', () => {
    expect(refusal('# c\n\n  X-A: 1\n/a').message).toBe('invalid _headers: line 3: header line before any path');
    expect(refusal('/a\n  X-A: a\tb').message).toBe('invalid _headers: line 2: invalid header value');
  });

  it('takes 100 blocks and refuses the 101st at its line', () => {
    const blocks = Array.from({ length: 100 }, (_, i) => `/p${i}\n  X-N: ${i}`);
    expect(parseHeaders(blocks.join('\n'))).toHaveLength(100);
    const error = refusal(`${blocks.join('\n')}\n# more\n/p100\n  X-N: 100`);
    expect(error.line).toBe(202);
    expect(error.message).toBe('invalid _headers: line 202: more than 100 header blocks');
  });

  it('takes 1,000 header lines over every block and refuses the 1,001st at its line: each costs every request of the site', () => {
    const lines = Array.from({ length: 1000 }, (_, i) => `  X-N: ${i}`);
    expect(parseHeaders(`/a\n${lines.slice(0, 600).join('\n')}\n/b\n${lines.slice(600).join('\n')}`).flatMap((b) => b.headers)).toHaveLength(1000);
    const error = refusal(`/a\n${lines.join('\n')}\n/b\n  X-N: 1000`);
    expect(error.message).toBe('invalid _headers: line 1003: more than 1000 header lines');
  });

  it('refuses the headers whose effect reaches other sites on the shared origin', () => {
    for (const name of ['Set-Cookie', 'service-worker-allowed', 'Clear-Site-Data']) {
      expect(refusal(`/*\n  ${name}: x`).message).toBe(`invalid _headers: line 2: header '${name}' may not be set: its effect reaches other sites`);
    }
  });

  it('refuses a file over 1 MiB with no line, and a line over 4096 bytes at its line', () => {
    expect(refusal(`/a\n${'  X-A: 1\n'.repeat(120_000)}`).message).toBe('invalid _headers: larger than 1048576 bytes');
    expect(refusal(`/a\n  X-A: ${'v'.repeat(4090)}`).message).toBe('invalid _headers: line 2: longer than 4096 bytes');
  });

  it('prints blocks that parse back to the same blocks', () => {
    // A name starting with '#' cannot be written: its line is a comment.
    const name = fc.stringMatching(/^[!$%&'*+.^_`|~0-9A-Za-z-][!#$%&'*+.^_`|~0-9A-Za-z-]{0,11}$/).filter((n) => !/^(content-(length|encoding|range)|transfer-encoding|connection|date|server|location|trailer|upgrade|accept-ranges|age|allow|alt-svc|set-cookie|service-worker-allowed|clear-site-data)$/i.test(n) && !Object.getOwnPropertyNames(Object.prototype).some((p) => p.toLowerCase() === n.toLowerCase()));
    const value = fc.string({ unit: fc.constantFrom('a', ' ', ':', '#', ',', ';', '=', '"', 'é', '😀'), maxLength: 12 }).map((v) => v.replace(/^[ \t]+|[ \t]+$/g, ''));
    const block = fc.record({ line: fc.constant(0), path: pattern.map((p) => p.pattern), headers: fc.array(fc.record({ name, value }), { maxLength: 4 }) });
    fc.assert(
      fc.property(fc.array(block, { maxLength: 10 }), (blocks) => {
        expect(withoutLines(parseHeaders(printHeaders(blocks)))).toEqual(withoutLines(blocks));
      }),
    );
  });

  it('throws nothing but SiteRulesRejected for any text, and what it accepts prints back to itself', () => {
    fc.assert(
      fc.property(ruleText, (text) => {
        let blocks: HeaderBlock[];
        try {
          blocks = parseHeaders(text);
        } catch (error) {
          expect(error).toBeInstanceOf(SiteRulesRejected);
          return;
        }
        expect(withoutLines(parseHeaders(printHeaders(blocks)))).toEqual(withoutLines(blocks));
      }),
      { numRuns: 3000 },
    );
  });
});
