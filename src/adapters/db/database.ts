import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import type pg from 'pg';
import { migrateToLatest } from './migrations.js';
import { redactUrl } from './redact-url.js';
import type { Schema } from './schema.js';

export type DatabaseKind = 'sqlite' | 'postgres';

export function databaseKind(url: string): DatabaseKind {
  return /^postgres(ql)?:\/\//.test(url) ? 'postgres' : 'sqlite';
}

function sqlitePath(url: string): string {
  return url.replace(/^sqlite:(\/\/)?/, '');
}

function openSqlite(url: string): Kysely<Schema> {
  const file = sqlitePath(url);
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  // FULL: a token handed out is a token kept, even across a power loss.
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('busy_timeout = 5000');
  // A session's manifest goes with its session (schema.ts). better-sqlite3's build turns
  // this on already; SQLite's own default is off, so it is said here whatever the build.
  sqlite.pragma('foreign_keys = ON');
  return new Kysely<Schema>({ dialect: new SqliteDialect({ database: sqlite }) });
}

/**
 * pg is loaded only when a PostgreSQL URL asks for it: it is 2.8 MiB of the main thread's
 * heap, which a service on SQLite (the default) would carry for nothing, and the service
 * is held to 128 MiB (docs/performance.md). CommonJS, so it loads synchronously.
 */
const requirePg = (): typeof pg => createRequire(import.meta.url)('pg') as typeof pg;

/** A pg pool that reports a dead server on the next query instead of crashing the process. */
export function postgresPool(url: string, max: number): pg.Pool {
  const pool = new (requirePg().Pool)({ connectionString: url, max, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30_000 });
  // An idle client whose server went away emits 'error' here; unheard, it would crash the
  // process. The next query on the pool fails and is answered with the spec's 500.
  pool.on('error', () => undefined);
  return pool;
}

/** Opens the database named by DATABASE_URL and brings its schema up to date. */
export async function openDatabase(url: string, options: { poolMax: number } = { poolMax: 10 }): Promise<Kysely<Schema>> {
  const db =
    databaseKind(url) === 'postgres'
      ? new Kysely<Schema>({ dialect: new PostgresDialect({ pool: postgresPool(url, options.poolMax) }) })
      : openSqlite(url);
  try {
    // kysely's migrator takes a lock of its own, so replicas starting together do not race.
    await migrateToLatest(db as Kysely<unknown>);
  } catch (error) {
    await db.destroy();
    throw new Error(`cannot use the database at ${redactUrl(url)}: ${(error as Error).message}`, { cause: error });
  }
  return db;
}
