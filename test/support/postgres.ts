import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The server the PostgreSQL tests use; .ci/run sets it, and fails if the server is down. */
export const PG_URL = process.env.TEST_DATABASE_URL;

if (!PG_URL) {
  console.warn('SKIPPED PostgreSQL tests: TEST_DATABASE_URL is not set (CI sets it to postgres://postgres@127.0.0.1:5432/test)');
}

/** A database of its own for one test file, so runs never collide; dropped by `drop()`. */
export async function freshPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!PG_URL) throw new Error('TEST_DATABASE_URL is not set');
  const name = `sitedrop_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}
