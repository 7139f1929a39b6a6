import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChild, type Child } from '../support/child-service.js';
import { PG_URL, freshPostgresDatabase } from '../support/postgres.js';
import { slowUpload, until } from '../support/slow-upload.js';
import { file, tgz } from '../support/tar-builder.js';

const ADMIN = 'replica-admin-token-0123456789abcdefghij';
const QUOTA = 10_000;
const site = (bytes: number) => tgz([file('index.html', randomBytes(bytes / 2).toString('hex'))]);

describe.skipIf(!PG_URL)(`the storage quota across two replicas (USER_MAX_BYTES=${QUOTA}, one PostgreSQL, shared storage)`, () => {
  let database: Awaited<ReturnType<typeof freshPostgresDatabase>>;
  let shared: string;
  let replicas: Child[] = [];
  const dirs: string[] = [];

  beforeAll(async () => {
    database = await freshPostgresDatabase();
    shared = await mkdtemp(join(tmpdir(), 'sitedrop-shared-'));
    replicas = await Promise.all(
      ['a', 'b'].map(async (id) => {
        const own = await mkdtemp(join(tmpdir(), `sitedrop-replica-${id}-`));
        dirs.push(own);
        return startChild({
          DATA_DIR: own,
          DOCS_ROOT: join(shared, 'docs'),
          DEPLOYS_ROOT: join(shared, 'deploys'),
          DATABASE_URL: database.url,
          ADMIN_TOKEN: ADMIN,
          REPLICA_ID: id,
          USER_MAX_BYTES: String(QUOTA),
        });
      }),
    );
  });
  afterAll(async () => {
    for (const child of replicas) {
      child.process.kill('SIGKILL');
      await child.exited;
    }
    await database.drop();
    for (const dir of [shared, ...dirs]) await rm(dir, { recursive: true, force: true });
  });

  it('two deploys of different projects, one on each replica, that together pass the quota are not both taken', async () => {
    const staging = () => readdir(join(shared, 'deploys/.staging'));
    for (let round = 0; round < 4; round += 1) {
      const user = `pair${round}`;
      const created = await fetch(`${replicas[0]!.url}/api/v1/auth`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ username: user }),
      });
      const { token } = (await created.json()) as { token: string };
      const uploads = replicas.map((replica, i) => slowUpload(replica.url, token, `p${i}`, site(6000), 3000));
      await until(async () => (await staging()).length === 2, 'two staging areas');
      for (const upload of uploads) upload.finish();
      const answers = await Promise.all(uploads.map((u) => u.response));
      expect(answers.map((a) => a.status).sort()).toEqual([200, 507]);
      expect(await readdir(join(shared, 'deploys', user))).toHaveLength(1);
      await until(async () => (await staging()).length === 0, 'the refused staging area to go');
    }
  });
});
