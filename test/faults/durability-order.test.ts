import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAIN, NODE_FLAGS, START_ENV } from '../support/child-service.js';
import { versionedSite } from '../support/sites.js';

const ADMIN = 'durable-admin-token-0123456789abcdefghij';

/**
 * A power loss cannot be staged in a test, but the order that makes one harmless can be
 * watched: the real service runs under strace, and one deploy must (1) flush the staged
 * files with syncfs after the last of them is written (flushes while they are written,
 * which start the disk early, do not count), (2) rename them into place and fsync that
 * directory, (3) rename the new link over the live one and fsync the link's directory,
 * in that order. The site is large enough to unpack for longer than those early flushes' period.
 */
describe('durability: the order of flushes and renames of one deploy (strace of the real service)', () => {
  it('the last write, then syncfs, then rename + fsync of the project directory, then link swap + fsync of the docs directory', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'sitedrop-strace-'));
    const trace = join(dataDir, 'trace.log');
    const child = spawn(
      'strace',
      ['-f', '-qq', '-y', '-s', '300', '-e', 'trace=syncfs,fsync,fdatasync,rename,renameat,renameat2,symlink,symlinkat,openat,write,pwrite64,writev', '-o', trace, process.execPath, ...NODE_FLAGS, MAIN],
      { env: { ...START_ENV, PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    // Signals go to the traced service, strace's child; strace exits when it does.
    const service = () => Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')[0]);
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setInterval(() => {
          const m = /"url":"([^"]+)"[^\n]*"msg":"listening"/.exec(out);
          if (m) {
            clearInterval(timer);
            resolve(m[1]!);
          }
        }, 50);
        void exited.then(() => reject(new Error(`strace or the service exited:\n${out}`)));
      });
      const auth = await fetch(`${url}/api/v1/auth`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: '{"username":"dura"}' });
      const token = ((await auth.json()) as { token: string }).token;
      const form = new FormData();
      form.append('project', 'site');
      form.append('file', new Blob([versionedSite('v1', 2_000)]), 'site.tgz');
      const deployed = await fetch(`${url}/api/v1/deploy`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
      expect(deployed.status).toBe(200);
      const release = ((await deployed.json()) as { release: string }).release;
      process.kill(service(), 'SIGTERM');
      await exited;

      const lines = (await readFile(trace, 'utf8')).split('\n').filter((l) => !l.includes('resumed>'));
      const find = (what: string, pattern: RegExp, after = -1): number => {
        const at = lines.findIndex((line, i) => i > after && pattern.test(line) && / = 0$/.test(line.replace(/<unfinished \.\.\.>/, ' = 0')));
        if (at === -1) throw new Error(`no ${what} after line ${after} in the trace:\n${lines.join('\n')}`);
        return at;
      };
      const projectDir = join(dataDir, 'deploys/dura/site');
      const docsDir = join(dataDir, 'docs/dura');
      const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const staged = /\/\.staging\/deploy\+/;
      const commitPattern = new RegExp(`rename(at2?)?\\(.*\\.staging/deploy\\+[^"]*", .*"${esc(projectDir)}/${release}"`);
      const renamed = find('rename into place', commitPattern);
      let written = -1;
      lines.forEach((line, i) => {
        if (i < renamed && /^\d+ +(openat|p?write(v|64)?)\(/.test(line) && staged.test(line)) written = i;
      });
      expect(written).toBeGreaterThan(-1);
      const earlier = lines.filter((line, i) => i < written && /syncfs\(/.test(line)).length;
      const flush = find('syncfs of the staged release after its last write', /syncfs\(\d+<[^>]*\/\.staging\/deploy\+/, written);
      const commit = find('rename into place', commitPattern, flush);
      const commitSync = find('fsync of the project directory', new RegExp(`f(data)?sync\\(\\d+<${esc(projectDir)}>`), commit);
      const link = find('the new symlink', new RegExp(`symlink(at)?\\("${esc(projectDir)}/${release}/", .*"${esc(docsDir)}/\\.site\\.tmp\\+`), commitSync);
      const swap = find('the link swap', new RegExp(`rename(at2?)?\\(.*"${esc(docsDir)}/\\.site\\.tmp\\+[^"]+", .*"${esc(docsDir)}/site"`), link);
      const swapSync = find('fsync of the docs directory', new RegExp(`f(data)?sync\\(\\d+<${esc(docsDir)}>`), swap);
      console.log(`trace order (${earlier} flushes while writing): last write@${written} < syncfs@${flush} < rename@${commit} < fsync@${commitSync} < symlink@${link} < swap@${swap} < fsync@${swapSync}`);
    } finally {
      if (child.exitCode === null) {
        try {
          process.kill(service(), 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      }
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
