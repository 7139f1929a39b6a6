import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isExpired, keyExpiry, KeyName, keyPermitsDeploy, KeyScope, MAX_KEY_DAYS } from '../../src/domain/deploy-key.js';
import { InvalidKeyExpiry, InvalidKeyName, InvalidKeyScope } from '../../src/domain/errors.js';
import type { ProjectName } from '../../src/domain/project-name.js';

const docs = 'docs' as ProjectName;
const blog = 'blog' as ProjectName;

describe('deploy keys', () => {
  it('takes the two scopes and nothing else', () => {
    expect(KeyScope.parse('deploy')).toBe('deploy');
    expect(KeyScope.parse('preview')).toBe('preview');
    for (const bad of ['', 'Deploy', 'admin', 'deploy ']) expect(() => KeyScope.parse(bad)).toThrow(InvalidKeyScope);
  });

  it('names a key with 1 to 64 characters on one line', () => {
    expect(KeyName.parse('GitHub Actions (docs)')).toBe('GitHub Actions (docs)');
    expect(KeyName.parse('ключ'.repeat(16))).toHaveLength(64);
    for (const bad of ['', 'x'.repeat(65), 'a\nb', 'tab\there', 'nul\u0000']) expect(() => KeyName.parse(bad)).toThrow(InvalidKeyName);
  });

  it('expires a key whole days after it was made, or never; refuses other lives', () => {
    const made = new Date('2026-12-01T12:00:00.000Z');
    expect(keyExpiry(made, undefined)).toBeUndefined();
    expect(keyExpiry(made, 1)).toEqual(new Date('2026-12-02T12:00:00.000Z'));
    expect(keyExpiry(made, MAX_KEY_DAYS)?.getTime()).toBe(made.getTime() + MAX_KEY_DAYS * 86_400_000);
    for (const bad of [0, -1, 1.5, MAX_KEY_DAYS + 1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => keyExpiry(made, bad)).toThrow(InvalidKeyExpiry);
  });

  it('is dead from its expiry instant on, and a key without one never dies', () => {
    const expiry = new Date('2026-12-02T12:00:00.000Z');
    expect(isExpired(expiry, new Date(expiry.getTime() - 1))).toBe(false);
    expect(isExpired(expiry, expiry)).toBe(true);
    expect(isExpired(undefined, new Date(8.64e15))).toBe(false);
  });

  it('deploys its own project only; a preview key only previews', () => {
    expect(keyPermitsDeploy({ project: docs, scope: 'deploy' }, docs, undefined)).toBe(true);
    expect(keyPermitsDeploy({ project: docs, scope: 'deploy' }, docs, 'pr-1')).toBe(true);
    expect(keyPermitsDeploy({ project: docs, scope: 'preview' }, docs, 'pr-1')).toBe(true);
    expect(keyPermitsDeploy({ project: docs, scope: 'preview' }, docs, undefined)).toBe(false);
    fc.assert(
      fc.property(fc.constantFrom<KeyScope>('deploy', 'preview'), fc.option(fc.string(), { nil: undefined }), (scope, preview) => {
        expect(keyPermitsDeploy({ project: docs, scope }, blog, preview)).toBe(false);
      }),
    );
  });
});
