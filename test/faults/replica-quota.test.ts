import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Child } from '../support/child-service.js';
import { PG_URL } from '../support/postgres.js';
import { REPLICA_ADMIN, startReplicaPair, type ReplicaPair } from '../support/replica-pair.js';
import { slowUpload } from '../support/slow-upload.js';
import { until } from '../support/until.js';
import { file, tgz } from '../support/tar-builder.js';

const ADMIN = REPLICA_ADMIN;
const QUOTA = 10_000;
const site = (bytes: number) => tgz([file('index.html', randomBytes(bytes / 2).toString('hex'))]);

describe.skipIf(!PG_URL)(`the storage quota across two replicas (USER_MAX_BYTES=${QUOTA}, one PostgreSQL, shared storage)`, () => {
  let pair: ReplicaPair;
  let shared: string;
  let replicas: Child[] = [];

  beforeAll(async () => {
    pair = await startReplicaPair({ USER_MAX_BYTES: String(QUOTA) });
    ({ shared } = pair);
    replicas = [pair.a, pair.b];
  });
  afterAll(() => pair.close());

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
      // One project kept; the user's store of shared files (.objects) and kept manifests (.manifests) are no project.
      expect((await readdir(join(shared, 'deploys', user))).filter((name) => !name.startsWith('.'))).toHaveLength(1);
      await until(async () => (await staging()).length === 0, 'the refused staging area to go');
    }
  });
});
