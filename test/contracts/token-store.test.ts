import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/adapters/db/database.js';
import { KyselyTokenStore } from '../../src/adapters/db/kysely-token-store.js';
import { InMemoryTokenStore } from '../support/fakes.js';
import { PG_URL, freshPostgresDatabase } from '../support/postgres.js';
import { tokenStoreContract } from './token-store.contract.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';

tokenStoreContract('in-memory fake', async () => ({ store: new InMemoryTokenStore(), close: async () => undefined }));

tokenStoreContract('sqlite file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'sitedrop-db-'));
  const url = `sqlite:${join(dir, 'sitedrop.db')}`;
  const opened = [await openDatabase(url)];
  return {
    store: new KyselyTokenStore(opened[0]!),
    reopen: async () => {
      const db = await openDatabase(url);
      opened.push(db);
      return new KyselyTokenStore(db);
    },
    close: async () => {
      for (const db of opened) await db.destroy();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

if (PG_URL) {
  tokenStoreContract('postgresql server', async () => {
    const database = await freshPostgresDatabase();
    const opened = [await openDatabase(database.url)];
    return {
      store: new KyselyTokenStore(opened[0]!),
      reopen: async () => {
        const db = await openDatabase(database.url);
        opened.push(db);
        return new KyselyTokenStore(db);
      },
      close: async () => {
        for (const db of opened) await db.destroy();
        await database.drop();
      },
    };
  });
}

describe.skipIf(!PG_URL)('postgresql migrations', () => {
  it('two replicas starting together both migrate, once', async () => {
    const database = await freshPostgresDatabase();
    try {
      const [a, b] = await Promise.all([openDatabase(database.url), openDatabase(database.url)]);
      const rows = await a.selectFrom('kysely_migration' as never).selectAll().execute();
      expect(rows.length).toBeGreaterThan(0);
      expect(new Set(rows.map((r) => (r as { name: string }).name)).size).toBe(rows.length);
      await a.destroy();
      await b.destroy();
    } finally {
      await database.drop();
    }
  });

  it('an unreachable server is one clear error naming the database, without the password', async () => {
    await expect(openDatabase('postgres://sitedrop:secret@127.0.0.1:1/nowhere')).rejects.toThrow(
      /^cannot use the database at postgres:\/\/sitedrop:\*\*\*@127\.0\.0\.1:1\/nowhere: .*ECONNREFUSED/,
    );
  });
});

describe('sqlite token storage', () => {
  it('keeps only a hash: the database file never contains the token', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sitedrop-db-'));
    const db = await openDatabase(`sqlite:${join(dir, 'sitedrop.db')}`);
    const token = 'Zq3kV9wT1mB8xN2cL7pR4sH6jD0fG5yA' as Token;
    await new KyselyTokenStore(db).save('alice' as Username, token);
    await db.destroy();
    const raw = Buffer.concat([await readFile(join(dir, 'sitedrop.db')), await readFile(join(dir, 'sitedrop.db-wal')).catch(() => Buffer.alloc(0))]);
    expect(raw.includes(Buffer.from('alice'))).toBe(true);
    expect(raw.includes(Buffer.from(token))).toBe(false);
    await rm(dir, { recursive: true, force: true });
  });
});
