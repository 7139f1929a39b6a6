import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SiteRulesRejected } from '../../src/domain/errors.js';
import { parseRedirects, printRedirects, type RedirectRule } from '../../src/domain/redirect-rules.js';
import { pattern, ruleText } from '../support/site-rule-arbitraries.js';

const refusal = (text: string) => {
  try {
    parseRedirects(text);
  } catch (error) {
    expect(error).toBeInstanceOf(SiteRulesRejected);
    return error as SiteRulesRejected;
  }
  throw new Error(`accepted: ${JSON.stringify(text)}`);
};
const withoutLines = (rules: readonly RedirectRule[]) => rules.map(({ line: _, ...rest }) => rest);

/** `..` however a target could spell it: escaped, escaped twice or thrice, either case, `\` or an escaped slash around it. */
const dotDot = fc.constantFrom('..', '%2e%2e', '%2E%2E', '.%2e', '%2e.', '%252e%252e', '%25252e%25252E', '.%252E', '%2525252e%2e');
const separator = fc.constantFrom('/', '\\', '%2f', '%2F', '%5c', '%5C', '%252f', '%255c');

describe('_redirects', () => {
  it('reads every rule kind, skipping blanks and comments, with CRLF and a BOM', () => {
    const text = '\uFEFF# moved pages\r\n\r\n/old /new\r\n  /a/*\t/b/:splat   200!  # keep\n/u/:id /users/:id?tab=1 302\n/x/* https://example.com/:splat 308\n/y /z 404\n/g /h 303!\n/i /j 307\n/k /l 301\r';
    expect(parseRedirects(text)).toEqual([
      { line: 3, from: '/old', to: '/new', status: 301, force: false, explicitStatus: false },
      { line: 4, from: '/a/*', to: '/b/:splat', status: 200, force: true, explicitStatus: true },
      { line: 5, from: '/u/:id', to: '/users/:id?tab=1', status: 302, force: false, explicitStatus: true },
      { line: 6, from: '/x/*', to: 'https://example.com/:splat', status: 308, force: false, explicitStatus: true },
      { line: 7, from: '/y', to: '/z', status: 404, force: false, explicitStatus: true },
      { line: 8, from: '/g', to: '/h', status: 303, force: true, explicitStatus: true },
      { line: 9, from: '/i', to: '/j', status: 307, force: false, explicitStatus: true },
      { line: 10, from: '/k', to: '/l', status: 301, force: false, explicitStatus: true },
    ]);
    expect(parseRedirects('')).toEqual([]);
    expect(parseRedirects('# only\n\n   \n')).toEqual([]);
  });

  it.each([
    ['/a', "expected 'from to [status]'"],
    ['/a /b 418', "unknown status '418'"],
    ['/a /b abc', "unknown status 'abc'"],
    ['/a /b 301!!', "unknown status '301!!'"],
    ['/a /b !', "unknown status '!'"],
    ['/a /b 301 302', 'too many fields'],
    ['/a /b 301 Country=us', "conditions are not supported: 'Country=us'"],
    ['/a /b 302 Language=en,de', 'conditions are not supported'],
    ['/a /b 200! Role=admin', 'conditions are not supported'],
    ['/a /b 301 cookie=x', 'conditions are not supported'],
    ['/store id=:id /blog/:id 301', "query parameter matching is not supported: 'id=:id'"],
    ['/a?x=1 /b', 'query and fragment matching are not supported'],
    ['a /b', "a path must start with '/'"],
    ['/a/../b /c', "'.' or '..' segments"],
    ['/a b', 'neither a path nor an http(s) URL'],
    ['/a ftp://example.com/', 'neither a path nor an http(s) URL'],
    ['/a javascript:alert(1)', 'neither a path nor an http(s) URL'],
    ['/a //evil.example/', 'neither a path nor an http(s) URL'],
    ['/a https://', 'neither a path nor an http(s) URL'],
    ['/a https://example.com/ 200', 'proxying to another host is not supported'],
    ['/a/* https://example.com/:splat 200!', 'proxying to another host is not supported'],
    ['/a https://example.com/ 404', 'a 404 target must be a path in the site'],
    ['/a /b/:splat', "':splat' needs a '*'"],
    ['/a/:id /b/:ids', "':ids' is not defined by the pattern"],
    ['/a /../etc/passwd', 'target leaves the site'],
    ['/a /b/%2e%2e/%2e%2e/c 200', 'target leaves the site'],
    ['/a /b\\..\\..\\c 302', 'target leaves the site'],
    ['/a /b\\c', "'\\' is not allowed in a target"],
    ['/a /b%zz', 'malformed percent-escape'],
    ['/a /b%00', 'control characters are not allowed in a target'],
    ['/a /b\u0007', 'control characters are not allowed in a target'],
    ['/a /b?x=1 200', 'a rewrite target is a path, not a query'],
    ['/a /b#top 404', 'a rewrite target is a path, not a query'],
  ])('refuses %j: %s', (line, reason) => {
    const error = refusal(`# first\n\n/ok /fine\n${line}\n/ok2 /fine`);
    expect(error.file).toBe('_redirects');
    expect(error.line).toBe(4);
    expect(error.reason).toContain(reason);
    expect(error.message).toBe(`invalid _redirects: line 4: ${error.reason}`);
  });

  it('keeps a query on a 3xx path target, and takes a # after the fields as a comment', () => {
    expect(parseRedirects('/a/* /b?x=1&y=:splat#top 302\n/c/* /d?q=:splat')).toHaveLength(2);
    expect(parseRedirects('/a /b #c d e f')[0]).toMatchObject({ from: '/a', to: '/b', status: 301 });
  });

  it('takes 2000 rules and refuses the 2001st at its line', () => {
    const rules = Array.from({ length: 2000 }, (_, i) => `/r${i} /t${i}`);
    expect(parseRedirects(`# header\n${rules.join('\n')}\n\n# trailing`)).toHaveLength(2000);
    const error = refusal(`# header\n${rules.join('\n')}\n\n/r2000 /t2000\n`);
    expect(error.line).toBe(2003);
    expect(error.message).toBe('invalid _redirects: line 2003: more than 2000 redirect rules');
  });

  it('refuses a file over 1 MiB with no line, and a line over 4096 bytes at its line', () => {
    const big = refusal(`${'# padding\n'.repeat(110_000)}`);
    expect(big.line).toBeUndefined();
    expect(big.message).toBe('invalid _redirects: larger than 1048576 bytes');
    expect(parseRedirects(`/a /${'b'.repeat(4092)}`)).toHaveLength(1);
    expect(refusal(`/a /b\n/a /${'b'.repeat(4093)}`).message).toBe('invalid _redirects: line 2: longer than 4096 bytes');
    expect(refusal(`/a /b\n/a /${'é'.repeat(2047)}`).line).toBe(2);
  });

  it('prints rules that parse back to the same rules', () => {
    const target = fc.oneof(fc.constantFrom('/', '/x', '/x/:splat', '/a%20b', 'https://example.com/', 'https://example.com/:splat?q=1'), pattern.map((p) => p.pattern));
    const status = fc.constantFrom(undefined, '200', '301', '302', '303', '307', '308', '404', '200!', '301!', '404!');
    const line = fc.tuple(pattern, target, status).map(([p, to, s]) => `${p.pattern} ${to.replace(/:[a-z_]\w*/g, (m) => (m === ':splat' && p.tail.includes('*')) || p.names.includes(m.slice(1)) ? m : '')}${s === undefined ? '' : ` ${s}`}`);
    fc.assert(
      fc.property(fc.array(line, { maxLength: 20 }), (lines) => {
        const accepted = lines.filter((l) => {
          try {
            return parseRedirects(l).length === 1;
          } catch {
            return false;
          }
        });
        const rules = parseRedirects(accepted.join('\n'));
        expect(rules).toHaveLength(accepted.length);
        expect(withoutLines(parseRedirects(printRedirects(rules)))).toEqual(withoutLines(rules));
      }),
    );
  });

  it('throws nothing but SiteRulesRejected for any text, and what it accepts prints back to itself', () => {
    fc.assert(
      fc.property(ruleText, (text) => {
        let rules: RedirectRule[];
        try {
          rules = parseRedirects(text);
        } catch (error) {
          expect(error).toBeInstanceOf(SiteRulesRejected);
          return;
        }
        expect(withoutLines(parseRedirects(printRedirects(rules)))).toEqual(withoutLines(rules));
      }),
      { numRuns: 3000 },
    );
  });

  it('never accepts a target that leaves the site, however it is encoded', () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z0-9]{1,4}$/), { maxLength: 2 }), dotDot, separator, fc.array(fc.stringMatching(/^[a-z0-9]{1,4}$/), { maxLength: 2 }), fc.constantFrom('', ' 200', ' 301', ' 404!', ' 302'), fc.boolean(), (before, dots, sep, after, status, trailing) => {
        const to = `/${[...before, dots, ...after].join(sep)}${trailing ? sep : ''}`;
        const error = refusal(`/from/* ${to}${status}`);
        expect(error.reason).toMatch(/^(target leaves the site|'\\' is not allowed)/);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('what a refusal repeats of a hostile line', () => {
  it('escapes control characters and caps the token', () => {
    const refusal = (text: string) => {
      try {
        parseRedirects(text);
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error('not refused');
    };
    expect(refusal('/a /b 30\u00071')).toBe("invalid _redirects: line 1: unknown status '30\\u00071'");
    const long = refusal(`/a /b ${'9'.repeat(1000)}`);
    expect(long.length).toBeLessThan(200);
    expect(long).toMatch(/\.\.\.'$/);
  });
});
