import { Kysely, PostgresDialect } from 'kysely';
import { postgresPool } from '../../src/adapters/db/database.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { PostgresDeployLock } from '../../src/adapters/lock/postgres-deploy-lock.js';
import { PG_URL, freshPostgresDatabase } from '../support/postgres.js';
import { deployLockContract } from './deploy-lock.contract.js';

deployLockContract('in-process', async () => {
  const lock = new InProcessDeployLock();
  return { a: lock, b: lock, close: async () => undefined };
});

if (PG_URL) {
  // Two pools stand for two replicas: the advisory locks must hold across them.
  deployLockContract('postgresql advisory locks, two pools', async () => {
    const database = await freshPostgresDatabase();
    const dbs = [0, 1].map(() => new Kysely<unknown>({ dialect: new PostgresDialect({ pool: postgresPool(database.url, 4) }) }));
    return {
      a: new PostgresDeployLock(dbs[0]!),
      b: new PostgresDeployLock(dbs[1]!),
      close: async () => {
        for (const db of dbs) await db.destroy();
        await database.drop();
      },
    };
  });
}
