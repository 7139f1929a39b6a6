import fc from 'fast-check';
import { isIP } from 'node:net';
import { describe, expect, it } from 'vitest';
import { assertChallengeMet, assertMayVerify, challengeName, claimDecision, DomainName, type DomainClaim } from '../../src/domain/custom-domain.js';
import { DomainInUse, DomainNotVerified, InvalidDomain, TooManyDomains } from '../../src/domain/errors.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Username } from '../../src/domain/username.js';

// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\x00-\x1f\x7f-\x9f]/;

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/);
const hostName = fc.array(label, { minLength: 1, maxLength: 4 }).chain((labels) => fc.constantFrom('com', 'org', 'example', 'xn--p1ai').map((tld) => [...labels, tld].join('.')));
// Names near the 253-character bound: up to six labels of up to 63 characters, most of them too long.
const longLabel = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/).map((l) => l.padEnd(40 + (l.length % 24), 'a'));
const longName = fc.array(longLabel, { minLength: 3, maxLength: 6 }).map((labels) => [...labels, 'com'].join('.'));
const anyText = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), hostName, hostName.map((h) => h.toUpperCase() + '.'), longName, longName.map((h) => `${h}.`), fc.ipV4(), fc.ipV6(), fc.ipV4Extended(), fc.domain());

const claim = (over: Partial<DomainClaim> = {}): DomainClaim => ({
  user: 'ann' as Username,
  project: 'docs' as ProjectName,
  domain: 'docs.example.com' as DomainName,
  challenge: 'c'.repeat(32),
  createdAt: new Date(0),
  verifiedAt: undefined,
  ...over,
});

describe('a custom domain name', () => {
  it('is lower-cased, loses one trailing dot, and keeps valid names as they are', () => {
    expect(DomainName.parse('Docs.Example.COM.')).toBe('docs.example.com');
    expect(DomainName.parse('a-b.c0.io')).toBe('a-b.c0.io');
    expect(DomainName.parse(`${'a'.repeat(63)}.com`)).toBe(`${'a'.repeat(63)}.com`);
    const long = [...Array(4)].map(() => 'a'.repeat(61)).join('.') + '.com'; // 248 characters
    expect(DomainName.parse(long)).toBe(long);
    // 253 characters is the most, with or without the trailing dot.
    const longest = [...Array(3)].map(() => 'a'.repeat(63)).join('.') + '.' + 'b'.repeat(57) + '.com';
    expect(longest).toHaveLength(253);
    expect(DomainName.parse(longest)).toBe(longest);
    expect(DomainName.parse(`${longest}.`)).toBe(longest);
    expect(() => DomainName.parse(longest.replace('.b', '.bb'))).toThrow(InvalidDomain);
    expect(() => DomainName.parse(`${longest.replace('.com', '.comx')}.`)).toThrow(InvalidDomain);
  });

  it('refuses what is not a host name of two labels or more, IP addresses, wildcards, localhost and sitedrop\'s own hosts', () => {
    const bad = [
      '', 'com', 'example.', '.example.com', 'a..b.com', '-a.com', 'a-.com', 'a_b.com', 'a b.com', 'a/b.com', 'a.com/x',
      `${'a'.repeat(64)}.com`, [...Array(5)].map(() => 'a'.repeat(50)).join('.') + '.com', '1.2.3.4', '127.1', '0x7f.0x1', '::1', '[::1]',
      '*.example.com', 'a.*.com', 'localhost', 'LOCALHOST.', 'www.localhost', 'sites.test', 'previews.test', 'é.com', '\u212a.com', 'example.com..',
    ];
    for (const name of bad) expect(() => DomainName.parse(name, ['sites.test', 'previews.test']), name).toThrow(InvalidDomain);
    for (const notText of [undefined, 42, null, ['a.com']]) expect(() => DomainName.parse(notText)).toThrow(InvalidDomain);
  });

  it('normalises to a fixed point: parsing a parsed name, or any case of it with a trailing dot, gives it back', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        let name: DomainName;
        try {
          name = DomainName.parse(text);
        } catch (e) {
          expect(e).toBeInstanceOf(InvalidDomain);
          return;
        }
        expect(DomainName.parse(name)).toBe(name);
        expect(DomainName.parse(`${name.toUpperCase()}.`)).toBe(name);
        expect(name).toBe(text.toLowerCase().replace(/\.$/, ''));
      }),
      { numRuns: 2000 },
    );
  });

  it('accepts an xn-- label only if it is punycode, as a URL parser takes it', () => {
    expect(DomainName.parse('xn--bcher-kva.example')).toBe('xn--bcher-kva.example');
    expect(DomainName.parse('XN--LS8H.la.')).toBe('xn--ls8h.la');
    for (const bad of ['xn--a.com', 'XN--A.COM.', 'docs.xn--zz.example']) expect(() => DomainName.parse(bad), bad).toThrow(InvalidDomain);
  });

  it('accepts no IP address, no wildcard, nothing longer than 253 characters, never localhost', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        let name: string;
        try {
          name = DomainName.parse(text);
        } catch {
          return;
        }
        expect(isIP(name)).toBe(0);
        expect(() => new URL(`http://${name}/`).hostname).not.toThrow();
        expect(isIP(new URL(`http://${name}/`).hostname)).toBe(0);
        expect(name).not.toContain('*');
        expect(name.length).toBeLessThanOrEqual(253);
        expect(name.split('.').every((l) => l.length <= 63)).toBe(true);
        expect(name.split('.').length).toBeGreaterThanOrEqual(2);
        expect(name === 'localhost' || name.endsWith('.localhost')).toBe(false);
      }),
      { numRuns: 2000 },
    );
    fc.assert(fc.property(fc.oneof(fc.ipV4(), fc.ipV4Extended(), fc.ipV6()), (ip) => {
      expect(() => DomainName.parse(ip)).toThrow(InvalidDomain);
    }));
  });

  it('is proven at _sitedrop-challenge.<domain>', () => {
    expect(challengeName('docs.example.com' as DomainName)).toBe('_sitedrop-challenge.docs.example.com');
  });
});

describe('claims on a domain', () => {
  const ann = 'ann' as Username;
  const bob = 'bob' as Username;
  const docs = 'docs' as ProjectName;
  const blog = 'blog' as ProjectName;

  it('a project claiming again gets its own claim back, even at the limit', () => {
    const own = claim();
    expect(claimDecision(ann, docs, [own, claim({ user: bob })], 5, 5)).toEqual({ kind: 'existing', claim: own });
  });

  it('unverified claims block no one; a verified one blocks every other project, the same user\'s too', () => {
    expect(claimDecision(bob, docs, [claim()], 0, 20)).toEqual({ kind: 'new' });
    const verified = claim({ verifiedAt: new Date(1) });
    expect(() => claimDecision(bob, docs, [verified], 0, 20)).toThrow(DomainInUse);
    expect(() => claimDecision(ann, blog, [verified], 0, 20)).toThrow(DomainInUse);
    expect(claimDecision(ann, docs, [verified], 0, 20)).toEqual({ kind: 'existing', claim: verified });
    expect(() => assertMayVerify(bob, docs, [verified, claim({ user: bob })])).toThrow(DomainInUse);
    expect(() => assertMayVerify(ann, docs, [verified])).not.toThrow();
    expect(() => assertMayVerify(bob, docs, [claim(), claim({ user: bob })])).not.toThrow();
  });

  it('a project holds at most DOMAINS_MAX', () => {
    expect(claimDecision(ann, docs, [], 19, 20)).toEqual({ kind: 'new' });
    expect(() => claimDecision(ann, docs, [], 20, 20)).toThrow(TooManyDomains);
  });
});

describe('the challenge', () => {
  const c = claim({ challenge: 'right-value-0123456789' });
  const failure = (lookup: Parameters<typeof assertChallengeMet>[1]): string => {
    try {
      assertChallengeMet(c, lookup);
    } catch (e) {
      expect(e).toBeInstanceOf(DomainNotVerified);
      return (e as Error).message;
    }
    throw new Error('met');
  };

  it('is met by one record equal to the value, among others', () => {
    expect(() => assertChallengeMet(c, { records: ['v=spf1 -all', 'right-value-0123456789'] })).not.toThrow();
  });

  it('unmet, says what was found: nothing, other records (capped and escaped), or why the lookup failed', () => {
    expect(failure({ records: [] })).toBe('domain not verified: no TXT record at _sitedrop-challenge.docs.example.com');
    expect(failure({ records: ['right-value'] })).toBe('domain not verified: found 1 TXT record(s) at _sitedrop-challenge.docs.example.com, none the challenge: "right-value"');
    const hostile = failure({ records: ['a\nb"\\\u0000\u007f\u0085', 'x'.repeat(10_000), '1', '2', '3', '4', '5'] });
    expect(hostile).toContain('"a\\nb\\"\\\\\\u0000\\u007f\\u0085"');
    expect(hostile).toContain(`"${'x'.repeat(64)}…"`);
    expect(hostile).toMatch(/ and 2 more$/);
    expect(hostile.length).toBeLessThan(600);
    expect(hostile).not.toMatch(CONTROL);
    expect(failure({ failure: 'queryTxt ETIMEOUT' })).toBe('domain not verified: the lookup of TXT records at _sitedrop-challenge.docs.example.com failed: queryTxt ETIMEOUT');
  });

  it('never lets a record\'s text put a control character in the message', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 300 }), { maxLength: 12 }), (records) => {
        fc.pre(!records.includes(c.challenge));
        const message = failure({ records });
        expect(message).not.toMatch(CONTROL);
        expect(message.length).toBeLessThan(800);
      }),
    );
  });
});
