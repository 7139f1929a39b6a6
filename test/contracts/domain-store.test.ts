import { KyselyDomainStore } from '../../src/adapters/db/kysely-domain-store.js';
import { InMemoryDomainStore } from '../support/domain-fakes.js';
import { postgresDatabase, sqliteDatabase } from '../support/databases.js';
import { PG_URL } from '../support/postgres.js';
import { domainStoreContract } from './domain-store.contract.js';

domainStoreContract('in-memory fake', async () => ({ store: new InMemoryDomainStore(), close: async () => undefined }));

domainStoreContract('sqlite file', async () => {
  const { db, close } = await sqliteDatabase();
  return { store: new KyselyDomainStore(db), close };
});

if (PG_URL) {
  domainStoreContract('postgresql server', async () => {
    const { db, close } = await postgresDatabase();
    return { store: new KyselyDomainStore(db), close };
  });
}
