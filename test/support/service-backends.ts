import { join } from 'node:path';
import { PG_URL, freshPostgresDatabase } from './postgres.js';
import type { Harness } from './service-harness.js';

/** The database a test service runs on: SQLite in its root, or a fresh PostgreSQL database. */
export interface Backend {
  readonly env: Record<string, string>;
  /** DATABASE_URL as the service sees it, for tests that age a row in place. */
  url(h: Harness): string;
  drop(): Promise<void>;
}

/** For `describe.each`: SQLite always, PostgreSQL when TEST_DATABASE_URL names a server. */
export const SERVICE_BACKENDS: [string, () => Promise<Backend>][] = [
  ['SQLite', async () => ({ env: {}, url: (h) => `sqlite:${join(h.root, 'sitedrop.db')}`, drop: async () => undefined })],
];
if (PG_URL) {
  SERVICE_BACKENDS.push([
    'PostgreSQL',
    async () => {
      const database = await freshPostgresDatabase();
      return { env: { DATABASE_URL: database.url }, url: () => database.url, drop: () => database.drop() };
    },
  ]);
}
