import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/adapters/db/database.js';
import { KyselyDeployKeyStore } from '../../src/adapters/db/kysely-deploy-key-store.js';
import type { KeyName } from '../../src/domain/deploy-key.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import { InMemoryDeployKeyStore } from '../support/fakes.js';
import { postgresDatabase, sqliteDatabase } from '../support/databases.js';
import { PG_URL } from '../support/postgres.js';
import { deployKeyStoreContract } from './deploy-key-store.contract.js';

deployKeyStoreContract('in-memory fake', async () => ({ store: new InMemoryDeployKeyStore(), close: async () => undefined }));

deployKeyStoreContract('sqlite file', async () => {
  const { db, close } = await sqliteDatabase();
  return { store: new KyselyDeployKeyStore(db), close };
});

if (PG_URL) {
  deployKeyStoreContract('postgresql server', async () => {
    const { db, close } = await postgresDatabase();
    return { store: new KyselyDeployKeyStore(db), close };
  });
}

describe('sqlite deploy key storage', () => {
  it('keeps only a hash: the database file never contains the key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sitedrop-keys-'));
    const db = await openDatabase(`sqlite:${join(dir, 'sitedrop.db')}`);
    const token = 'Kq3kV9wT1mB8xN2cL7pR4sH6jD0fG5yA' as Token;
    const key = { user: 'alice' as Username, project: 'docs' as ProjectName, name: 'ci' as KeyName, scope: 'deploy' as const, createdAt: new Date(), expiresAt: undefined };
    await new KyselyDeployKeyStore(db).add(key, token);
    await db.destroy();
    const raw = Buffer.concat([await readFile(join(dir, 'sitedrop.db')), await readFile(join(dir, 'sitedrop.db-wal')).catch(() => Buffer.alloc(0))]);
    expect(raw.includes(Buffer.from('docs'))).toBe(true);
    expect(raw.includes(Buffer.from(token))).toBe(false);
    await rm(dir, { recursive: true, force: true });
  });
});
