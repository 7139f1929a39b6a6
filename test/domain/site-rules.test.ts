import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SiteRulesRejected } from '../../src/domain/errors.js';
import { compileSiteRules, fillTarget, hasNoRules, headersFor, redirectFor, SITE_RULE_LIMITS } from '../../src/domain/site-rules.js';
import { pathFor, pattern, ruleText } from '../support/site-rule-arbitraries.js';

const REDIRECTS = `
/old            /new
/docs/*         /manual/:splat        302
/u/:user/p/:id  /people/:user?p=:id   307
/spa/*          /spa/index.html       200
/gone           /404.html             404
/all/*          /maintenance.html     200!
/ext/*          https://example.com/x/:splat 308!
/old            /never-reached
`;
const HEADERS = `
/*
  X-Frame-Options: DENY
  Cache-Control: no-cache
/assets/*
  cache-control: max-age=31536000
  X-Kind: asset
/assets/:file
  X-Kind: file
/nothing
`;

describe('site rules', () => {
  const rules = compileSiteRules({ redirects: REDIRECTS, headers: HEADERS });

  it('compile each rule to its regex, params, target, status and force, in file order', () => {
    expect(rules.redirects.map((r) => [r.line, r.match, r.params, r.to, r.status, r.force, r.external])).toEqual([
      [2, '^/old/?$', [], '/new', 301, false, false],
      [3, '^/docs(?:/(.*))?$', ['splat'], '/manual/:splat', 302, false, false],
      [4, '^/u/([^/]+)/p/([^/]+)/?$', ['user', 'id'], '/people/:user?p=:id', 307, false, false],
      [5, '^/spa(?:/(.*))?$', ['splat'], '/spa/index.html', 200, false, false],
      [6, '^/gone/?$', [], '/404.html', 404, false, false],
      [7, '^/all(?:/(.*))?$', ['splat'], '/maintenance.html', 200, true, false],
      [8, '^/ext(?:/(.*))?$', ['splat'], 'https://example.com/x/:splat', 308, true, true],
      [9, '^/old/?$', [], '/never-reached', 301, false, false],
    ]);
    expect(rules.headers.map((b) => [b.line, b.match, b.params, b.headers.length])).toEqual([
      [2, '^(?:/(.*))?$', ['splat'], 2],
      [5, '^/assets(?:/(.*))?$', ['splat'], 2],
      [8, '^/assets/([^/]+)/?$', ['file'], 1],
      [10, '^/nothing/?$', [], 0],
    ]);
  });

  it('find the first matching rule of the asked kind (forced or not), with its target filled', () => {
    expect(redirectFor(rules, '/old', false)).toMatchObject({ rule: { line: 2 }, target: '/new' });
    expect(redirectFor(rules, '/old/', false)?.target).toBe('/new');
    expect(redirectFor(rules, '/docs', false)?.target).toBe('/manual/');
    expect(redirectFor(rules, '/docs/a/b.html', false)?.target).toBe('/manual/a/b.html');
    expect(redirectFor(rules, '/u/ann/p/7/', false)?.target).toBe('/people/ann?p=7');
    expect(redirectFor(rules, '/u/ann/p/7/8', false)).toBeUndefined();
    expect(redirectFor(rules, '/spa/route/deep', false)?.target).toBe('/spa/index.html');
    expect(redirectFor(rules, '/all/x', false)).toBeUndefined();
    expect(redirectFor(rules, '/all/x', true)).toMatchObject({ rule: { line: 7, status: 200 }, target: '/maintenance.html' });
    expect(redirectFor(rules, '/ext/a/b', true)?.target).toBe('https://example.com/x/a/b');
    expect(redirectFor(rules, '/Old', false)).toBeUndefined();
    expect(redirectFor(rules, '/elsewhere', false)).toBeUndefined();
  });

  it('give a path every matching block, joining one name across blocks case-insensitively', () => {
    expect(headersFor(rules, '/index.html')).toEqual([
      { name: 'X-Frame-Options', value: 'DENY' },
      { name: 'Cache-Control', value: 'no-cache' },
    ]);
    expect(headersFor(rules, '/assets/app.js')).toEqual([
      { name: 'X-Frame-Options', value: 'DENY' },
      { name: 'Cache-Control', value: 'no-cache, max-age=31536000' },
      { name: 'X-Kind', value: 'asset, file' },
    ]);
    expect(headersFor(rules, '/assets/js/app.js').find((h) => h.name === 'X-Kind')?.value).toBe('asset');
  });

  it('are empty for absent or blank files, and name the file and line of a refusal', () => {
    expect(compileSiteRules({})).toEqual({ redirects: [], headers: [] });
    expect(hasNoRules(compileSiteRules({ redirects: '# none\n', headers: '' }))).toBe(true);
    expect(hasNoRules(compileSiteRules({ headers: '/only-a-path\n' }))).toBe(true);
    expect(hasNoRules(rules)).toBe(false);
    expect(hasNoRules(compileSiteRules({ redirects: '/a /b' }))).toBe(false);
    expect(() => compileSiteRules({ redirects: '/a /b\n/c ../d' })).toThrow('invalid _redirects: line 2: neither a path nor an http(s) URL');
    expect(() => compileSiteRules({ redirects: '/a /b', headers: '/a\n  Server: me' })).toThrow("invalid _headers: line 2: header 'Server' may not be set");
    expect(SITE_RULE_LIMITS).toEqual({ redirects: 2000, headerBlocks: 100, headerLines: 1000, fileBytes: 1048576, lineBytes: 4096 });
  });

  it('fill a target from captured values, leaving unknown names and giving absent groups nothing', () => {
    expect(fillTarget('/p/:a-:b/:splat', ['a', 'b', 'splat'], ['1', '2', undefined])).toBe('/p/1-2/');
    expect(fillTarget('/p/:ab/:a', ['a'], ['x'])).toBe('/p/:ab/x');
    expect(fillTarget('https://example.com/:splat?x=:a', ['a', 'splat'], ['q', 'y/z'])).toBe('https://example.com/y/z?x=q');
  });

  it('never fill a path target to one with a .. segment, whatever normalised request path matched', () => {
    // A normalised, decoded request path: no empty, '.' or '..' segment; anything else may be in a segment.
    const segment = fc.string({ minLength: 1, maxLength: 6 }).filter((s) => !s.includes('/') && s !== '.' && s !== '..');
    const target = fc.constantFrom('/', '/x/', '/:splat', '/a/:splat/b', '/:splat.html', '/:n/:splat', '/x-:n', '/:n.:splat');
    fc.assert(
      fc.property(pattern, target, fc.array(segment, { minLength: 1, maxLength: 6 }), fc.array(segment, { maxLength: 4 }), fc.boolean(), (p, to, values, splat, slash) => {
        const usable = to.replace(/:n\b/g, p.names.length > 0 ? `:${p.names[0]}` : 'n').replace(/:splat/g, p.tail.includes('*') ? ':splat' : 's');
        const compiled = compileSiteRules({ redirects: `${p.pattern} ${usable} 200` });
        const found = redirectFor(compiled, pathFor(p, values, splat.join('/'), slash), false);
        expect(found).toBeDefined();
        expect(found!.target.startsWith('/')).toBe(true);
        expect(found!.target.split('/')).not.toContain('..');
      }),
      { numRuns: 2000 },
    );
  });

  it('compile to regexes JavaScript accepts, with no lookaround, backreference or named group, for any accepted text', () => {
    fc.assert(
      fc.property(ruleText, ruleText, (redirects, headers) => {
        let compiled;
        try {
          compiled = compileSiteRules({ redirects, headers });
        } catch (error) {
          expect(error).toBeInstanceOf(SiteRulesRejected);
          return;
        }
        for (const { match, params } of [...compiled.redirects, ...compiled.headers]) {
          expect(match).not.toMatch(/\(\?<|\(\?=|\(\?!|\\[1-9]/);
          expect(new RegExp(`${match}|`).exec('')!.length - 1).toBe(params.length);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
