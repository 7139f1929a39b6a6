import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChild, type Child } from './child-service.js';
import { freshPostgresDatabase } from './postgres.js';

export const REPLICA_ADMIN = 'replica-admin-token-0123456789abcdefghij';

export interface ReplicaPair {
  readonly a: Child;
  readonly b: Child;
  /** The storage both share: `docs` and `deploys` below it. */
  readonly shared: string;
  readonly databaseUrl: string;
  close(): Promise<void>;
}

/** Two service processes (REPLICA_ID a and b) on a fresh PostgreSQL database and one shared storage. */
export async function startReplicaPair(env: Record<string, string> = {}): Promise<ReplicaPair> {
  const database = await freshPostgresDatabase();
  const shared = await mkdtemp(join(tmpdir(), 'sitedrop-shared-'));
  const dirs: string[] = [];
  const replica = async (id: string): Promise<Child> => {
    const own = await mkdtemp(join(tmpdir(), `sitedrop-replica-${id}-`));
    dirs.push(own);
    return startChild({
      DATA_DIR: own,
      DOCS_ROOT: join(shared, 'docs'),
      DEPLOYS_ROOT: join(shared, 'deploys'),
      DATABASE_URL: database.url,
      ADMIN_TOKEN: REPLICA_ADMIN,
      REPLICA_ID: id,
      ...env,
    });
  };
  const [a, b] = await Promise.all([replica('a'), replica('b')]);
  return {
    a,
    b,
    shared,
    databaseUrl: database.url,
    async close() {
      for (const child of [a, b]) {
        child.process.kill('SIGKILL');
        await child.exited;
      }
      await database.drop();
      for (const dir of [shared, ...dirs]) await rm(dir, { recursive: true, force: true });
    },
  };
}
