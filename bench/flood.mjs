#!/usr/bin/env node
// The flood: many clients deploying the reference site at once while others stall
// mid-upload (issue 13 point 4). Starts the built service as `npm start` runs it,
// samples its RSS every ~20 ms, polls GET /api/v1/status from a process of its own, and
// prints the peak RSS, the status latencies, the answers by status and the total time;
// then checks that the service is back where it started: no staging area, thread or file
// descriptor left over. `node bench/flood.mjs --help` lists the knobs; `flood()` is the
// same run for bench/run.mjs to call.
import { fork } from 'node:child_process';
import { createReadStream, mkdirSync, readdirSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, readdir, readlink, stat } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { makeSite, SHAPES } from './fixtures.mjs';
import { createUser, procStatus, running, startService } from './service.mjs';

const USERS = 10;

const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));

const openFds = (pid) => readdirSync(`/proc/${pid}/fd`).length;
const fdKinds = (pid) => {
  const kinds = {};
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`).replace(/\[\d+\]$/, '').replace(/^\/.*/, 'file');
    } catch {
      continue;
    }
    kinds[target] = (kinds[target] ?? 0) + 1;
  }
  return kinds;
};
const stagingAreas = (dataDir) => {
  try {
    return readdirSync(join(dataDir, 'deploys', '.staging')).filter((n) => n.startsWith('deploy+')).length;
  } catch {
    return 0;
  }
};

/**
 * A streamed multipart deploy, as `curl -F` sends it, on a connection of its own. With
 * `stallAfter`, only that many bytes of the body are sent and the rest never comes.
 * Resolves with the answer's status and body; an error (a reset) is an answer too.
 */
function deploy(url, token, project, archive, stallAfter) {
  const boundary = `flood${Math.random().toString(16).slice(2)}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="project"\r\n\r\n${project}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="site.tgz"\r\nContent-Type: application/gzip\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const length = head.length + statSync(archive).size + tail.length;
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(`${url}/api/v1/deploy`, {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(length) },
    });
    let settled = false;
    const settle = (answer) => {
      if (settled) return;
      settled = true;
      resolve({ ...answer, ms: performance.now() - started });
    };
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        let parsed;
        try {
          parsed = JSON.parse(body);
        } catch {
          parsed = { unparsable: body.slice(0, 200) };
        }
        settle({ status: res.statusCode, body: parsed, retryAfter: res.headers['retry-after'] });
        req.destroy();
      });
    });
    req.on('error', (error) => settle({ status: `error: ${error.code ?? error.message}${answered ? ' after the answer began' : ' before any answer'}${stallAfter === undefined ? '' : ' (stalled upload)'}` }));
    req.write(head);
    const file = createReadStream(archive, { highWaterMark: 256 * 1024, ...(stallAfter === undefined ? {} : { end: stallAfter - 1 }) });
    file.pipe(req, { end: false });
    if (stallAfter === undefined) file.on('end', () => req.end(tail));
  });
}

/**
 * Polls GET /api/v1/status every 5 ms, as a health checker would, from a process of its
 * own (this file, run with --poll), so that the latencies are the service's and not this
 * busy process's. A poll unanswered after 5 s counts as failed, as a checker would give up.
 */
async function poll(url) {
  const latencies = [];
  let failed = 0;
  let polling = true;
  process.on('message', (message) => {
    if (message === 'stop') polling = false;
  });
  const once = () => new Promise((resolve) => {
    const started = performance.now();
    const req = request(new URL('/api/v1/status', url), { timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - started : undefined));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', () => resolve(undefined));
    req.end();
  });
  process.send('ready');
  while (polling) {
    const ms = await once();
    if (ms === undefined) failed += 1;
    else latencies.push(ms);
    await sleep(5);
  }
  // Disconnecting at once could drop a report this long (tens of thousands of numbers).
  process.send({ latencies, failed }, () => process.disconnect());
}

/** The poller in a process of its own; stop() resolves with its latencies and failures. */
async function startPoller(url) {
  const child = fork(fileURLToPath(import.meta.url), ['--poll', url], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  running.add(child);
  child.on('exit', () => running.delete(child));
  await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`status poller exited (${code})`)));
  });
  return {
    stop: () => new Promise((resolve, reject) => {
      child.removeAllListeners('exit');
      child.on('exit', () => running.delete(child));
      child.once('message', resolve);
      // Its last message may arrive after its exit: only a failed exit means no report.
      child.once('exit', (code) => code !== 0 && reject(new Error(`status poller exited (${code})`)));
      child.send('stop');
    }),
  };
}

/** Files and bytes under a release directory. */
async function tally(dir) {
  let files = 0;
  let bytes = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    files += 1;
    bytes += (await stat(join(entry.parentPath ?? entry.path, entry.name))).size;
  }
  return { files, bytes };
}

/**
 * One flood. `env` goes to the service (DEPLOYS_MAX_CONCURRENT, UPLOAD_IDLE_SECONDS...).
 * `stallersFirst` starts the stalled uploads before the flood (they hold slots first, the
 * worst case); otherwise they arrive mixed in with it.
 */
export async function flood({ clients = 50, stallers = 20, shape = 'standard', env = {}, stallersFirst = false, dir, serviceLog, log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const work = dir ?? (await mkdtemp(join(tmpdir(), 'sitedrop-flood-')));
  mkdirSync(work, { recursive: true });
  const dataDir = join(work, 'service');
  try {
    const fixture = makeSite(join(work, 'fixture'), SHAPES[shape]);
    const archiveBytes = statSync(fixture.archive).size;
    const expected = await tally(fixture.site);
    log(`${shape}: ${fixture.files} files, ${(fixture.bytes / 1e6).toFixed(1)} MB unpacked, ${(archiveBytes / 1e6).toFixed(1)} MB gzip`);
    const service = await startService(dataDir, { env, logFile: serviceLog });
    try {
      const tokens = [];
      for (let u = 0; u < USERS; u += 1) tokens.push(await createUser(service.url, `flood${u}`));
      // Two deploys at once first, so that the levels compared afterwards already count
      // the worker pool's idle threads (it keeps two workers warm, a thread pair each).
      for (const warm of await Promise.all([0, 1].map((i) => deploy(service.url, tokens[i], 'warm', fixture.archive)))) {
        if (warm.status !== 200) throw new Error(`a warm-up deploy answered ${warm.status}: ${JSON.stringify(warm.body)}`);
      }
      await sleep(500);
      const before = { threads: procStatus(service.pid, 'Threads'), fds: openFds(service.pid), fdKinds: fdKinds(service.pid), rssMiB: procStatus(service.pid, 'VmRSS') / 1024 };
      // Linux resets VmHWM to the current RSS on "5": the peak is then the flood's alone.
      try {
        writeFileSync(`/proc/${service.pid}/clear_refs`, '5');
      } catch {
        // not Linux, or not allowed: the warm-up's peak stays in VmHWM, an upper bound still
      }

      let peakRss = 0;
      let peakStaging = 0;
      const sampler = setInterval(() => {
        peakRss = Math.max(peakRss, procStatus(service.pid, 'VmRSS') * 1024);
        peakStaging = Math.max(peakStaging, stagingAreas(dataDir));
      }, 20);
      const poller = await startPoller(service.url);
      const started = performance.now();
      const stallAt = Math.floor(archiveBytes / 2);
      const stalled = [];
      const honest = [];
      const stall = (i) => stalled.push(deploy(service.url, tokens[i % USERS], `stalled-${i}`, fixture.archive, stallAt));
      const send = (i) => honest.push(deploy(service.url, tokens[i % USERS], `site-${i}`, fixture.archive).then((a) => ({ ...a, project: `site-${i}`, user: `flood${i % USERS}` })));
      if (stallersFirst) {
        for (let i = 0; i < stallers; i += 1) stall(i);
        await sleep(200);
        for (let i = 0; i < clients; i += 1) send(i);
      } else {
        // Spread evenly: one stalled upload every clients/stallers honest ones.
        for (let i = 0, s = 0; i < clients || s < stallers; i += 1) {
          if (i < clients) send(i);
          if (s < stallers && (i + 1) * stallers >= (s + 1) * clients) stall(s++);
        }
      }
      let answered = 0;
      const progress = (p) => p.then((a) => {
        answered += 1;
        if (answered % 10 === 0) log(`  ${answered} of ${clients + stallers} answered after ${((performance.now() - started) / 1000).toFixed(0)} s`);
        return a;
      });
      const answers = await Promise.all([...honest, ...stalled].map(progress));
      const totalMs = performance.now() - started;
      let polled;
      try {
        polled = await poller.stop();
      } finally {
        clearInterval(sampler);
      }
      peakRss = Math.max(peakRss, procStatus(service.pid, 'VmHWM') * 1024);

      // Back where it started: staging emptied, extra workers gone, sockets closed.
      const deadline = Date.now() + 30_000;
      let after;
      for (;;) {
        after = { threads: procStatus(service.pid, 'Threads'), fds: openFds(service.pid), staging: stagingAreas(dataDir), fdKinds: fdKinds(service.pid) };
        if ((after.threads <= before.threads && after.fds <= before.fds && after.staging === 0) || Date.now() > deadline) break;
        await sleep(100);
      }

      const byStatus = {};
      for (const a of answers) {
        const key = String(a.status) + (a.body?.error ? ` ${a.body.error}` : '');
        byStatus[key] = (byStatus[key] ?? 0) + 1;
      }
      const ok = (await Promise.all(honest)).filter((a) => a.status === 200);
      let broken = 0;
      for (const a of ok) {
        const target = await readlink(join(dataDir, 'docs', a.user, a.project));
        const found = await tally(target);
        if (found.files !== expected.files || found.bytes !== expected.bytes || !target.endsWith(`/${a.body.release}/`)) broken += 1;
      }
      const honestMs = ok.map((a) => a.ms);
      return {
        clients,
        stallers,
        stallersFirst,
        env,
        archiveBytes,
        files: fixture.files,
        totalMs,
        peakRssMiB: peakRss / 1024 / 1024,
        peakStaging,
        status: { samples: polled.latencies.length, failed: polled.failed, p50: percentile(polled.latencies, 50), p99: percentile(polled.latencies, 99), max: Math.max(...polled.latencies) },
        answers: byStatus,
        /** When each unanswered request failed, in seconds from the start. */
        errors: answers.filter((a) => typeof a.status !== 'number').map((a) => ({ status: a.status, s: Math.round(a.ms / 100) / 10 })),
        deployed: ok.length,
        deployMs: ok.length ? { p50: percentile(honestMs, 50), max: Math.max(...honestMs) } : undefined,
        brokenReleases: broken,
        before,
        after,
      };
    } finally {
      await service.stop();
    }
  } finally {
    if (!dir) rmSync(work, { recursive: true, force: true });
  }
}

export function describeFlood(r) {
  const env = Object.entries(r.env).map(([k, v]) => `${k}=${v}`).join(' ') || 'defaults';
  return [
    `${r.clients} deploys of ${r.files} files (${(r.archiveBytes / 1e6).toFixed(1)} MB) + ${r.stallers} stalled${r.stallersFirst ? ' (first)' : ' (mixed in)'}, ${env}:`,
    `  total ${(r.totalMs / 1000).toFixed(1)} s; service RSS ${r.before.rssMiB.toFixed(1)} MiB before, peak ${r.peakRssMiB.toFixed(1)} MiB during; staging areas at once ≤ ${r.peakStaging}`,
    `  GET /api/v1/status: ${r.status.samples} answered, ${r.status.failed} failed or over 5 s, p50 ${r.status.p50.toFixed(1)} ms, p99 ${r.status.p99.toFixed(1)} ms, max ${r.status.max.toFixed(1)} ms`,
    `  answers: ${Object.entries(r.answers).map(([k, n]) => `${n}× ${k}`).join('; ')}`,
    ...(r.errors?.length ? [`  unanswered: ${r.errors.map((e) => `${e.status} at ${e.s} s`).join('; ')}`] : []),
    `  deployed ${r.deployed}${r.deployMs ? ` (answer p50 ${(r.deployMs.p50 / 1000).toFixed(1)} s, max ${(r.deployMs.max / 1000).toFixed(1)} s)` : ''}, releases not matching the site: ${r.brokenReleases}`,
    `  threads ${r.before.threads} -> ${r.after.threads}, fds ${r.before.fds} -> ${r.after.fds}, staging areas left ${r.after.staging}`,
    `  fds before ${JSON.stringify(r.before.fdKinds)}, after ${JSON.stringify(r.after.fdKinds)}`,
  ].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === '--poll') {
  await poll(process.argv[3]);
} else if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      clients: { type: 'string', default: '50' },
      stallers: { type: 'string', default: '20' },
      shape: { type: 'string', default: 'standard' },
      concurrent: { type: 'string', multiple: true },
      'idle-seconds': { type: 'string' },
      'stallers-first': { type: 'boolean', default: false },
      'service-log': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log('node bench/flood.mjs [--clients 50] [--stallers 20] [--shape standard] [--concurrent N]... [--idle-seconds S] [--stallers-first] [--service-log FILE] [--json]');
    process.exit(0);
  }
  const settings = values.concurrent ?? [undefined];
  for (const concurrent of settings) {
    const env = {};
    if (concurrent !== undefined) env.DEPLOYS_MAX_CONCURRENT = concurrent;
    if (values['idle-seconds'] !== undefined) env.UPLOAD_IDLE_SECONDS = values['idle-seconds'];
    const r = await flood({ clients: Number(values.clients), stallers: Number(values.stallers), shape: values.shape, env, stallersFirst: values['stallers-first'], serviceLog: values['service-log'] });
    console.log(values.json ? JSON.stringify(r) : describeFlood(r));
  }
}
