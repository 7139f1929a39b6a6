import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChildFleet, createUserAt, deployTo as deploy, type Child } from '../support/child-service.js';
import { releaseVersion, versionedSite } from '../support/sites.js';
import { slowUpload } from '../support/slow-upload.js';
import { until } from '../support/until.js';

const ADMIN = 'crash-admin-token-0123456789abcdefghijk';
const fleet = new ChildFleet({ ADMIN_TOKEN: ADMIN, REPLICA_ID: 'r1' }, 'sitedrop-crash-');
const service = (dataDir: string, env: Record<string, string> = {}): Promise<Child> => fleet.start(dataDir, env);
const freshDataDir = (): Promise<string> => fleet.dataDir();
const createUser = (url: string, name: string): Promise<string> => createUserAt(url, ADMIN, name);
const kill9 = (child: Child): Promise<void> => fleet.kill(child);

/** The invariant a crash must keep: the live link names a complete release, and every release is complete. */
async function assertConsistent(dataDir: string, project: string, files: number, versions: string[]): Promise<string> {
  const releasesDir = join(dataDir, 'deploys/crash', project);
  const target = await readlink(join(dataDir, 'docs/crash', project));
  expect(target.startsWith(`${releasesDir}/`)).toBe(true);
  const live = await releaseVersion(target, files);
  expect(versions).toContain(live);
  for (const release of await readdir(releasesDir)) {
    expect(versions).toContain(await releaseVersion(join(releasesDir, release), files));
  }
  return live;
}

afterEach(() => fleet.cleanUp());

describe('crashes (SIGKILL) and shutdowns (SIGTERM) of the real service', () => {
  it('killed mid-upload: on restart the staging area is removed and logged, the live release untouched', async () => {
    const dataDir = await freshDataDir();
    const first = await service(dataDir);
    const token = await createUser(first.url, 'crash');
    expect((await deploy(first.url, token, 'site', versionedSite('v1', 100))).status).toBe(200);
    const archive = versionedSite('v2', 3000, 512);
    const upload = slowUpload(first.url, token, 'site', archive, Math.floor(archive.length / 2));
    await until(async () => (await readdir(join(dataDir, 'deploys/.staging'))).length === 1, 'a staging area');
    await kill9(first);
    upload.req.destroy();
    const leftover = (await readdir(join(dataDir, 'deploys/.staging')))[0]!;

    const second = await service(dataDir);
    expect(await readdir(join(dataDir, 'deploys/.staging'))).toEqual([]);
    expect(second.output()).toContain('"msg":"removed leftover from an interrupted deploy"');
    expect(second.output()).toContain(leftover);
    expect(await assertConsistent(dataDir, 'site', 100, ['v1'])).toBe('v1');
  });

  it('killed at random moments during deploys: the live link always names a complete release', async () => {
    const dataDir = await freshDataDir();
    let child = await service(dataDir);
    const token = await createUser(child.url, 'crash');
    const files = 1500;
    expect((await deploy(child.url, token, 'site', versionedSite('v0', files))).status).toBe(200);
    const versions = ['v0'];
    // From mid-upload, through extraction and syncfs, to after the swap.
    const delays = [5, 60, 150, 300, 600, 1200, 2500];
    for (const [i, delay] of delays.entries()) {
      const version = `v${i + 1}`;
      versions.push(version);
      const pending = deploy(child.url, token, 'site', versionedSite(version, files)).catch(() => undefined);
      await new Promise((r) => setTimeout(r, delay));
      await kill9(child);
      await pending;
      child = await service(dataDir);
      await assertConsistent(dataDir, 'site', files, versions);
      expect(await readdir(join(dataDir, 'deploys/.staging'))).toEqual([]);
      expect(await readdir(join(dataDir, 'deploys/.trash'))).toEqual([]);
    }
    const live = await assertConsistent(dataDir, 'site', files, versions);
    console.log(`after ${delays.length} kills the live release is ${live}`);
    // Eight starts and eight 1,500-file deploys: ~25 s alone, over 30 s beside the flood test.
  }, 90_000);

  it('on start-up removes the temporary links and trash its own crash left, and nothing else (not another replica\'s)', async () => {
    const dataDir = await freshDataDir();
    const first = await service(dataDir);
    const token = await createUser(first.url, 'crash');
    expect((await deploy(first.url, token, 'site', versionedSite('v1', 10))).status).toBe(200);
    await kill9(first);
    const tempLink = join(dataDir, 'docs/crash/.site.tmp+r1+0a1b2c3d4e5f');
    await symlink('/nowhere', tempLink);
    await mkdir(join(dataDir, 'deploys/.trash/r1+20200101T000000+abcdef/css'), { recursive: true });
    await writeFile(join(dataDir, 'deploys/.trash/r1+20200101T000000+abcdef/css/a.css'), 'x');
    // Another replica's work in progress on the same storage is not this one's to remove.
    const othersLink = join(dataDir, 'docs/crash/.site.tmp+r2+0a1b2c3d4e5f');
    await symlink('/elsewhere', othersLink);
    await mkdir(join(dataDir, 'deploys/.staging/deploy+r2+AbCdEf'), { recursive: true });
    await mkdir(join(dataDir, 'deploys/.trash/r2+20200101T000000+fedcba'), { recursive: true });
    const second = await service(dataDir);
    expect((await readdir(join(dataDir, 'docs/crash'))).sort()).toEqual(['.site.tmp+r2+0a1b2c3d4e5f', 'site']);
    expect(await readdir(join(dataDir, 'deploys/.trash'))).toEqual(['r2+20200101T000000+fedcba']);
    expect(await readdir(join(dataDir, 'deploys/.staging'))).toEqual(['deploy+r2+AbCdEf']);
    expect(second.output()).toContain(tempLink);
    expect(await assertConsistent(dataDir, 'site', 10, ['v1'])).toBe('v1');
  });

  it('a permission error while unpacking: 500 deployment failed, live untouched, the area removed once it can be', async () => {
    const dataDir = await freshDataDir();
    const first = await service(dataDir);
    const token = await createUser(first.url, 'crash');
    expect((await deploy(first.url, token, 'site', versionedSite('v1', 10))).status).toBe(200);
    const archive = versionedSite('v2', 600, 256);
    const upload = slowUpload(first.url, token, 'site', archive, 4096);
    await until(async () => (await readdir(join(dataDir, 'deploys/.staging'))).length === 1, 'a staging area');
    const area = join(dataDir, 'deploys/.staging', (await readdir(join(dataDir, 'deploys/.staging')))[0]!);
    // Root ignores modes but not ext4's immutable flag: creating anything in it fails with EPERM.
    execFileSync('chattr', ['+i', area]);
    try {
      upload.finish();
      const r = await upload.response;
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ status: 'error', error: 'deployment failed' });
      expect(await assertConsistent(dataDir, 'site', 10, ['v1'])).toBe('v1');
      expect(await readdir(join(dataDir, 'deploys/crash/site'))).toHaveLength(1);
    } finally {
      execFileSync('chattr', ['-i', area]);
    }
    // The area could not be moved while immutable; the next start-up removes it.
    await kill9(first);
    const second = await service(dataDir);
    expect(await readdir(join(dataDir, 'deploys/.staging'))).toEqual([]);
    expect(second.output()).toContain(area);
  });

  it('SIGTERM lets an in-flight deploy finish, then exits 0', async () => {
    const dataDir = await freshDataDir();
    const child = await service(dataDir);
    const token = await createUser(child.url, 'crash');
    const archive = versionedSite('v1', 400);
    const upload = slowUpload(child.url, token, 'site', archive, Math.floor(archive.length / 2));
    await until(async () => (await readdir(join(dataDir, 'deploys/.staging'))).length === 1, 'a staging area');
    child.process.kill('SIGTERM');
    await until(() => fetch(`${child.url}/api/v1/status`).then(() => false, () => true), 'the service to stop taking connections');
    upload.finish();
    const r = await upload.response;
    expect(r.status).toBe(200);
    expect(await child.exited).toBe(0);
    expect(await assertConsistent(dataDir, 'site', 400, ['v1'])).toBe('v1');
  });

  it('SIGTERM gives up a deploy that outlasts SHUTDOWN_GRACE_SECONDS, cleans it up, and exits 0', async () => {
    const dataDir = await freshDataDir();
    const child = await service(dataDir, { SHUTDOWN_GRACE_SECONDS: '1' });
    const token = await createUser(child.url, 'crash');
    expect((await deploy(child.url, token, 'site', versionedSite('v1', 10))).status).toBe(200);
    const archive = versionedSite('v2', 400);
    const upload = slowUpload(child.url, token, 'site', archive, Math.floor(archive.length / 2));
    await until(async () => (await readdir(join(dataDir, 'deploys/.staging'))).length === 1, 'a staging area');
    const started = Date.now();
    child.process.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    const took = Date.now() - started;
    console.log(`stalled deploy given up; the service exited ${took} ms after SIGTERM (grace 1 s)`);
    expect(took).toBeLessThan(10_000);
    await upload.response.catch(() => undefined);
    expect(await readdir(join(dataDir, 'deploys/.staging'))).toEqual([]);
    expect(child.output()).toMatch(/"count":1,"msg":"aborted deploys at shutdown"/);
    expect(await assertConsistent(dataDir, 'site', 10, ['v1'])).toBe('v1');
  });
});

/** A real full disk: DATA_DIR on a 4 MiB tmpfs (needs root, as CI and this machine have). */
function mountTinyTmpfs(dir: string): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir], { stdio: 'pipe' });
    return undefined;
  } catch (error) {
    return (error as { stderr?: Buffer }).stderr?.toString().trim() || (error as Error).message;
  }
}

describe('a full disk', () => {
  it('ENOSPC during extraction: 500 deployment failed, staging removed, live untouched', async () => {
    const dataDir = await freshDataDir();
    const refused = mountTinyTmpfs(dataDir);
    if (refused !== undefined) {
      // The one environment this cannot run in is one without root; say so loudly.
      console.warn(`SKIPPED ENOSPC test: cannot mount a tmpfs here (${refused})`);
      return;
    }
    try {
      const child = await service(dataDir);
      const token = await createUser(child.url, 'crash');
      expect((await deploy(child.url, token, 'site', versionedSite('v1', 20))).status).toBe(200);
      const tooBig = versionedSite('v2', 400, 8192); // about 6.5 MB unpacked
      const r = await deploy(child.url, token, 'site', tooBig);
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ status: 'error', error: 'deployment failed' });
      expect(await readdir(join(dataDir, 'deploys/.staging'))).toEqual([]);
      expect(await assertConsistent(dataDir, 'site', 20, ['v1'])).toBe('v1');
      // The refused files are deleted in the background; once they are, there is room again.
      await until(async () => (await readdir(join(dataDir, 'deploys/.trash'))).length === 0, 'the trash to empty');
      expect((await deploy(child.url, token, 'site', versionedSite('v3', 20))).status).toBe(200);
      await kill9(child);
    } finally {
      execFileSync('umount', ['-l', dataDir]);
    }
  });
});
