// The built service as the benchmarks run it: started as `npm start` starts it (the same
// environment assignments and node flags), on an ephemeral port, killed when the
// benchmark exits however it exits. Shared by bench/run.mjs and bench/flood.mjs.
import { createReadStream, createWriteStream, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { formContentType, newBoundary, streamedForm } from '../dist/adapters/cli/multipart.js';
import { MAIN, spawnService, whenListening } from '../scripts/service-process.mjs';

export const ADMIN = 'bench-admin-token-0123456789abcdefghijkl';

/** Settings an experiment may vary, passed through from the benchmark's own environment. */
export const TUNING = Object.fromEntries(['DEPLOYS_MAX_CONCURRENT', 'PRECOMPRESS'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]));

/** Child processes (services, pollers) to kill if the benchmark exits first. */
export const running = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts the service on `dataDir` with `env` on top of npm start's; `onLine` sees each
 * line it logs, `logFile` keeps them all, `main` runs another build (an older tree's
 * dist/main.js, to compare). Resolves once it listens.
 */
export async function startService(dataDir, { env = {}, onLine, logFile, main = MAIN } = {}) {
  const child = spawnService({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, ...env }, { main, stderr: 'inherit' });
  running.add(child);
  child.on('exit', () => running.delete(child));
  if (logFile) writeFileSync(logFile, '');
  const log = logFile ? createWriteStream(logFile, { flags: 'a' }) : undefined;
  let out = '';
  let partial = '';
  child.stdout.on('data', (c) => {
    log?.write(c);
    if (out !== undefined) out += c;
    if (!onLine) return;
    const lines = (partial + c).split('\n');
    partial = lines.pop();
    for (const line of lines) onLine(line);
  });
  const url = await whenListening(child, { timeoutMs: 600_000, output: () => out ?? '' });
  // Past start-up, what it logs is kept only where asked (logFile).
  out = undefined;
  const stop = () =>
    new Promise((resolve) => {
      child.removeAllListeners('exit');
      child.on('exit', () => {
        running.delete(child);
        log?.end();
        resolve();
      });
      child.kill('SIGTERM');
    });
  return { url, pid: child.pid, deploysRoot: join(dataDir, 'deploys'), stop };
}

export async function createUser(url, username) {
  const r = await fetch(`${url}/api/v1/auth`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ username }) });
  if (r.status !== 200) throw new Error(`creating ${username}: ${r.status} ${await r.text()}`);
  return (await r.json()).token;
}

/** Deletes a user and their files (what the bench's first deploys leave), outside any timing. */
export async function deleteUser(url, username) {
  const r = await fetch(`${url}/api/v1/auth`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN}` }, body: JSON.stringify({ username, files: 'delete' }) });
  if (r.status !== 200) throw new Error(`deleting ${username}: ${r.status} ${await r.text()}`);
}

/** A field of /proc/<pid>/status (VmRSS, VmHWM, Threads...): kB for the memory ones. */
export function procStatus(pid, field) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`));
  return Number(/(\d+)/.exec(line)[1]);
}

/** A deploy's form around its archive, framed as the CLI frames it (src/adapters/cli/multipart.ts, built). */
export function deployForm(project) {
  const boundary = newBoundary('bench');
  return { ...streamedForm(boundary, [{ name: 'project', body: project }], { name: 'file', filename: 'site.tgz' }), contentType: formContentType(boundary) };
}

/** What `curl -F project=... -F file=@site.tgz` does: a streamed multipart upload. Returns ms. */
export function httpDeploy(url, token, project, archive) {
  const { head, tail, contentType } = deployForm(project);
  const length = head.length + statSync(archive).size + tail.length;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    // A fresh connection, as curl makes: a reused keep-alive socket can meet the server's idle close.
    const req = request(`${url}/api/v1/deploy`, {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${token}`, 'content-type': contentType, 'content-length': String(length) },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        if (res.statusCode !== 200) reject(new Error(`deploy answered ${res.statusCode}: ${body}`));
        else resolve(performance.now() - started);
      });
    });
    req.on('error', reject);
    req.write(head);
    const file = createReadStream(archive, { highWaterMark: 256 * 1024 });
    file.pipe(req, { end: false });
    file.on('end', () => req.end(tail));
  });
}
