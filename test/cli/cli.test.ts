import { execFile } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';
import { tgz, file } from '../support/tar-builder.js';
import { snapshot } from '../support/tree.js';
import { CLI, runNode, type Run } from './run-cli.js';

describe('the sitedrop CLI (the built binary, against a real server)', () => {
  let h: Harness;
  let work: string;
  let token: string;

  // The manifests a deploy caches stay in this test's own directory.
  const sitedrop = (args: string[], env: Record<string, string> = {}): Promise<Run> => runNode([CLI, ...args], { env: { SITEDROP_URL: h.url, SITEDROP_CACHE_DIR: join(work, 'cache'), ...env } });
  const as = (t: string) => ({ SITEDROP_TOKEN: t });
  const admin = { SITEDROP_ADMIN_TOKEN: ADMIN_TOKEN };

  beforeAll(async () => {
    h = await startHarness();
    work = await mkdtemp(join(tmpdir(), 'sitedrop-cli-'));
    const created = await sitedrop(['admin', 'create-user', 'clia'], admin);
    expect(created.code).toBe(0);
    token = created.stdout.trim();
    expect(token).toMatch(/^[A-Za-z0-9]{32}$/);
  });
  afterAll(async () => {
    await h.close();
    await rm(work, { recursive: true, force: true });
  });

  it('deploys a folder (nested, unicode names, an empty file) byte for byte, with plain output off a terminal', async () => {
    const dist = join(work, 'dist');
    await mkdir(join(dist, 'docs/guide/深い'), { recursive: true });
    await writeFile(join(dist, 'index.html'), '<h1>home</h1>');
    await writeFile(join(dist, 'docs/guide/深い/ページ.html'), 'ページ');
    await writeFile(join(dist, 'docs/café.css'), 'body { color: #c0ffee }');
    await writeFile(join(dist, 'docs/empty.txt'), '');
    await writeFile(join(dist, 'docs/blob.bin'), Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 256)));
    const r = await sitedrop(['deploy', dist, '--project', 'docs'], as(token));
    expect(r.code).toBe(0);
    // The empty file is never sent: its digest says what it holds.
    expect(r.stdout).toMatch(/^sent 4 of 5 files \(0\.1 MB of 0\.1 MB\); 1 already on the server\ndeployed docs: release \d{8}T\d{6}\nhttps:\/\/sites\.example\.test\/clia\/docs\/\n$/);
    expect(r.stdout + r.stderr).not.toContain('\u001b');
    const hashes = (tree: Record<string, string>) => Object.fromEntries(Object.entries(tree).map(([k, v]) => [k, v.replace(/^(file|dir) \d+ ?/, '$1 ')]));
    expect(hashes(await snapshot(join(h.docsRoot, 'clia/docs/')))).toEqual(hashes(await snapshot(dist)));
  });

  it('warns when there is no index.html, and refuses an empty folder and a symlink, naming it', async () => {
    const bare = join(work, 'bare');
    await mkdir(bare, { recursive: true });
    await writeFile(join(bare, 'page.html'), 'p');
    const warned = await sitedrop(['deploy', bare, '--project', 'bare'], as(token));
    expect(warned.code).toBe(0);
    expect(warned.stderr).toContain('has no index.html at its root');

    const empty = join(work, 'empty');
    await mkdir(empty, { recursive: true });
    const refused = await sitedrop(['deploy', empty, '--project', 'bare'], as(token));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is empty');

    const linked = join(work, 'linked');
    await mkdir(join(linked, 'assets'), { recursive: true });
    await writeFile(join(linked, 'index.html'), 'x');
    await symlink('/etc/passwd', join(linked, 'assets/passwd'));
    const link = await sitedrop(['deploy', linked, '--project', 'bare'], as(token));
    expect(link.code).toBe(2);
    expect(link.stderr).toContain('assets/passwd is a symbolic link');
  });

  it('deploys a .tar.gz as it is, and --json prints the server response', async () => {
    const archive = join(work, 'site.tgz');
    await writeFile(archive, tgz([file('index.html', 'from a tarball')]));
    const r = await sitedrop(['deploy', archive, '--project', 'tarball', '--json'], as(token));
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout.trim())).toEqual({ status: 'ok', project: 'tarball', username: 'clia', url: 'https://sites.example.test/clia/tarball/', release: expect.any(String) });
    expect(await readFile(join(h.docsRoot, 'clia/tarball/index.html'), 'utf8')).toBe('from a tarball');
  });

  it('lists releases, rolls back, and deletes a project', async () => {
    const archive = join(work, 'v.tgz');
    const ids: string[] = [];
    for (const v of ['v1', 'v2']) {
      await writeFile(archive, tgz([file('index.html', v)]));
      ids.push(JSON.parse((await sitedrop(['deploy', archive, '--project', 'rolling', '--json'], as(token))).stdout).release);
    }
    await writeFile(archive, tgz([file('index.html', 'a pull request')]));
    const preview = JSON.parse((await sitedrop(['deploy', archive, '--project', 'rolling', '--preview', 'pr-3', '--json'], as(token))).stdout).release;
    const releases = await sitedrop(['releases', 'rolling'], as(token));
    expect(releases.stdout.split('\n').filter(Boolean)).toEqual([
      `${preview}        1 files  0.0 MB  preview pr-3`,
      `${ids[1]}  live  1 files  0.0 MB`,
      `${ids[0]}        1 files  0.0 MB`,
    ]);
    const back = await sitedrop(['rollback', 'rolling'], as(token));
    expect(back).toMatchObject({ code: 0, stdout: `rolling is live on ${ids[0]} (was ${ids[1]})\n` });
    expect(await readFile(join(h.docsRoot, 'clia/rolling/index.html'), 'utf8')).toBe('v1');
    const none = await sitedrop(['rollback', 'rolling'], as(token));
    expect(none).toMatchObject({ code: 1, stderr: 'sitedrop: no older release to roll back to\n' });
    const named = await sitedrop(['rollback', 'rolling', ids[1]!], as(token));
    expect(named.code).toBe(0);
    expect((await sitedrop(['projects'], as(token))).stdout).toContain('rolling  live');
    expect(await sitedrop(['delete-project', 'rolling'], as(token))).toMatchObject({ code: 0, stdout: 'deleted rolling\n' });
    expect((await sitedrop(['projects'], as(token))).stdout).not.toContain('rolling');
  });

  it('administers users: reroll kills the old token, users never shows tokens, delete-user --delete-files', async () => {
    const first = (await sitedrop(['admin', 'create-user', 'temp'], admin)).stdout.trim();
    const second = (await sitedrop(['admin', 'reroll', 'temp'], admin)).stdout.trim();
    expect(second).not.toBe(first);
    expect(await sitedrop(['projects'], as(first))).toMatchObject({ code: 1, stderr: 'sitedrop: unauthorized\n' });
    expect((await sitedrop(['projects'], as(second))).code).toBe(0);
    const users = await sitedrop(['admin', 'users'], admin);
    expect(users.stdout).toContain('temp  0 projects');
    expect(users.stdout).not.toContain(second);
    expect(await sitedrop(['admin', 'delete-user', 'temp', '--delete-files'], admin)).toMatchObject({ code: 0, stdout: 'deleted temp and its files\n' });
    expect(await sitedrop(['admin', 'users'], { SITEDROP_ADMIN_TOKEN: 'x'.repeat(40) })).toMatchObject({ code: 1, stderr: 'sitedrop: invalid admin token\n' });
  });

  it('makes, lists and revokes deploy keys; a key deploys its project and nothing else', async () => {
    const made = await sitedrop(['keys', 'create', 'keyed', '--name', 'GitHub Actions', '--scope', 'deploy', '--expires-in-days', '30'], as(token));
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/^[A-Za-z0-9]{32}\n$/);
    const key = made.stdout.trim();
    const id = /^key (\S+) can deploy keyed \(deploy\); its token is shown this once\n$/.exec(made.stderr)?.[1];
    expect(id).toBeDefined();
    const preview = JSON.parse((await sitedrop(['keys', 'create', 'keyed', '--name', 'pr', '--scope', 'preview', '--json'], as(token))).stdout);
    expect(preview).toEqual({ status: 'ok', id: expect.any(String), token: expect.stringMatching(/^[A-Za-z0-9]{32}$/) });

    const listed = await sitedrop(['keys', 'list', 'keyed'], as(token));
    expect(listed.code).toBe(0);
    const lines = listed.stdout.split('\n').filter(Boolean);
    expect(lines[0]).toMatch(new RegExp(`^${id}  deploy   expires \\d{4}-\\d\\d-\\d\\dT\\S+Z  last used never  GitHub Actions$`));
    expect(lines[1]).toBe(`${preview.id}  preview  expires never  last used never  pr`);
    expect(listed.stdout).not.toContain(key);

    const archive = join(work, 'keyed.tgz');
    await writeFile(archive, tgz([file('index.html', 'by a key')]));
    const deployed = await sitedrop(['deploy', archive, '--project', 'keyed'], as(key));
    expect(deployed.stdout).toMatch(/^deployed keyed: release \d{8}T\d{6}\nhttps:\/\/sites\.example\.test\/clia\/keyed\/\n$/);
    expect(await readFile(join(h.docsRoot, 'clia/keyed/index.html'), 'utf8')).toBe('by a key');
    expect(await sitedrop(['deploy', archive, '--project', 'elsewhere'], as(key))).toMatchObject({ code: 1, stderr: 'uploading...\nsitedrop: unauthorized\n' });
    expect(await sitedrop(['keys', 'list', 'keyed'], as(key))).toMatchObject({ code: 1, stderr: 'sitedrop: unauthorized\n' });
    expect((await sitedrop(['keys', 'list', 'keyed'], as(token))).stdout).toMatch(/last used \d{4}-/);

    expect(await sitedrop(['keys', 'revoke', 'keyed', id!], as(token))).toMatchObject({ code: 0, stdout: `revoked ${id}\n` });
    expect(await sitedrop(['keys', 'revoke', 'keyed', id!], as(token))).toMatchObject({ code: 1, stderr: 'sitedrop: key not found\n' });
    expect(await sitedrop(['deploy', archive, '--project', 'keyed'], as(key))).toMatchObject({ code: 1, stderr: 'uploading...\nsitedrop: unauthorized\n' });
    expect(await sitedrop(['keys', 'create', 'keyed', '--name', 'x', '--scope', 'root'], as(token))).toMatchObject({ code: 1, stderr: "sitedrop: scope must be 'deploy' or 'preview'\n" });
    expect((await sitedrop(['keys', 'create', 'keyed', '--name', 'x', '--scope', 'deploy', '--expires-in-days', 'soon'], as(token))).code).toBe(2);
    expect((await sitedrop(['keys', 'create', 'keyed', '--scope', 'deploy'], as(token))).code).toBe(2);
  });

  it('deploys a preview, lists previews, promotes one and deletes one', async () => {
    const archive = join(work, 'preview.tgz');
    await writeFile(archive, tgz([file('index.html', 'live')]));
    expect((await sitedrop(['deploy', archive, '--project', 'previewed'], as(token))).code).toBe(0);
    await writeFile(archive, tgz([file('index.html', 'pull request 7')]));
    const deployed = await sitedrop(['deploy', archive, '--project', 'previewed', '--preview', 'pr-7'], as(token));
    expect(deployed).toMatchObject({ code: 0, stdout: expect.stringMatching(/^deployed previewed preview pr-7: release \d{8}T\d{6}\nhttps:\/\/sites\.example\.test\/_previews\/clia\/previewed\/pr-7\/\n$/) });
    expect(await readFile(join(h.docsRoot, 'clia/previewed/index.html'), 'utf8')).toBe('live');
    const listed = await sitedrop(['previews', 'previewed'], as(token));
    expect(listed.stdout).toMatch(/^pr-7 {2}\d{8}T\d{6} {2}expires \S+Z {2}https:\/\/sites\.example\.test\/_previews\/clia\/previewed\/pr-7\/\n$/);
    const reviewed = /^pr-7 {2}(\d{8}T\d{6})/.exec(listed.stdout)![1]!;
    // Deployed again after the review: promoting the release reviewed is refused, and the live site stays.
    await writeFile(archive, tgz([file('index.html', 'pushed after the review')]));
    expect((await sitedrop(['deploy', archive, '--project', 'previewed', '--preview', 'pr-7'], as(token))).code).toBe(0);
    expect(await sitedrop(['promote', 'previewed', 'pr-7', reviewed], as(token))).toMatchObject({ code: 1, stderr: expect.stringMatching(new RegExp(`^sitedrop: the preview is at release \\d{8}T\\d{6}, not ${reviewed}: it was deployed again since\n$`)) });
    expect(await readFile(join(h.docsRoot, 'clia/previewed/index.html'), 'utf8')).toBe('live');
    const promoted = await sitedrop(['promote', 'previewed', 'pr-7'], as(token));
    expect(promoted).toMatchObject({ code: 0, stdout: expect.stringMatching(/^previewed is live on \d{8}T\d{6} \(was \d{8}T\d{6}\)\n$/) });
    expect(await readFile(join(h.docsRoot, 'clia/previewed/index.html'), 'utf8')).toBe('pushed after the review');
    expect(await sitedrop(['delete-preview', 'previewed', 'pr-7'], as(token))).toMatchObject({ code: 0, stdout: 'deleted preview pr-7 of previewed\n' });
    expect(await sitedrop(['promote', 'previewed', 'pr-7'], as(token))).toMatchObject({ code: 1, stderr: 'sitedrop: preview not found\n' });
    expect((await sitedrop(['previews', 'previewed'], as(token))).stdout).toBe('');
  });

  it('shows a progress bar (bytes sent, rate) on a terminal', async () => {
    const archive = join(work, 'tty.tgz');
    await writeFile(archive, tgz([file('index.html', 'tty')]));
    // script(1) runs the CLI on a pseudo-terminal, as a person at a shell would.
    const command = [process.execPath, CLI, 'deploy', archive, '--project', 'tty'].map((a) => `'${a}'`).join(' ');
    const r = await new Promise<Run>((resolve) => {
      execFile('script', ['-qec', command, '/dev/null'], { env: { PATH: process.env.PATH ?? '', SITEDROP_URL: h.url, SITEDROP_TOKEN: token, SITEDROP_CACHE_DIR: join(work, 'cache'), TERM: 'xterm' } }, (error, stdout, stderr) =>
        resolve({ code: error ? 1 : 0, stdout, stderr }),
      );
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/uploading \d+\.\d MB at [\d.]+ MB\/s/);
    expect(r.stdout).toContain('\u001b[');
    expect(r.stdout).toMatch(/deployed tty: release \d{8}T\d{6}/);
  });

  it('exits 2 on usage errors and 0 with --help on every command', async () => {
    expect((await sitedrop(['deploy', work], as(token))).code).toBe(2);
    expect((await sitedrop(['frobnicate'], as(token))).code).toBe(2);
    expect(await sitedrop(['projects'])).toMatchObject({ code: 2, stderr: 'sitedrop: no token: pass --token or set SITEDROP_TOKEN\n' });
    expect((await sitedrop(['deploy', join(work, 'missing'), '--project', 'x'], as(token))).code).toBe(2);
    for (const command of [[], ['deploy'], ['projects'], ['releases'], ['rollback'], ['delete-project'], ['admin'], ['admin', 'create-user'], ['admin', 'delete-user'], ['keys'], ['keys', 'create'], ['keys', 'list'], ['keys', 'revoke'], ['previews'], ['promote'], ['delete-preview']]) {
      const help = await sitedrop([...command, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^Usage: sitedrop/);
    }
    expect((await sitedrop(['projects', '--token', token, '--server', h.url])).code).toBe(0);
  });
});

describe('the sitedrop CLI against a server that answers oddly (the built binary, a real socket)', () => {
  const answering = async (handler: (req: IncomingMessage, res: ServerResponse) => void) => {
    const server = createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(resolve)) };
  };

  it('reports a redirect with the address it names, and does not follow it', async () => {
    let requests = 0;
    const server = await answering((_req, res) => {
      requests += 1;
      res.writeHead(301, { location: 'https://sites.example.test/' }).end();
    });
    try {
      const r = await runNode([CLI, 'projects', '--server', server.url, '--token', 't'.repeat(32)], { env: {} });
      expect(r.code).toBe(1);
      expect(r.stderr).toBe('sitedrop: the server answered 301, a redirect to https://sites.example.test/: give that address as --server\n');
      expect(requests).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('says it cannot reach a server that drops the connection part-way through its answer', async () => {
    const server = await answering((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      // Dropped once the first part is on its way: the client has begun to read an answer.
      res.write('{"status":', () => res.socket?.destroy());
    });
    try {
      const r = await runNode([CLI, 'projects', '--server', server.url, '--token', 't'.repeat(32)], { env: {} });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^sitedrop: cannot reach ${server.url.replace(/[.]/g, '\\.')}: .+\\n$`));
    } finally {
      await server.close();
    }
  });
});
