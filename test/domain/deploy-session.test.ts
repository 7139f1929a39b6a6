import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mayUseSession, sameSigner, sessionExpiry, sessionLastUse, SUPERSEDE_AFTER_IDLE_SECONDS, supersedes, type SessionTarget } from '../../src/domain/deploy-session.js';
import type { PreviewName } from '../../src/domain/preview.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Username } from '../../src/domain/username.js';

const TTL = 3600;
const now = new Date('2026-12-10T12:00:00.000Z');
/** A session last used `idleSeconds` before `now`. */
const idleFor = (target: SessionTarget, idleSeconds: number) => ({ ...target, expiresAt: sessionExpiry(new Date(now.getTime() - idleSeconds * 1000), TTL) });

const target = fc.record({
  user: fc.constantFrom('alice', 'bob').map((u) => u as Username),
  keyId: fc.constantFrom(undefined, 'key-1', 'key-2'),
  project: fc.constantFrom('docs', 'blog').map((p) => p as ProjectName),
  preview: fc.constantFrom(undefined, 'pr-1', 'pr-2').map((p) => p as PreviewName | undefined),
});

describe('deploy sessions: who counts against whom, and what supersedes what', () => {
  it('reads a last use back from the expiry it set', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }), fc.integer({ min: 1, max: 7 * 86_400 }), (used, ttl) => {
        expect(sessionLastUse(sessionExpiry(used, ttl), ttl)).toEqual(used);
      }),
    );
  });

  it("counts a key's sessions apart from its owner's own and from every other key's", () => {
    const alice = 'alice' as Username;
    expect(sameSigner({ user: alice, keyId: undefined }, { user: alice, keyId: undefined })).toBe(true);
    expect(sameSigner({ user: alice, keyId: 'k' }, { user: alice, keyId: 'k' })).toBe(true);
    expect(sameSigner({ user: alice, keyId: 'k' }, { user: alice, keyId: undefined })).toBe(false);
    expect(sameSigner({ user: alice, keyId: 'k' }, { user: alice, keyId: 'j' })).toBe(false);
    expect(sameSigner({ user: alice, keyId: undefined }, { user: 'bob' as Username, keyId: undefined })).toBe(false);
  });

  it("lets the user's own token use any of the user's sessions, and a key only those it opened", () => {
    const alice = 'alice' as Username;
    expect(mayUseSession(undefined, { user: alice, keyId: undefined })).toBe(true);
    expect(mayUseSession(undefined, { user: alice, keyId: 'k' })).toBe(true);
    expect(mayUseSession('k', { user: alice, keyId: 'k' })).toBe(true);
    expect(mayUseSession('k', { user: alice, keyId: undefined })).toBe(false);
    expect(mayUseSession('k', { user: alice, keyId: 'j' })).toBe(false);
  });

  it('supersedes an idle session of the same signer, project and preview, from SUPERSEDE_AFTER_IDLE_SECONDS on', () => {
    fc.assert(
      fc.property(target, (t) => {
        expect(supersedes(t, idleFor(t, SUPERSEDE_AFTER_IDLE_SECONDS), now, TTL)).toBe(true);
        expect(supersedes(t, idleFor(t, TTL - 1), now, TTL)).toBe(true);
        expect(supersedes(t, idleFor(t, SUPERSEDE_AFTER_IDLE_SECONDS - 0.001), now, TTL)).toBe(false);
        expect(supersedes(t, idleFor(t, 0), now, TTL)).toBe(false);
      }),
    );
  });

  it('never supersedes a session in use, nor one another signer opened, nor one of another project or preview', () => {
    fc.assert(
      fc.property(target, target, fc.integer({ min: 0, max: TTL }), (newer, older, idle) => {
        const superseded = supersedes(newer, idleFor(older, idle), now, TTL);
        const same = sameSigner(newer, older) && newer.project === older.project && newer.preview === older.preview;
        expect(superseded).toBe(same && idle >= SUPERSEDE_AFTER_IDLE_SECONDS);
      }),
    );
  });
});
