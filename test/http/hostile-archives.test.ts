import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, open, readdir, readFile, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOSTILE, OVER_SMALL_LIMITS, paxFlood, type HostileArchive } from '../support/hostile-archives.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { dir, file, tar, tgz } from '../support/tar-builder.js';
import { gzipSync } from 'node:zlib';
import { snapshot } from '../support/tree.js';

/** Anything named sitedrop-pwned* anywhere under the temp directory is an escape. */
function escapes(): string[] {
  let out: string;
  try {
    out = execFileSync('find', [tmpdir(), '-ignore_readdir_race', '-maxdepth', '6', '-name', 'sitedrop-pwned*'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch (error) {
    // Other test files delete (or unmount) their temp dirs meanwhile, which makes find
    // exit 1; what it found is still on stdout, and a vanished dir is no escape.
    out = String((error as { stdout?: string }).stdout ?? '');
  }
  return out.split('\n').filter(Boolean);
}

describe('hostile archives over HTTP: each refused, nothing outside the release, nothing changed', () => {
  let h: Harness;
  let token: string;
  let live: string;

  beforeAll(async () => {
    h = await startHarness({ MAX_FILES: '100', MAX_EXTRACTED_BYTES: String(100 * 1024) });
    token = await h.createUser('victim');
    const first = await h.deploy(token, 'site', tgz([file('index.html', '<h1>live</h1>')]));
    expect(first.status).toBe(200);
    live = await readlink(join(h.docsRoot, 'victim/site'));
  });
  afterAll(async () => {
    await h.close();
  });

  const check = (archive: HostileArchive) => async () => {
    await h.settled();
    const before = await snapshot(h.root);
    const r = await h.deploy(token, 'site', await archive.archive());
    expect(r.status).toBe(500);
    const error = r.body.error as string;
    expect(error.startsWith('failed to extract tarball: ')).toBe(true);
    const reason = error.slice('failed to extract tarball: '.length);
    if (typeof archive.reason === 'string') expect(reason).toBe(archive.reason);
    else expect(reason).toMatch(archive.reason);
    await h.trashEmptied();
    expect(await snapshot(h.root)).toEqual(before);
    expect(await readdir(join(h.deploysRoot, '.staging'))).toEqual([]);
    expect(await readlink(join(h.docsRoot, 'victim/site'))).toBe(live);
    expect(await readFile(join(h.docsRoot, 'victim/site/index.html'), 'utf8')).toBe('<h1>live</h1>');
    expect(escapes()).toEqual([]);
  };

  for (const archive of HOSTILE) it(`refuses ${archive.name}`, check(archive));
  for (const archive of OVER_SMALL_LIMITS) it(`refuses ${archive.name}`, check(archive));

  it('refuses a flood of PAX records by the cap on inflated bytes', check({ name: 'pax flood', archive: () => paxFlood(70), reason: /^archive decompresses to more than \d+ bytes$/ }));

  it('writes files 0644 and directories 0755 whatever the archive says, owned by the service', async () => {
    const r = await h.deploy(token, 'modes', tgz([
      { path: 'suid.sh', body: '#!/bin/sh', mode: 0o4777, uid: 4242 },
      { path: 'private.html', body: 'x', mode: 0o600 },
      { path: 'sticky/', type: '5', mode: 0o1777 },
      { path: 'locked/', type: '5', mode: 0o000 },
      file('locked/in.html'),
    ]));
    expect(r.status).toBe(200);
    const root = join(h.docsRoot, 'victim/modes');
    const mode = async (p: string) => ((await stat(join(root, p))).mode & 0o7777).toString(8);
    expect(await mode('.')).toBe('755');
    expect(await mode('suid.sh')).toBe('644');
    expect(await mode('private.html')).toBe('644');
    expect(await mode('sticky')).toBe('755');
    expect(await mode('locked')).toBe('755');
    expect(await mode('locked/in.html')).toBe('644');
    expect((await stat(join(root, 'suid.sh'))).uid).toBe(process.getuid?.());
  });

  it('takes . and ./ entries and ./-prefixed names as the release root', async () => {
    const r = await h.deploy(token, 'dots', tgz([dir('.'), dir('./'), file('./index.html', 'dots'), dir('./a/'), file('./a/./b.html', 'b')]));
    expect(r.status).toBe(200);
    expect(await snapshot(join(h.docsRoot, 'victim/dots/'))).toEqual({
      a: 'dir 755',
      'a/b.html': expect.stringMatching(/^file 644 /),
      'index.html': expect.stringMatching(/^file 644 /),
    });
  });

  it('publishes old-style entries named with a trailing / as directories, as GNU tar extracts them', async () => {
    const archive = tar([file('index.html', 'old'), { path: 'olddir/', type: '\u0000' }, { path: 'zerodir/', type: '0' }, file('olddir/in.html', 'in')]);
    const r = await h.deploy(token, 'oldstyle', gzipSync(archive));
    expect(r.status).toBe(200);
    const byHand = await mkdtemp(join(tmpdir(), 'sitedrop-gnutar-'));
    try {
      execFileSync('tar', ['-xf', '-', '-C', byHand], { input: archive });
      const published = await snapshot(join(h.docsRoot, 'victim/oldstyle/'));
      expect(Object.keys(published).sort()).toEqual(Object.keys(await snapshot(byHand)).sort());
      expect(published).toMatchObject({ olddir: 'dir 755', zerodir: 'dir 755' });
    } finally {
      await rm(byHand, { recursive: true, force: true });
    }
  });

  it('refuses every GNU sparse format as GNU tar writes it (old GNU, pax 0.0, 0.1, 1.0)', async () => {
    const work = await mkdtemp(join(tmpdir(), 'sitedrop-sparse-'));
    try {
      await mkdir(join(work, 'site'));
      const holes = await open(join(work, 'site/holes.bin'), 'w');
      await holes.write('start', 0);
      await holes.write('end', 3 * 1024 * 1024);
      await holes.close();
      await open(join(work, 'site/index.html'), 'w').then(async (f) => {
        await f.write('<h1>sparse</h1>');
        await f.close();
      });
      const variants: [string, string[]][] = [
        ['old GNU', ['--format=gnu']],
        ['pax 0.0', ['--format=pax', '--sparse-version=0.0']],
        ['pax 0.1', ['--format=pax', '--sparse-version=0.1']],
        ['pax 1.0', ['--format=pax', '--sparse-version=1.0']],
      ];
      for (const [name, flags] of variants) {
        const archive = execFileSync('tar', ['-czf', '-', '--sparse', ...flags, '-C', join(work, 'site'), 'index.html', 'holes.bin']);
        await h.settled();
        const before = await snapshot(h.root);
        const r = await h.deploy(token, 'site', archive);
        expect({ name, status: r.status }).toEqual({ name, status: 500 });
        expect(r.body.error).toMatch(/^failed to extract tarball: GNU sparse files are not supported \(archive without --sparse\): (GNUSparseFile\.\d+\/|\.\/GNUSparseFile\.\d+\/)?holes\.bin$/);
        await h.trashEmptied();
        expect(await snapshot(h.root)).toEqual(before);
      }
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});
