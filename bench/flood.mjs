#!/usr/bin/env node
// The flood: many clients deploying the reference site at once, all with one user's
// token, while others stall mid-upload (issue 13 point 4, issue 26 point 8). Runs it
// twice, the stalled uploads first and then the honest deploys first, each on a fresh
// service started as `npm start` runs it. Samples the service's RSS every ~20 ms, polls
// GET /api/v1/status from a process of its own, and prints per order: the share of
// honest deploys published within 120 s, how long after its last byte each stalled
// upload was answered or closed, the peak RSS, the status latencies and the answers by
// status; then checks that the service is back where it started: no staging area, no
// object in the store's fresh area, no thread or file descriptor left over.
// `node bench/flood.mjs --help` lists the knobs.
import { fork } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, readdir, readlink, stat } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { makeSite, SHAPES } from './fixtures.mjs';
import { createUser, deployForm, procStatus, running, startService } from './service.mjs';

/** A deploy published later than this counts against the target, as one refused does. */
const PUBLISHED_WITHIN_MS = 120_000;
/** The service's clock and the client's differ by the loop's turn: a stalled upload answered this much past UPLOAD_IDLE_SECONDS is on time. */
const ANSWER_SLACK_MS = 1000;
/** The body goes out in chunks this size, each write's callback marking the last byte the client got onto the wire. */
const CHUNK = 64 * 1024;

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
/** Everything under the store's fresh area (a directory per staging area, its new objects inside). */
const freshEntries = (dataDir) => {
  try {
    return readdirSync(join(dataDir, 'deploys', '.fresh'), { recursive: true }).length;
  } catch {
    return 0;
  }
};

/**
 * A streamed multipart deploy, as `curl -F` sends it, on a connection of its own. With
 * `stallAfter`, only that many bytes of the archive are sent and the rest never comes.
 * Resolves with the answer's status and body (an error, a reset, is an answer too), its
 * time, and `lastByteMs`: when the last byte written so far left for the wire.
 */
function deploy(url, token, project, archive, stallAfter) {
  const { head, tail, contentType } = deployForm(project);
  const length = head.length + archive.length + tail.length;
  const started = performance.now();
  let lastByteMs;
  return new Promise((resolve) => {
    const req = request(`${url}/api/v1/deploy`, {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${token}`, 'content-type': contentType, 'content-length': String(length) },
    });
    let settled = false;
    const settle = (answer) => {
      if (settled) return;
      settled = true;
      resolve({ ...answer, ms: performance.now() - started, lastByteMs });
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
    const sent = (error) => {
      if (!error) lastByteMs = performance.now() - started;
    };
    const end = stallAfter ?? archive.length;
    req.write(head, sent);
    // Written one chunk at a time as the socket drains, so that the kernel's acceptance
    // of each (its callback) marks the client's progress.
    let at = 0;
    const more = () => {
      while (at < end) {
        const chunk = archive.subarray(at, Math.min(end, at + CHUNK));
        at += chunk.length;
        if (!req.write(chunk, sent)) return void req.once('drain', more);
      }
      if (stallAfter === undefined) req.end(tail, sent);
    };
    more();
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
    const info = await stat(join(entry.parentPath ?? entry.path, entry.name));
    // The compressed siblings sitedrop makes in the background (mode 0444) are not the site's.
    if ((info.mode & 0o7777) === 0o444 && /\.(br|gz)$/.test(entry.name)) continue;
    files += 1;
    bytes += info.size;
  }
  return { files, bytes };
}

/**
 * One flood. `env` goes to the service (DEPLOYS_MAX_CONCURRENT, UPLOAD_IDLE_SECONDS...).
 * `stallersFirst` starts the stalled uploads before the flood (they reach the slots
 * first); otherwise they arrive spread among the honest deploys. Every deploy, stalled or
 * not, uses one user's token, as a CI runner sharing its key with the next pipeline does.
 */
export async function flood({ clients = 50, stallers = 20, shape = 'standard', env = {}, stallersFirst = false, dir, serviceLog, main, log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const work = dir ?? (await mkdtemp(join(tmpdir(), 'sitedrop-flood-')));
  mkdirSync(work, { recursive: true });
  const dataDir = join(work, 'service');
  const idleSeconds = Number(env.UPLOAD_IDLE_SECONDS ?? 30);
  try {
    const fixture = makeSite(join(work, 'fixture'), SHAPES[shape]);
    const archive = readFileSync(fixture.archive);
    const expected = await tally(fixture.site);
    log(`${shape}: ${fixture.files} files, ${(fixture.bytes / 1e6).toFixed(1)} MB unpacked, ${(archive.length / 1e6).toFixed(1)} MB gzip; ${stallersFirst ? 'stalled uploads first' : 'honest deploys first'}`);
    const service = await startService(dataDir, { env, logFile: serviceLog, main });
    try {
      const token = await createUser(service.url, 'flood');
      // Two deploys at once first, so that the levels compared afterwards already count
      // the worker pool's idle threads (it keeps two workers warm, a thread pair each).
      for (const warm of await Promise.all([0, 1].map((i) => deploy(service.url, token, `warm-${i}`, archive)))) {
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
      const stallAt = Math.floor(archive.length / 2);
      const stalled = [];
      const honest = [];
      const stall = (i) => stalled.push(deploy(service.url, token, `stalled-${i}`, archive, stallAt));
      const send = (i) => honest.push(deploy(service.url, token, `site-${i}`, archive).then((a) => ({ ...a, project: `site-${i}` })));
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

      // Back where it started: staging and fresh objects emptied, extra workers gone, sockets closed.
      const deadline = Date.now() + 30_000;
      let after;
      for (;;) {
        after = { threads: procStatus(service.pid, 'Threads'), fds: openFds(service.pid), staging: stagingAreas(dataDir), fresh: freshEntries(dataDir), fdKinds: fdKinds(service.pid) };
        if ((after.threads <= before.threads && after.fds <= before.fds && after.staging === 0 && after.fresh === 0) || Date.now() > deadline) break;
        await sleep(100);
      }

      const byStatus = (list) => {
        const counts = {};
        for (const a of list) {
          const key = String(a.status) + (a.body?.error ? ` ${a.body.error}` : '');
          counts[key] = (counts[key] ?? 0) + 1;
        }
        return counts;
      };
      const honestAnswers = await Promise.all(honest);
      const stalledAnswers = await Promise.all(stalled);
      const ok = honestAnswers.filter((a) => a.status === 200);
      let broken = 0;
      for (const a of ok) {
        const target = await readlink(join(dataDir, 'docs', 'flood', a.project));
        const found = await tally(target);
        if (found.files !== expected.files || found.bytes !== expected.bytes || !target.endsWith(`/${a.body.release}/`)) broken += 1;
      }
      const honestMs = ok.map((a) => a.ms);
      // From the last byte a stalled client got onto the wire to its answer (or the connection's end).
      const silentMs = stalledAnswers.map((a) => a.ms - (a.lastByteMs ?? 0));
      return {
        clients,
        stallers,
        stallersFirst,
        env,
        idleSeconds,
        archiveBytes: archive.length,
        files: fixture.files,
        totalMs,
        peakRssMiB: peakRss / 1024 / 1024,
        peakStaging,
        status: { samples: polled.latencies.length, failed: polled.failed, p50: percentile(polled.latencies, 50), p99: percentile(polled.latencies, 99), max: Math.max(...polled.latencies) },
        answers: byStatus(answers),
        honestAnswers: byStatus(honestAnswers),
        stalledAnswers: byStatus(stalledAnswers),
        /** When each unanswered request failed, in seconds from the start. */
        errors: answers.filter((a) => typeof a.status !== 'number').map((a) => ({ status: a.status, s: Math.round(a.ms / 100) / 10 })),
        deployed: ok.length,
        publishedInTime: ok.filter((a) => a.ms <= PUBLISHED_WITHIN_MS).length,
        deployMs: ok.length ? { p50: percentile(honestMs, 50), max: Math.max(...honestMs) } : undefined,
        stalledSilentMs: stalledAnswers.length ? { p50: percentile(silentMs, 50), max: Math.max(...silentMs) } : undefined,
        stalledLate: silentMs.filter((ms) => ms > idleSeconds * 1000 + ANSWER_SLACK_MS).length,
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

/** The targets of issue 26 point 8, checked; a miss is reported, not hidden. */
export function targets(r) {
  return {
    publishedShare: r.publishedInTime / r.clients,
    published: r.publishedInTime >= 0.9 * r.clients,
    stalledOnTime: r.stalledLate === 0,
    rss: r.peakRssMiB <= 256,
    statusP99: r.status.p99 < 20,
    nothingLeft: r.after.staging === 0 && r.after.fresh === 0 && r.after.threads <= r.before.threads && r.after.fds <= r.before.fds,
  };
}

export function describeFlood(r) {
  const env = Object.entries(r.env).map(([k, v]) => `${k}=${v}`).join(' ') || 'defaults';
  const t = targets(r);
  const mark = (met) => (met ? 'met' : 'MISSED');
  const counts = (answers) => Object.entries(answers).map(([k, n]) => `${n}× ${k}`).join('; ');
  return [
    `${r.clients} deploys of ${r.files} files (${(r.archiveBytes / 1e6).toFixed(1)} MB) + ${r.stallers} stalled, ${r.stallersFirst ? 'stalled first' : 'honest first'}, one user, ${env}:`,
    `  published within 120 s: ${r.publishedInTime} of ${r.clients} (${(100 * t.publishedShare).toFixed(0)}%, ≥ 90%: ${mark(t.published)}); deployed in all ${r.deployed}${r.deployMs ? ` (answer p50 ${(r.deployMs.p50 / 1000).toFixed(1)} s, max ${(r.deployMs.max / 1000).toFixed(1)} s)` : ''}, releases not matching the site: ${r.brokenReleases}`,
    `  stalled uploads answered or closed after their last byte: p50 ${(r.stalledSilentMs?.p50 / 1000).toFixed(1)} s, max ${(r.stalledSilentMs?.max / 1000).toFixed(1)} s; later than UPLOAD_IDLE_SECONDS (${r.idleSeconds} s, +${ANSWER_SLACK_MS / 1000} s): ${r.stalledLate} (${mark(t.stalledOnTime)})`,
    `  total ${(r.totalMs / 1000).toFixed(1)} s; service RSS ${r.before.rssMiB.toFixed(1)} MiB before, peak ${r.peakRssMiB.toFixed(1)} MiB during (≤ 256: ${mark(t.rss)}); staging areas at once ≤ ${r.peakStaging}`,
    `  GET /api/v1/status: ${r.status.samples} answered, ${r.status.failed} failed or over 5 s, p50 ${r.status.p50.toFixed(1)} ms, p99 ${r.status.p99.toFixed(1)} ms (< 20: ${mark(t.statusP99)}), max ${r.status.max.toFixed(1)} ms`,
    `  honest answers: ${counts(r.honestAnswers)}`,
    `  stalled answers: ${counts(r.stalledAnswers)}`,
    ...(r.errors?.length ? [`  unanswered: ${r.errors.map((e) => `${e.status} at ${e.s} s`).join('; ')}`] : []),
    `  afterwards (${mark(t.nothingLeft)}): threads ${r.before.threads} -> ${r.after.threads}, fds ${r.before.fds} -> ${r.after.fds}, staging areas ${r.after.staging}, fresh-area entries ${r.after.fresh}`,
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
      concurrent: { type: 'string' },
      'idle-seconds': { type: 'string' },
      'stall-seconds': { type: 'string' },
      order: { type: 'string', default: 'both' },
      'service-log': { type: 'string' },
      main: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  const orders = { both: [true, false], 'stalled-first': [true], 'honest-first': [false] }[values.order];
  if (values.help || !orders) {
    console.log('node bench/flood.mjs [--clients 50] [--stallers 20] [--shape standard] [--concurrent N] [--idle-seconds S] [--stall-seconds S] [--order both|stalled-first|honest-first] [--service-log FILE] [--main dist/main.js of another build] [--json]');
    process.exit(values.help ? 0 : 2);
  }
  const env = {};
  if (values.concurrent !== undefined) env.DEPLOYS_MAX_CONCURRENT = values.concurrent;
  if (values['idle-seconds'] !== undefined) env.UPLOAD_IDLE_SECONDS = values['idle-seconds'];
  if (values['stall-seconds'] !== undefined) env.UPLOAD_STALL_SECONDS = values['stall-seconds'];
  const runs = [];
  for (const stallersFirst of orders) {
    const r = await flood({ clients: Number(values.clients), stallers: Number(values.stallers), shape: values.shape, env, stallersFirst, serviceLog: values['service-log'], main: values.main });
    runs.push({ ...r, targets: targets(r) });
    if (!values.json) console.log(describeFlood(r));
  }
  if (values.json) console.log(JSON.stringify(runs));
}
