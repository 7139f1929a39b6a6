import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { manifestDigest } from '../../src/domain/manifest-digest.js';
import { ChildFleet, createUserAt, deployTo } from '../support/child-service.js';
import { sha256 } from '../support/sha256.js';
import { versionedSite } from '../support/sites.js';
import { until } from '../support/until.js';

const ADMIN = 'prepared-crash-admin-token-0123456789ab';
const fleet = new ChildFleet({ ADMIN_TOKEN: ADMIN, REPLICA_ID: 'r1', PRECOMPRESS: 'off' }, 'sitedrop-prepared-crash-');
afterEach(() => fleet.cleanUp());

/** Every file below `dir` (relative path to absolute), directories walked. */
async function filesUnder(dir: string, prefix = ''): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) for (const [k, v] of await filesUnder(dir, rel)) out.set(k, v);
    else out.set(rel, join(dir, rel));
  }
  return out;
}

/** For each object of the store: its link count, and how many files of the user's releases are it. */
async function objectLinks(deploys: string, user: string): Promise<{ nlink: number; inReleases: number }[]> {
  const inReleases = new Map<number, number>();
  for (const project of (await readdir(join(deploys, user))).filter((name) => !name.startsWith('.'))) {
    for (const release of await readdir(join(deploys, user, project))) {
      for (const path of (await filesUnder(join(deploys, user, project, release))).values()) {
        const { ino } = await lstat(path);
        inReleases.set(ino, (inReleases.get(ino) ?? 0) + 1);
      }
    }
  }
  const objects = join(deploys, user, '.objects');
  const out: { nlink: number; inReleases: number }[] = [];
  for (const shard of await readdir(objects)) {
    for (const name of await readdir(join(objects, shard))) {
      const { nlink, ino } = await lstat(join(objects, shard, name));
      out.push({ nlink, inReleases: inReleases.get(ino) ?? 0 });
    }
  }
  return out;
}

describe('killed (SIGKILL) while a release is built from its base for a session opened on it', () => {
  it('on restart the area is gone, every object is linked by the store and its releases alone, and the session still publishes', async () => {
    const dataDir = await fleet.dataDir();
    const first = await fleet.start(dataDir);
    const token = await createUserAt(first.url, ADMIN, 'crash');
    const deployed = await deployTo(first.url, token, 'site', versionedSite('v1', 6000));
    expect(deployed.status).toBe(200);
    const deploys = join(dataDir, 'deploys');
    const release = join(deploys, 'crash', 'site', deployed.body.release!);
    const files = await Promise.all([...(await filesUnder(release))].map(async ([path, abs]) => {
      const bytes = await readFile(abs);
      return { path, size: bytes.length, digest: sha256(bytes) };
    }));
    const call = async (url: string, method: string, path: string, body?: unknown) => {
      const response = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const opened = await call(first.url, 'POST', '/api/v1/deploys', { project: 'site', base: { release: deployed.body.release, digest: manifestDigest(files) }, files: [], removed: [] });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    // Killed while the base's 6,001 links are being made.
    await until(async () => (await readdir(join(deploys, '.staging'))).length === 1, 'the area built from the base', 20_000);
    await fleet.kill(first);
    const leftover = (await readdir(join(deploys, '.staging')))[0]!;

    const second = await fleet.start(dataDir);
    expect(await readdir(join(deploys, '.staging'))).toEqual([]);
    expect(second.output()).toContain(leftover);
    // After start-up's collection: no object left with one link, and no link left but the store's and the releases'.
    await until(async () => (await objectLinks(deploys, 'crash')).every(({ nlink }) => nlink > 1), 'the collection', 20_000);
    const links = await objectLinks(deploys, 'crash');
    expect(links.length).toBeGreaterThan(6000);
    expect(links.filter(({ nlink, inReleases }) => nlink !== 1 + inReleases)).toEqual([]);

    // The session outlived the crash; the release it had prepared did not, and is built whole.
    const changed = files.map((f) => (f.path === 'index.html' ? { path: f.path, size: files.find((g) => g.path === 'd0/page-0.html')!.size, digest: files.find((g) => g.path === 'd0/page-0.html')!.digest } : f));
    const revised = await call(second.url, 'PUT', `/api/v1/deploys/${String(opened.body.id)}/manifest`, { files: changed });
    expect(revised).toMatchObject({ status: 200, body: { missing: [] } });
    const published = await call(second.url, 'POST', `/api/v1/deploys/${String(opened.body.id)}/publish`);
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    const live = join(deploys, 'crash', 'site', String(published.body.release));
    expect(await readFile(join(live, 'index.html'))).toEqual(await readFile(join(release, 'd0/page-0.html')));
  }, 90_000);
});
