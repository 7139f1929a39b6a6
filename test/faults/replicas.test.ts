import { readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployTo as deploy, type Child } from '../support/child-service.js';
import { PG_URL } from '../support/postgres.js';
import { REPLICA_ADMIN, startReplicaPair, type ReplicaPair } from '../support/replica-pair.js';
import { releaseVersion, versionedSite } from '../support/sites.js';
import { until } from '../support/until.js';

const ADMIN = REPLICA_ADMIN;

async function call(url: string, method: string, path: string, token: string, body?: unknown) {
  const r = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}` }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as Record<string, string> };
}


describe.skipIf(!PG_URL)('several replicas: one PostgreSQL database, one shared docs/deploys storage', () => {
  let pair: ReplicaPair;
  let shared: string;
  let a: Child;
  let b: Child;

  beforeAll(async () => {
    pair = await startReplicaPair();
    ({ a, b, shared } = pair);
  });
  afterAll(() => pair.close());

  it('a token created on one replica works on the other at once; a reroll is seen at once', async () => {
    const created = await call(a.url, 'POST', '/api/v1/auth', ADMIN, { username: 'team' });
    expect(created.status).toBe(200);
    expect((await deploy(b.url, created.body.token!, 'intro', versionedSite('i1', 5))).status).toBe(200);
    const rerolled = await call(a.url, 'POST', '/api/v1/auth', ADMIN, { username: 'team' });
    expect((await deploy(b.url, created.body.token!, 'intro', versionedSite('i2', 5))).body).toEqual({ status: 'error', error: 'unauthorized' });
    expect((await deploy(b.url, rerolled.body.token!, 'intro', versionedSite('i3', 5))).status).toBe(200);
  });

  it('10 concurrent deploys of one project over both replicas: distinct ids, 5 kept, the newest live and complete', async () => {
    const token = (await call(b.url, 'POST', '/api/v1/auth', ADMIN, { username: 'crowd' })).body.token!;
    const files = 60;
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => deploy(i % 2 === 0 ? a.url : b.url, token, 'site', versionedSite(`v${i}`, files))),
    );
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    const ids = results.map((r) => r.body.release!);
    expect(new Set(ids).size).toBe(10);
    const newest = [...ids].sort().at(-1)!;
    const releasesDir = join(shared, 'deploys/crowd/site');
    expect((await readdir(releasesDir)).sort()).toEqual([...ids].sort().slice(5));
    const live = await readlink(join(shared, 'docs/crowd/site'));
    expect(live).toBe(`${join(releasesDir, newest)}/`);
    const newestVersion = `v${ids.indexOf(newest)}`;
    expect(await releaseVersion(live, files)).toBe(newestVersion);
    for (const release of await readdir(releasesDir)) {
      expect(await releaseVersion(join(releasesDir, release), files)).toMatch(/^v\d$/);
    }
    const client = new pg.Client({ connectionString: pair.databaseUrl });
    await client.connect();
    const recorded = await client.query("select count(*)::int as n from deploys where username = 'crowd' and project = 'site'");
    await client.end();
    expect(recorded.rows[0].n).toBe(10);
    await until(async () => (await readdir(join(shared, 'deploys/.trash'))).length === 0, 'both replicas to empty their trash');
  });

  it('answers 500 with the spec messages while the database is gone, and recovers when it is back', async () => {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    const name = new URL(pair.databaseUrl).pathname.slice(1);
    try {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [name]);
      const create = await call(a.url, 'POST', '/api/v1/auth', ADMIN, { username: 'late' });
      expect(create).toEqual({ status: 500, body: { status: 'error', error: 'failed to create user' } });
      const remove = await call(b.url, 'DELETE', '/api/v1/auth', ADMIN, { username: 'team' });
      expect(remove).toEqual({ status: 500, body: { status: 'error', error: 'failed to delete user' } });
      const status = await fetch(`${a.url}/api/v1/status`);
      expect(status.status).toBe(200);
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      await admin.end();
    }
    const again = await call(a.url, 'POST', '/api/v1/auth', ADMIN, { username: 'late' });
    expect(again.status).toBe(200);
    expect((await deploy(b.url, again.body.token!, 'back', versionedSite('b1', 5))).status).toBe(200);
  });
});
