import { describe, expect, it } from 'vitest';
import type { DeployKeyStore, NewDeployKey } from '../../src/application/ports/deploy-key-store.js';
import type { KeyName } from '../../src/domain/deploy-key.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';

const t = (c: string) => c.repeat(32) as Token;
const at = (minute: number) => new Date(Date.UTC(2026, 11, 1, 12, minute));
const key = (over: Partial<NewDeployKey> = {}): NewDeployKey => ({
  user: 'alice' as Username,
  project: 'docs' as ProjectName,
  name: 'GitHub Actions' as KeyName,
  scope: 'deploy',
  createdAt: at(0),
  expiresAt: undefined,
  ...over,
});

/** What every DeployKeyStore must do, whatever keeps the keys. */
export function deployKeyStoreContract(name: string, open: () => Promise<{ store: DeployKeyStore; close(): Promise<void> }>): void {
  describe(`DeployKeyStore contract: ${name}`, () => {
    const withStore = (test: (store: DeployKeyStore) => Promise<void>) => async () => {
      const { store, close } = await open();
      try {
        await test(store);
      } finally {
        await close();
      }
    };

    it('keeps a key whole and finds it by its token only', withStore(async (store) => {
      const made = key({ scope: 'preview', expiresAt: at(30) });
      const id = await store.add(made, t('a'));
      expect(await store.findByToken(t('a'))).toEqual({ ...made, id, lastUsedAt: undefined });
      expect(await store.findByToken(t('b'))).toBeUndefined();
    }));

    it("lists a project's keys oldest first, and no other project's or user's", withStore(async (store) => {
      const second = await store.add(key({ createdAt: at(2) }), t('b'));
      const first = await store.add(key({ createdAt: at(1) }), t('a'));
      await store.add(key({ project: 'blog' as ProjectName }), t('c'));
      await store.add(key({ user: 'bob' as Username }), t('d'));
      expect((await store.list('alice' as Username, 'docs' as ProjectName)).map((k) => k.id)).toEqual([first, second]);
      expect(await store.list('carol' as Username, 'docs' as ProjectName)).toEqual([]);
    }));

    it('gives every key its own id', withStore(async (store) => {
      const ids = await Promise.all(['a', 'b', 'c', 'd'].map((c) => store.add(key(), t(c))));
      expect(new Set(ids).size).toBe(4);
    }));

    it('records the last use', withStore(async (store) => {
      const id = await store.add(key(), t('a'));
      await store.touch(id, at(5));
      expect((await store.findByToken(t('a')))?.lastUsedAt).toEqual(at(5));
      expect((await store.list('alice' as Username, 'docs' as ProjectName))[0]?.lastUsedAt).toEqual(at(5));
    }));

    it('removes a key only through its own user and project', withStore(async (store) => {
      const id = await store.add(key(), t('a'));
      expect(await store.remove('bob' as Username, 'docs' as ProjectName, id)).toBe(false);
      expect(await store.remove('alice' as Username, 'blog' as ProjectName, id)).toBe(false);
      expect(await store.remove('alice' as Username, 'docs' as ProjectName, 'no-such-id')).toBe(false);
      expect(await store.findByToken(t('a'))).toBeDefined();
      expect(await store.remove('alice' as Username, 'docs' as ProjectName, id)).toBe(true);
      expect(await store.remove('alice' as Username, 'docs' as ProjectName, id)).toBe(false);
      expect(await store.findByToken(t('a'))).toBeUndefined();
    }));

    it("removes a project's keys, and a user's, leaving everyone else's", withStore(async (store) => {
      await store.add(key(), t('a'));
      await store.add(key({ project: 'blog' as ProjectName }), t('b'));
      await store.add(key({ user: 'bob' as Username }), t('c'));
      await store.removeProject('alice' as Username, 'docs' as ProjectName);
      expect(await store.findByToken(t('a'))).toBeUndefined();
      expect(await store.findByToken(t('b'))).toBeDefined();
      await store.removeUser('alice' as Username);
      expect(await store.findByToken(t('b'))).toBeUndefined();
      expect(await store.findByToken(t('c'))).toBeDefined();
    }));
  });
}
