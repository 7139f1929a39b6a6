import { existsSync, watch } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChildFleet, createUserAt, deployTo } from '../support/child-service.js';
import { versionedSite } from '../support/sites.js';

const ADMIN = 'user-deletion-admin-token-0123456789ab';
const fleet = new ChildFleet({ ADMIN_TOKEN: ADMIN, REPLICA_ID: 'r1' }, 'sitedrop-user-deletion-');

afterEach(() => fleet.cleanUp());

const admin = (url: string, method: string, path: string, body?: unknown) =>
  fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, ...(body !== undefined && { body: JSON.stringify(body) }) });

async function deployPreview(url: string, token: string, project: string, preview: string, archive: Buffer): Promise<number> {
  const form = new FormData();
  form.append('project', project);
  form.append('preview', preview);
  form.append('file', new Blob([archive]), 'site.tgz');
  const response = await fetch(`${url}/api/v1/deploy`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  await response.text();
  return response.status;
}

describe("DELETE /api/v1/auth with files 'delete', the service killed part-way", () => {
  it('leaves a user that a DELETE again finishes: no site of it stays served, and a user made again under the name inherits nothing', async () => {
    const dataDir = await fleet.dataDir();
    let child = await fleet.start(dataDir);
    const token = await createUserAt(child.url, ADMIN, 'gone');
    expect((await deployTo(child.url, token, 'site', versionedSite('v1', 50))).status).toBe(200);
    expect(await deployPreview(child.url, token, 'site', 'pr-1', versionedSite('p1', 50))).toBe(200);
    const live = join(dataDir, 'docs/gone/site');
    const releases = join(dataDir, 'deploys/gone');
    expect(existsSync(live)).toBe(true);

    // Killed the moment the preview's link goes: the first of the user's files.
    const removing = new Promise<void>((resolve) => {
      const watcher = watch(join(dataDir, 'previews/gone/site'), () => {
        watcher.close();
        resolve();
      });
    });
    const cut = admin(child.url, 'DELETE', '/api/v1/auth', { username: 'gone', files: 'delete' }).then((r) => r.status, () => 'cut');
    await removing;
    await fleet.kill(child);
    expect(await cut, 'the kill landed after the deletion had finished').toBe('cut');

    child = await fleet.start(dataDir);
    // The user is still there, so the administrator can finish the deletion.
    expect(await (await admin(child.url, 'GET', '/api/v1/users')).text()).toContain('"gone"');
    const again = await admin(child.url, 'DELETE', '/api/v1/auth', { username: 'gone', files: 'delete' });
    expect(again.status, await again.clone().text()).toBe(200);
    expect(existsSync(live)).toBe(false);
    expect(existsSync(releases)).toBe(false);
    expect(await (await admin(child.url, 'GET', '/api/v1/users')).text()).not.toContain('"gone"');

    const reborn = await createUserAt(child.url, ADMIN, 'gone');
    const projects = await fetch(`${child.url}/api/v1/projects`, { headers: { authorization: `Bearer ${reborn}` } });
    expect(await projects.json()).toEqual(expect.objectContaining({ projects: [] }));
  }, 60_000);
});
