import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CONTROL, RuleReason } from '../../src/domain/rule-file-text.js';
import { compilePattern } from '../../src/domain/site-path-pattern.js';
import { anyCodeUnit, pathFor, pattern, ruleToken } from '../support/site-rule-arbitraries.js';

/** The portable subset the brief allows, as a grammar (with no CONTROL): if it matches, JS, PCRE and RE2 read the source alike. */
const PORTABLE = /^\^(?:\/|[A-Za-z0-9_~-]|\\\.|\\x[0-9A-F]{2}|[^ -~]|\(\[\^\/\]\+\))*(?:\(\?:\/\(\.\*\)\)\?|\(\.\*\)|\/\?)?\$$/;
const matches = (p: string, path: string) => new RegExp(compilePattern(p).match).exec(path)?.slice(1);
const segment = fc.stringMatching(/^[^/\\]{1,6}$/).filter((s) => s !== '.' && s !== '..');

describe('a site path pattern', () => {
  it('matches with or without a trailing slash, and / only itself', () => {
    expect(matches('/a', '/a')).toEqual([]);
    expect(matches('/a', '/a/')).toEqual([]);
    expect(matches('/a/', '/a')).toEqual([]);
    expect(matches('/a', '/a/b')).toBeUndefined();
    expect(matches('/a', '/ab')).toBeUndefined();
    expect(matches('/a', '/A')).toBeUndefined();
    expect(matches('/', '/')).toEqual([]);
    expect(matches('/', '/a')).toBeUndefined();
    expect(matches('/', '//')).toBeUndefined();
  });

  it("takes '/*' as the folder and all under it, '*' after text as any ending", () => {
    expect(matches('/a/*', '/a')).toEqual([undefined]);
    expect(matches('/a/*', '/a/')).toEqual(['']);
    expect(matches('/a/*', '/a/x/y')).toEqual(['x/y']);
    expect(matches('/a/*', '/ab')).toBeUndefined();
    expect(matches('/a*', '/abc/d')).toEqual(['bc/d']);
    expect(matches('/*', '/')).toEqual(['']);
    expect(matches('/*', '/x/y.html')).toEqual(['x/y.html']);
    expect(compilePattern('/a/:x/b/*')).toEqual({ match: '^/a/([^/]+)/b(?:/(.*))?$', params: ['x', 'splat'], prefix: '/a/' });
    expect(compilePattern('/caf%C3%A9/menu*').prefix).toBe('/café/menu');
    expect(matches('/a/:x/b/*', '/a/1/b/c')).toEqual(['1', 'c']);
    expect(matches('/a/:x/b/*', '/a/1/2/b/c')).toBeUndefined();
  });

  it('matches the decoded path: escapes in the pattern are decoded, regex characters are literal', () => {
    expect(matches('/a%20b/c%2Fd', '/a b/c/d')).toEqual([]);
    expect(matches('/a%20b', '/a%20b')).toBeUndefined();
    expect(matches('/index.html', '/index.html')).toEqual([]);
    expect(matches('/index.html', '/indexXhtml')).toBeUndefined();
    expect(matches('/(x)+[y]{2}$^|', '/(x)+[y]{2}$^|')).toEqual([]);
    expect(matches('/ü/%E2%82%AC', '/ü/€')).toEqual([]);
    expect(matches('/a:b', '/a:b')).toEqual([]);
  });

  it.each([
    ['a/b', "a path must start with '/'"],
    ['/a?x=1', 'query and fragment matching are not supported'],
    ['/a#x', 'query and fragment matching are not supported'],
    ['/a/*/b', "'*' is allowed only at the end"],
    ['/a**', "'*' is allowed only at the end"],
    ['/:x*', 'a placeholder is a whole segment'],
    ['/:1', 'a placeholder is a whole segment'],
    ['/:', 'a placeholder is a whole segment'],
    ['/:a-b', 'a placeholder is a whole segment'],
    ['/:splat', "':splat' is the name of '*'"],
    ['/:x/:x', "placeholder ':x' is used twice"],
    ['/a//b', 'empty segment'],
    ['/a\\b', "'\\' is not allowed"],
    ['/a%5Cb', "'\\' is not allowed"],
    ['/a\u0001', 'control characters'],
    ['/a%00', 'control characters'],
    ['/a\uD800', 'control characters'],
    ['/a%zz', 'malformed percent-escape'],
    ['/a%C0%AE', 'malformed percent-escape'],
    ['/a/../b', "'.' or '..' segments"],
    ['/a/./b', "'.' or '..' segments"],
    ['/a/%2e%2E/b', "'.' or '..' segments"],
    ['/a/%252e%252e', "'.' or '..' segments"],
    ['/a%2F..%2Fb', "'.' or '..' segments"],
    ['/.', "'.' or '..' segments"],
    [`/%${'25'.repeat(20)}2e`, 'too many layers of percent-encoding'],
  ])('refuses %j: %s', (p, reason) => {
    expect(() => compilePattern(p)).toThrow(RuleReason);
    expect(() => compilePattern(p)).toThrow(reason);
  });

  it('compiles every valid pattern to a portable regex with one group per param, which matches the paths it describes', () => {
    fc.assert(
      fc.property(pattern, fc.array(segment, { minLength: 5, maxLength: 5 }), fc.array(segment, { maxLength: 3 }), fc.boolean(), (p, values, splatParts, slash) => {
        const { match, params, prefix } = compilePattern(p.pattern);
        expect(match).toMatch(PORTABLE);
        expect(match).not.toMatch(CONTROL);
        expect(new RegExp(`${match}|`).exec('')!.length - 1).toBe(params.length);
        expect(params).toEqual(p.tail === '/*' || p.tail === '*' ? [...p.names, 'splat'] : p.names);
        const splat = splatParts.join('/');
        const path = pathFor(p, values, splat, slash);
        const found = new RegExp(match).exec(path);
        expect(found, `${p.pattern} on ${path}`).not.toBeNull();
        expect(path.startsWith(prefix), `${path} starts with ${prefix}`).toBe(true);
        const named = p.names.map((_, i) => values[i % values.length]);
        expect(found!.slice(1)).toEqual(params.includes('splat') ? [...named, splat === '' && slash && p.tail === '/*' && p.segments.length > 0 ? undefined : splat] : named);
      }),
    );
  });

  it('throws only its reason for any string', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: anyCodeUnit }), fc.array(ruleToken).map((t) => `/${t.join('')}`)), (text) => {
        try {
          const { match } = compilePattern(text);
          expect(match).toMatch(PORTABLE);
          expect(match).not.toMatch(CONTROL);
        } catch (error) {
          expect(error).toBeInstanceOf(RuleReason);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
