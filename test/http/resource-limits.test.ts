import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployTo as deploy, startChild, type Child } from '../support/child-service.js';
import { gzipSync } from 'node:zlib';
import { manifestDigest } from '../../src/domain/manifest-digest.js';
import type { Digest, ManifestFile } from '../../src/domain/manifest.js';
import { deepDirectories, doublyCompressedBomb, gzipBombOfZeros, manifestBomb, sixtyThousandEmptyFiles } from '../support/hostile-archives.js';
import { sha256 } from '../support/sha256.js';
import { file, tgz } from '../support/tar-builder.js';

const ADMIN = 'limits-admin-token-0123456789abcdefghij';

/** Peak resident memory of a process so far (VmHWM), in MiB. */
function peakRssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmHWM:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1]) / 1024;
}


describe('resource limits at their defaults, in a child service whose memory is measured', () => {
  let child: Child;
  let dataDir: string;
  let token: string;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'sitedrop-limits-'));
    child = await startChild({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN });
    const r = await fetch(`${child.url}/api/v1/auth`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: '{"username":"bomber"}' });
    token = ((await r.json()) as { token: string }).token;
    expect((await deploy(child.url, token, 'site', tgz([file('index.html', 'live')]))).status).toBe(200);
  });
  afterAll(async () => {
    child.process.kill('SIGKILL');
    await child.exited;
    await rm(dataDir, { recursive: true, force: true });
  }, 180_000); // removing the 40,000-file release of long paths took over 30 s in CI under the suite's load

  it('refuses 1 GiB of zeros from a ~1 MB gzip bomb, in bounded memory', async () => {
    const bomb = await gzipBombOfZeros();
    expect(bomb.length).toBeLessThan(1.1 * 1024 * 1024);
    const live = await readlink(join(dataDir, 'docs/bomber/site'));
    const r = await deploy(child.url, token, 'site', bomb);
    expect(r.status).toBe(500);
    expect(r.body.error).toBe('failed to extract tarball: unexpected data after the end of the tar archive');
    const peak = peakRssMiB(child.process.pid!);
    console.log(`gzip bomb (${(bomb.length / 1024 / 1024).toFixed(2)} MB -> 1 GiB) refused; service peak RSS ${peak.toFixed(1)} MiB`);
    expect(peak).toBeLessThan(256);
    expect(await readlink(join(dataDir, 'docs/bomber/site'))).toBe(live);
    expect(await readdir(join(dataDir, 'deploys/.staging'))).toEqual([]);
  });

  it('refuses 60,000 empty files (over MAX_FILES 50,000) while streaming, in bounded memory', async () => {
    const archive = sixtyThousandEmptyFiles();
    const r = await deploy(child.url, token, 'site', archive);
    expect(r.status).toBe(500);
    expect(r.body.error).toBe('failed to extract tarball: archive has more than 50000 files and directories');
    const peak = peakRssMiB(child.process.pid!);
    console.log(`60,000-entry archive (${(archive.length / 1024).toFixed(0)} KB) refused; service peak RSS ${peak.toFixed(1)} MiB`);
    expect(peak).toBeLessThan(256);
    expect(await readdir(join(dataDir, 'deploys/.staging'))).toEqual([]);
    expect(await readdir(join(dataDir, 'deploys/bomber/site'))).toHaveLength(1);
  }, 90_000);

  it('refuses a tarball compressed twice at its first block, however the inner stream is padded', async () => {
    const bomb = await doublyCompressedBomb();
    const started = Date.now();
    const r = await deploy(child.url, token, 'site', bomb);
    expect(r.status).toBe(500);
    expect(r.body.error).toBe('failed to extract tarball: archive is compressed twice: the inflated stream is gzip, not tar (upload a .tar.gz compressed once)');
    const peak = peakRssMiB(child.process.pid!);
    console.log(`double-gzip bomb (${(bomb.length / 1024).toFixed(0)} KB, 256 MiB of inner zeros) refused in ${Date.now() - started} ms; service peak RSS ${peak.toFixed(1)} MiB`);
    expect(peak).toBeLessThan(256);
    expect(await readdir(join(dataDir, 'deploys/.staging'))).toEqual([]);
  });

  /** POST /api/v1/deploys with a gzip-compressed manifest, as the CLI sends it. */
  const openSession = async (body: Buffer) => {
    const r = await fetch(`${child.url}/api/v1/deploys`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-encoding': 'gzip' }, body });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  it("refuses eight of issue 26's manifest bombs at once (0.4 MB of gzip, 42 MB of manifest each) in bounded memory", async () => {
    const bomb = manifestBomb();
    const answers = await Promise.all(Array.from({ length: 8 }, () => openSession(bomb)));
    for (const answer of answers) expect(answer).toEqual({ status: 400, body: { status: 'error', error: 'invalid manifest: site has more than 50000 files and directories' } });
    const peak = peakRssMiB(child.process.pid!);
    console.log(`8 manifest bombs (${(bomb.length / 1024).toFixed(0)} KB each) refused; service peak RSS ${peak.toFixed(1)} MiB`);
    expect(peak).toBeLessThan(256);
    expect(await readdir(join(dataDir, 'deploys/.sessions'))).toEqual([]);
  }, 180_000);

  it('opens a whole manifest of 40,000 files of long paths, and, relative to its release, the largest difference a client sends instead', async () => {
    // Paths of about 740 bytes (each component under 255) in 280 directories: 34 MB of JSON.
    const pathOf = (i: number) => `section-${i % 40}-${'x'.repeat(230)}/part-${i % 7}-${'y'.repeat(240)}/page-${i}-${'z'.repeat(230)}.html`;
    const site: ManifestFile[] = Array.from({ length: 40_000 }, (_, i) => ({ path: pathOf(i), size: 2, digest: sha256('v1') as Digest }));
    const whole = await openSession(gzipSync(JSON.stringify({ project: 'docs', files: site })));
    expect(whole.status, JSON.stringify(whole.body)).toBe(201);
    expect(whole.body).toMatchObject({ files: 40_000, missing: [sha256('v1')] });
    const id = String(whole.body.id);
    const signed = { authorization: `Bearer ${token}` };
    expect((await fetch(`${child.url}/api/v1/deploys/${id}/objects`, { method: 'PUT', headers: { ...signed, 'content-type': 'application/gzip' }, body: tgz([file(sha256('v1'), 'v1')]) })).status).toBe(200);
    const published = await fetch(`${child.url}/api/v1/deploys/${id}/publish`, { method: 'POST', headers: signed });
    expect(published.status).toBe(200);
    const release = ((await published.json()) as { release: string }).release;

    // Of 40,000 files, 39,998 changed and one removed: a client sends a difference only while it is shorter than the whole.
    const changed = site.slice(0, 39_998).map((f) => ({ ...f, size: 3, digest: sha256('v2') }));
    const relative = await openSession(gzipSync(JSON.stringify({ project: 'docs', base: { release, digest: manifestDigest(site) }, files: changed, removed: [pathOf(39_999)] })));
    expect(relative.status, JSON.stringify(relative.body)).toBe(201);
    expect(relative.body).toMatchObject({ files: 39_999, missing: [sha256('v2')] });
    console.log(`40,000-file manifests opened, whole and relative; service peak RSS ${peakRssMiB(child.process.pid!).toFixed(1)} MiB`);
    expect((await fetch(`${child.url}/api/v1/deploys/${String(relative.body.id)}`, { method: 'DELETE', headers: signed })).status).toBe(204);
  }, 300_000);

  it('counts the directories a path implies: 2,001 files 31 deep (62,031 directories) are over MAX_FILES 50,000', async () => {
    const archive = deepDirectories(2001);
    const r = await deploy(child.url, token, 'site', archive);
    expect(r.status).toBe(500);
    expect(r.body.error).toBe('failed to extract tarball: archive has more than 50000 files and directories');
    console.log(`deep-directory archive (${(archive.length / 1024).toFixed(0)} KB, 2,001 files) refused`);
    expect(await readdir(join(dataDir, 'deploys/.staging'))).toEqual([]);
    expect(await readdir(join(dataDir, 'deploys/bomber/site'))).toHaveLength(1);
  }, 90_000);
});
