import { describe, expect, it } from 'vitest';
import type { TokenStore } from '../../src/application/ports/token-store.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';

const t = (c: string) => c.repeat(32) as Token;
const user = (name: string) => name as Username;

export interface StoreFixture {
  store: TokenStore;
  /** A second store over the same data, through a new connection, where the backend has one. */
  reopen?: () => Promise<TokenStore>;
  close(): Promise<void>;
}

/** What every TokenStore must do, whatever keeps the data. */
export function tokenStoreContract(name: string, open: () => Promise<StoreFixture>): void {
  describe(`TokenStore contract: ${name}`, () => {
    const withStore = (test: (f: StoreFixture) => Promise<void>) => async () => {
      const fixture = await open();
      try {
        await test(fixture);
      } finally {
        await fixture.close();
      }
    };

    it('creates, finds by token and reports existence', withStore(async ({ store }) => {
      expect(await store.save(user('alice'), t('a'))).toBe('created');
      expect(await store.findUser(t('a'))).toBe('alice');
      expect(await store.exists(user('alice'))).toBe(true);
      expect(await store.exists(user('bob'))).toBe(false);
      expect(await store.findUser(t('b'))).toBeUndefined();
    }));

    it('a reroll invalidates the old token at once', withStore(async ({ store }) => {
      await store.save(user('alice'), t('a'));
      expect(await store.save(user('alice'), t('b'))).toBe('rerolled');
      expect(await store.findUser(t('a'))).toBeUndefined();
      expect(await store.findUser(t('b'))).toBe('alice');
    }));

    it('removes a user and its token', withStore(async ({ store }) => {
      await store.save(user('alice'), t('a'));
      expect(await store.remove(user('alice'))).toBe(true);
      expect(await store.remove(user('alice'))).toBe(false);
      expect(await store.findUser(t('a'))).toBeUndefined();
    }));

    it('concurrent creates of one username leave exactly one working token', withStore(async ({ store }) => {
      const tokens = ['c', 'd', 'e', 'f', 'g'].map(t);
      await Promise.all(tokens.map((token) => store.save(user('carol'), token)));
      const working = (await Promise.all(tokens.map((token) => store.findUser(token)))).filter(Boolean);
      expect(working).toEqual(['carol']);
    }));

    it('lists usernames in order', withStore(async ({ store }) => {
      await store.save(user('zed'), t('z'));
      await store.save(user('amy'), t('y'));
      expect(await store.usernames()).toEqual(['amy', 'zed']);
    }));

    it('keeps users across a new connection', withStore(async ({ store, reopen }) => {
      await store.save(user('dave'), t('h'));
      if (!reopen) return;
      const again = await reopen();
      expect(await again.findUser(t('h'))).toBe('dave');
    }));
  });
}
