import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { openDatabase } from '../../src/adapters/db/database.js';
import type { Schema } from '../../src/adapters/db/schema.js';
import { freshPostgresDatabase } from './postgres.js';

export interface OpenedDatabase {
  readonly db: Kysely<Schema>;
  /** Closes the connection and removes the database. */
  close(): Promise<void>;
}

/** A migrated SQLite file of its own, for one contract test. */
export async function sqliteDatabase(): Promise<OpenedDatabase> {
  const dir = await mkdtemp(join(tmpdir(), 'sitedrop-db-'));
  const db = await openDatabase(`sqlite:${join(dir, 'sitedrop.db')}`);
  return {
    db,
    close: async () => {
      await db.destroy();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A migrated PostgreSQL database of its own (TEST_DATABASE_URL's server), for one contract test. */
export async function postgresDatabase(): Promise<OpenedDatabase> {
  const database = await freshPostgresDatabase();
  const db = await openDatabase(database.url);
  return {
    db,
    close: async () => {
      await db.destroy();
      await database.drop();
    },
  };
}

