import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { migrateToLatest } from './migrations.js';
import type { Schema } from './schema.js';

function sqlitePath(url: string): string {
  return url.replace(/^sqlite:(\/\/)?/, '');
}

/** Opens the database named by DATABASE_URL and brings its schema up to date. */
export async function openDatabase(url: string): Promise<Kysely<Schema>> {
  const file = sqlitePath(url);
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  // FULL: a token handed out is a token kept, even across a power loss.
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: sqlite }) });
  try {
    await migrateToLatest(db as Kysely<unknown>);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return db;
}
