import { describe, expect, it } from 'vitest';
import { KyselyDeploySessions } from '../../src/adapters/db/kysely-deploy-sessions.js';
import type { DeploySessions, NewDeploySession } from '../../src/application/ports/deploy-sessions.js';
import type { Digest } from '../../src/domain/manifest.js';
import type { PreviewName } from '../../src/domain/preview.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Username } from '../../src/domain/username.js';
import { InMemoryDeploySessions } from '../application/fakes.js';
import { postgresDatabase, sqliteDatabase } from '../support/databases.js';
import { PG_URL } from '../support/postgres.js';

const at = (minute: number) => new Date(Date.UTC(2026, 11, 8, 12, minute));
const session = (over: Partial<NewDeploySession> = {}): NewDeploySession => ({
  user: 'alice' as Username,
  project: 'docs' as ProjectName,
  preview: undefined,
  files: [
    { path: 'index.html', size: 12, digest: 'a'.repeat(64) as Digest },
    { path: 'ünï/cödé "quoted".html', size: 0, digest: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' as Digest },
  ],
  createdAt: at(0),
  expiresAt: at(60),
  ...over,
});

/** What every DeploySessions must do: the two real databases and the unit tests' fake. */
function deploySessionsContract(name: string, open: () => Promise<{ sessions: DeploySessions; close(): Promise<void> }>): void {
  describe(`DeploySessions contract: ${name}`, () => {
    const withSessions = (test: (sessions: DeploySessions) => Promise<void>) => async () => {
      const { sessions, close } = await open();
      try {
        await test(sessions);
      } finally {
        await close();
      }
    };

    it('keeps a session whole, manifest and all, until it is closed', withSessions(async (sessions) => {
      const made = session({ preview: 'pr-1' as PreviewName });
      const id = (await sessions.open(made, 8, at(1)))!;
      expect(id).toMatch(/^[0-9a-f]{32}$/);
      expect(await sessions.find(id)).toEqual({ id, ...made });
      expect(await sessions.close(id)).toBe(true);
      expect(await sessions.find(id)).toBeUndefined();
      expect(await sessions.close(id)).toBe(false);
    }));

    it('opens at most `max` unexpired sessions per user; expired ones and other users do not count', withSessions(async (sessions) => {
      expect(await sessions.open(session({ expiresAt: at(5) }), 2, at(1))).toBeDefined();
      expect(await sessions.open(session(), 2, at(1))).toBeDefined();
      expect(await sessions.open(session(), 2, at(1))).toBeUndefined();
      expect(await sessions.open(session({ user: 'bob' as Username }), 2, at(1))).toBeDefined();
      // At minute 10 the first has expired: a place is free.
      expect(await sessions.open(session(), 2, at(10))).toBeDefined();
    }));

    it('moves an expiry, lists the expired, says which ids are still open, and removes a user', withSessions(async (sessions) => {
      const a = (await sessions.open(session({ expiresAt: at(5) }), 8, at(1)))!;
      const b = (await sessions.open(session({ expiresAt: at(5) }), 8, at(1)))!;
      const c = (await sessions.open(session({ user: 'bob' as Username, expiresAt: at(50) }), 8, at(1)))!;
      await sessions.extend(b, at(40));
      expect((await sessions.find(b))?.expiresAt).toEqual(at(40));
      expect(await sessions.expired(at(10))).toEqual([a]);
      expect(await sessions.stillOpen([a, c, 'f'.repeat(32)])).toEqual(new Set([a, c]));
      expect(await sessions.stillOpen([])).toEqual(new Set());
      await sessions.removeUser('alice' as Username);
      expect(await sessions.stillOpen([a, b, c])).toEqual(new Set([c]));
    }));
  });
}

deploySessionsContract('in-memory fake', async () => ({ sessions: new InMemoryDeploySessions(), close: async () => {} }));

deploySessionsContract('sqlite file', async () => {
  const { db, close } = await sqliteDatabase();
  return { sessions: new KyselyDeploySessions(db), close };
});

if (PG_URL) {
  deploySessionsContract('postgresql server', async () => {
    const { db, close } = await postgresDatabase();
    return { sessions: new KyselyDeploySessions(db), close };
  });
}
