#!/usr/bin/env node
// Issue 26 point 4: compressed manifest bombs. Sends POST /api/v1/deploys N at once (8,
// then 20, a fresh service each time), each body a gzip of a manifest of 50,000 distinct
// paths of about 750 bytes (42 MB of JSON, 0.4 MB on the wire) whose two directories take
// it one entry over MAX_FILES at its default: refused, but only at its last entries, so
// every one is read to the end. Reports the service's peak RSS and GET /api/v1/status's
// latencies meanwhile, and the answers. Then times honest opens on a service holding a
// release of the 40,000-page `docs` fixture: its whole manifest, and one relative to that
// release changing 5% of it, each opened and cancelled `--opens` times.
//   npm run build && node bench/manifest-bombs.mjs [--at-once 8,20] [--opens 5] [--concurrent N] [--main <another build's dist/main.js>]
import { createHash } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { makeSite, manifestOf, SHAPES } from './fixtures.mjs';
import { percentile, startMonitor } from './monitor.mjs';
import { createUser, httpDeploy, startService } from './service.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    'at-once': { type: 'string', default: '8,20' },
    opens: { type: 'string', default: '5' },
    // DEPLOYS_MAX_CONCURRENT for the service: manifests read at once.
    concurrent: { type: 'string' },
    main: { type: 'string', default: join(here, '..', 'dist', 'main.js') },
  },
});
const main = opts.main;
const env = opts.concurrent === undefined ? {} : { DEPLOYS_MAX_CONCURRENT: opts.concurrent };
const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');
const median = (xs) => percentile(xs, 50);

/** The issue's bomb: 50,000 paths of 745 bytes under two shared directories (50,002 entries). */
function bomb() {
  const prefix = `${'a'.repeat(250)}/${'b'.repeat(250)}/${'c'.repeat(232)}-`;
  const digest = sha256('x');
  const entries = Array.from({ length: 50_000 }, (_, i) => `{"path":"${prefix}${String(i).padStart(5, '0')}.html","size":1,"digest":"${digest}"}`);
  const json = Buffer.from(`{"project":"bomb","files":[${entries.join(',')}]}`);
  return { json: json.length, gzip: gzipSync(json) };
}

/** One request on a connection of its own; resolves with the status, the parsed body and the ms it took. */
function send(url, token, method, path, body, headers = {}) {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(`${url}${path}`, {
      method,
      agent: false,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-length': String(body.length) } : {}), ...headers },
    });
    req.on('response', (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let parsed;
        try {
          parsed = text ? JSON.parse(text) : {};
        } catch {
          parsed = { unparsable: text.slice(0, 200) };
        }
        resolve({ status: res.statusCode, body: parsed, ms: performance.now() - started });
      });
    });
    req.on('error', (error) => resolve({ status: `error: ${error.code ?? error.message}`, body: {}, ms: performance.now() - started }));
    req.end(body);
  });
}

const openManifest = (url, token, manifest) =>
  send(url, token, 'POST', '/api/v1/deploys', gzipSync(JSON.stringify(manifest)), { 'content-type': 'application/json', 'content-encoding': 'gzip' });

async function bombs(atOnce, payload) {
  const dir = await mkdtemp(join(tmpdir(), 'sitedrop-bombs-'));
  const service = await startService(join(dir, 'service'), { main, env });
  let died = false;
  try {
    const token = await createUser(service.url, 'bomber');
    // The route warmed up, as a service that has taken requests is.
    const warm = await openManifest(service.url, token, { project: 'warm', files: [{ path: 'index.html', size: 1, digest: sha256('x') }] });
    if (warm.status !== 201) throw new Error(`a warm-up open answered ${warm.status}: ${JSON.stringify(warm.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const rssBefore = readRssMiB(service.pid);
    const monitor = await startMonitor(service);
    const started = performance.now();
    const answers = await monitor.during(
      () => Promise.all(Array.from({ length: atOnce }, () => send(service.url, token, 'POST', '/api/v1/deploys', payload, { 'content-type': 'application/json', 'content-encoding': 'gzip' }))),
      true,
    );
    const totalMs = performance.now() - started;
    const watched = await monitor.report();
    died = !alive(service.pid);
    const byAnswer = {};
    for (const a of answers) {
      const key = `${a.status} ${a.body.error ?? ''}`.trim();
      byAnswer[key] = (byAnswer[key] ?? 0) + 1;
    }
    return { atOnce, rssBefore, totalMs, ...watched, byAnswer, died };
  } finally {
    if (!died) await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** CPU time used, in ms (clock ticks of 10 ms): by all the process's threads, or by its main thread (the event loop) alone. */
const cpuMs = (pid, mainThread = false) => {
  const fields = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const readRssMiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;


async function honestOpens(runs) {
  const dir = await mkdtemp(join(tmpdir(), 'sitedrop-opens-'));
  try {
    const fixture = makeSite(join(dir, 'fixture'), SHAPES.docs);
    const files = manifestOf(fixture.site);
    const { manifestDigest } = await import(pathToFileURL(join(dirname(main), 'domain', 'manifest-digest.js')).href);
    const service = await startService(join(dir, 'service'), { main, env });
    try {
      const token = await createUser(service.url, 'honest');
      await httpDeploy(service.url, token, 'docs', fixture.archive);
      const releases = await send(service.url, token, 'GET', '/api/v1/projects/docs/releases');
      const release = releases.body.releases?.[0]?.id ?? releases.body.releases?.[0]?.release;
      if (!release) throw new Error(`no release listed: ${JSON.stringify(releases.body).slice(0, 300)}`);
      // 5% of the pages changed: new bytes, so new digests (and sizes).
      const changed = files.filter((_, i) => i % 20 === 7).map((f) => ({ path: f.path, size: f.size + 1, digest: sha256(`${f.digest} changed`) }));
      const bodies = {
        whole: { project: 'docs', files },
        relative: { project: 'docs', base: { release, digest: manifestDigest(files) }, files: changed, removed: [] },
      };
      const timings = {};
      const cpu = {};
      const loop = {};
      for (const [kind, body] of Object.entries(bodies)) {
        timings[kind] = [];
        cpu[kind] = [];
        loop[kind] = [];
        const gzip = gzipSync(JSON.stringify(body));
        for (let run = 0; run < runs; run += 1) {
          const before = cpuMs(service.pid);
          const loopBefore = cpuMs(service.pid, true);
          const opened = await send(service.url, token, 'POST', '/api/v1/deploys', gzip, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          if (opened.status !== 201) throw new Error(`the ${kind} manifest answered ${opened.status}: ${JSON.stringify(opened.body)}`);
          timings[kind].push(opened.ms);
          // What the open left the collector to do is its cost too.
          await new Promise((resolve) => setTimeout(resolve, 300));
          cpu[kind].push(cpuMs(service.pid) - before);
          loop[kind].push(cpuMs(service.pid, true) - loopBefore);
          await send(service.url, token, 'DELETE', `/api/v1/deploys/${opened.body.id}`);
        }
      }
      return { files: files.length, wholeGzip: gzipSync(JSON.stringify(bodies.whole)).length, relativeGzip: gzipSync(JSON.stringify(bodies.relative)).length, timings, cpu, loop };
    } finally {
      await service.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const payload = bomb();
console.log(`build: ${main}`);
console.log(`bomb: 50,000 paths of 745 bytes, ${(payload.json / 1e6).toFixed(1)} MB of JSON, ${(payload.gzip.length / 1e3).toFixed(0)} KB gzip`);
for (const atOnce of opts['at-once'].split(',').filter(Boolean).map(Number)) {
  const r = await bombs(atOnce, payload.gzip);
  const st = r.status;
  console.log(
    `${atOnce} at once: service RSS ${r.rssBefore.toFixed(1)} MiB before, peak ${r.peakRssMiB.toFixed(1)} MiB; all answered in ${(r.totalMs / 1000).toFixed(1)} s; ` +
      `GET /api/v1/status ${st.samples} answered, ${st.failed} failed, p50 ${st.p50?.toFixed(1)} ms, p99 ${st.p99?.toFixed(1)} ms, max ${st.max?.toFixed(1)} ms`,
  );
  if (r.died) console.log('  the service died');
  console.log(`  answers: ${Object.entries(r.byAnswer).map(([k, n]) => `${n}× ${k}`).join('; ')}`);
}
const runs = Number(opts.opens);
if (runs > 0) {
  const h = await honestOpens(runs);
  for (const [kind, ms] of Object.entries(h.timings)) {
    console.log(
      `open a ${kind} manifest of the ${h.files}-file docs site (${((kind === 'whole' ? h.wholeGzip : h.relativeGzip) / 1e3).toFixed(0)} KB gzip): ` +
        `answered in median ${median(ms).toFixed(0)} ms (runs ${ms.map((m) => m.toFixed(0)).join(', ')}); ` +
        `service CPU median ${median(h.cpu[kind])} ms (runs ${h.cpu[kind].join(', ')}), of it the event loop's ${median(h.loop[kind])} ms (runs ${h.loop[kind].join(', ')})`,
    );
  }
}
