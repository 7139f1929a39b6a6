#!/usr/bin/env node
// sitedrop's benchmark: a full HTTP deploy against the by-hand way (GNU tar + ln -s + mv -T)
// on the same disk, pairs interleaved A B A B (with, for reference, the by-hand way made
// durable by `sync -f` in each round); then a 100 MiB upload. During every deploy the
// service makes its peak RSS is measured, and during a few untimed ones per shape
// GET /api/v1/status is polled. Prints one table, writes JSON.
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { makeLargeUpload, makeSite, SHAPES } from './fixtures.mjs';
import { startMonitor } from './monitor.mjs';
import { createUser, httpDeploy, startService, TUNING } from './service.mjs';
import { siblingsWatch } from './siblings.mjs';

const here = dirname(fileURLToPath(import.meta.url));

const { values: opts } = parseArgs({
  options: {
    pairs: { type: 'string', default: '5' },
    shapes: { type: 'string', default: 'small,standard,docs,media' },
    concurrent: { type: 'string', default: '3' },
    'upload-mib': { type: 'string', default: '100' },
    // Untimed deploys per shape, after its pairs, during which GET /api/v1/status is polled.
    polled: { type: 'string', default: '3' },
    json: { type: 'string', default: join(here, 'results', 'latest.json') },
    dir: { type: 'string' },
    tiny: { type: 'boolean', default: false },
    // Another build of the service to time (an older tree's dist/main.js), to compare trees.
    main: { type: 'string' },
    // `off` leaves out the first deploys (an empty store each), for a shorter run about repeats.
    first: { type: 'string', default: 'on' },
    // A file to keep the service's log in: each staging's phases, the background work beside them.
    log: { type: 'string' },
  },
});
if (opts.tiny) Object.assign(opts, { pairs: '1', shapes: 'tiny', concurrent: '2', 'upload-mib': '1', polled: '1' });
const PAIRS = Number(opts.pairs);
const CONCURRENT = Number(opts.concurrent);
const POLLED = Number(opts.polled);
const UPLOAD_BYTES = Math.floor(Number(opts['upload-mib']) * 1024 * 1024);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const now = () => performance.now();
/** What the monitor saw during a shape's deploys, as one line. */
const byPart = (parts = {}) => Object.entries(parts).map(([part, mib]) => `${part} ${mib.toFixed(1)}`).join(', ');
const watchedLine = ({ deploys, polledDeploys, peakRssMiB, peaksByPartMiB, status: st }) =>
  `service peak RSS ${peakRssMiB.toFixed(1)} MiB over ${deploys} deploy(s) (${byPart(peaksByPartMiB)}); GET /api/v1/status during ${polledDeploys} of them: ${st.samples} samples` +
  (st.samples === 0 ? '' : `, p50 ${st.p50.toFixed(1)} ms, p99 ${st.p99.toFixed(1)} ms, max ${st.max.toFixed(1)} ms`);
/** A shape's first deploys in the table: median ms, median ratio to by hand, each pair's, median ratio to by hand made durable. */
const firstColumns = (f) => (f ? [f.medianA.toFixed(0), f.medianRatio.toFixed(2), f.ratios.map((x) => x.toFixed(2)).join(' '), f.medianDurableRatio.toFixed(2)] : ['', '', '', '']);
/** A shape's status p99 for the table; too few samples for a p99 are shown as they are. */
const p99 = (watched) => (watched.status.samples === 0 ? '–' : watched.status.p99.toFixed(1));

/**
 * The service, keeping each deploy's logged phases (stage, of it flush, publish, prune)
 * per project. The flush is in the staging's own line, which names no project (it may
 * not be known yet): each `deployed` line takes the oldest staged line not yet taken.
 * One deploy at a time, that is its own; of deploys at once, one of the batch's.
 */
async function startBenchService(dataDir, keep = 10_000) {
  const phases = new Map();
  const flushes = [];
  const siblings = siblingsWatch(join(dataDir, 'deploys'));
  const onLine = (line) => {
    siblings.onLine(line);
    if (line.includes('"msg":"staged"')) flushes.push(JSON.parse(line).phasesMs.flush);
    // Background work beside the timed deploys, for the log: when each release's siblings were done, and how.
    if (line.includes('"msg":"precompressed"')) {
      const e = JSON.parse(line);
      process.stderr.write(`  siblings of ${e.project}/${e.release}: made ${e.made}, linked ${e.linked}, gave way ${e.pauses ?? '?'} times, ${e.ms} ms, CPU ${Math.round(e.cpuMs)} ms\n`);
    }
    if (!line.includes('"msg":"deployed"')) return;
    const entry = JSON.parse(line);
    if (!phases.has(entry.project)) phases.set(entry.project, []);
    phases.get(entry.project).push({ ...entry.phasesMs, flush: flushes.shift() });
  };
  // Every release kept until the run ends (see `settle`), but for the prunes timed last.
  return { ...(await startService(dataDir, { env: { RELEASES_KEEP: String(keep), ...TUNING }, onLine, ...(opts.main ? { main: opts.main } : {}), ...(opts.log ? { logFile: opts.log } : {}) })), phases, siblings };
}

/** The user of the repeats; each first deploy is a new user's. */
const BENCH_USER = 'bench';
let firstCounter = 0;
/**
 * First deploys: each timed deploy is a new user's, whose store is empty, so every file is
 * new (what a new site, a new user or a build whose output is all new pays). A repeat finds
 * its files stored and mostly links them. The users stay until the run ends (see `settle`).
 */
function firstDeploys(service, monitor) {
  const sites = [];
  return {
    /** Deploys each of `projects` at once, each as a new user; returns ms. */
    async deploy(archive, projects, warmUp = false) {
      const tokens = [];
      for (let i = 0; i < projects.length; i += 1) {
        const user = `first${(firstCounter += 1)}`;
        tokens.push(await createUser(service.url, user));
        sites.push([user, projects[i]]);
      }
      return monitor.during(async () => {
        const t = now();
        await Promise.all(projects.map((p, i) => httpDeploy(service.url, tokens[i], p, archive)));
        return now() - t;
      }, false, warmUp ? 'first warm-up' : 'first');
    },
    /** The series' `settled`: every first deploy's siblings made, the disk flushed. */
    settled: () => settle(service, sites),
  };
}

let handCounter = 0;
/**
 * The by-hand way: extract into a new release directory, then ln -s + mv -T to swap.
 * With `durable`, also what the service does to survive a crash: `sync -f` after the
 * extraction (before the release goes live) and after the swap. Returns ms.
 */
function byHand(root, archive, project, durable = false) {
  handCounter += 1;
  const release = join(root, 'deploys', project, `r${handCounter}`);
  const docs = join(root, 'docs');
  const flush = (dir) => (durable ? ` && sync -f "${dir}"` : '');
  const script = `mkdir -p "${release}" "${docs}" && tar -xzf "${archive}" -C "${release}"${flush(release)} && ln -s "${release}/" "${docs}/.${project}.tmp" && mv -T "${docs}/.${project}.tmp" "${docs}/${project}"${flush(docs)}`;
  const started = now();
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], { stdio: 'inherit' });
    child.on('exit', (code) => (code === 0 ? resolve(now() - started) : reject(new Error(`by-hand deploy exited ${code}`))));
  });
}

/** Resolves once the service's background collector has deleted every pruned release. */
async function trashEmptied(deploysRoot) {
  for (;;) {
    let left;
    try {
      left = readdirSync(join(deploysRoot, '.trash')).length;
    } catch {
      return; // no trash directory: nothing was pruned yet
    }
    if (left === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Between timed runs, outside the timing: let the service finish what it does after its
 * answers (the sites' compressed siblings, deleting what it pruned), then flush the whole
 * disk. Each side then starts from a quiet disk and pays only for its own work: without the
 * flush, the service's one syncfs also wrote back the by-hand side's last extraction.
 * Nothing is deleted until the run ends, on either side (RELEASES_KEEP is high, no by-hand
 * pruning, no user deleted): on this disk (ext4 mounted with `discard` on a virtual disk) a
 * tar of 40,000 files took 13-30 s just after 40,000 had been deleted and synced, and 1.1-2
 * s otherwise, so whichever side ran after a deletion paid 10x for it.
 */
async function settle(service, sites) {
  await service.siblings.settled(sites);
  await trashEmptied(service.deploysRoot);
  execFileSync('sync');
}

/**
 * A (the service) and B (by hand) interleaved, pair after pair; the target is the median
 * of the A/B ratios. C, by hand made durable, runs in each round too, for reference only:
 * A/C shows what the service costs beyond the flushes the by-hand way skips.
 */
async function pairs(label, runA, runB, runC, settled) {
  // Warm-ups, each side once; the service's is told so (`true`), for its peak by part.
  for (const run of [runA, runB, runC]) {
    await settled();
    await run(true);
  }
  const a = [];
  const b = [];
  const c = [];
  for (let i = 0; i < PAIRS; i += 1) {
    await settled();
    a.push(await runA());
    await settled();
    b.push(await runB());
    await settled();
    c.push(await runC());
    process.stderr.write(`  ${label} pair ${i + 1}/${PAIRS}: deploy ${a[i].toFixed(0)} ms, by hand ${b[i].toFixed(0)} ms, by hand + sync -f ${c[i].toFixed(0)} ms\n`);
  }
  const ratios = a.map((x, i) => x / b[i]);
  const durableRatios = a.map((x, i) => x / c[i]);
  return {
    aMs: a, bMs: b, cMs: c, ratios, medianRatio: median(ratios), medianA: median(a), medianB: median(b), medianC: median(c),
    durableRatios, medianDurableRatio: median(durableRatios),
  };
}

/**
 * Polled deploys go on past `--polled` until the polling has lasted this long, at most
 * twenty: at one poll every 5 ms, about 200 samples. Three deploys of a 500-file site
 * gave 30-57, so its "p99" was its slowest sample. `--tiny` (npm test's run) only checks
 * that the benchmark works, and keeps to its one.
 */
const MIN_POLLED_MS = opts.tiny ? 0 : 1000;

/** The shape's untimed deploys with GET /api/v1/status polled, each from a quiet disk as the timed ones. */
async function polledDeploys(settled, deploy) {
  let polledMs = 0;
  for (let i = 0; i < POLLED || (POLLED > 0 && polledMs < MIN_POLLED_MS && i < 20); i += 1) {
    await settled();
    const start = now();
    await deploy();
    polledMs += now() - start;
  }
}

/** Median of each phase the service logged for these projects' timed deploys (warm-ups left out). */
function medianPhases(service, projects) {
  const timed = projects.flatMap((p) => (service.phases.get(p) ?? []).slice(1));
  if (timed.length === 0) return undefined;
  return Object.fromEntries(Object.keys(timed[0]).map((k) => [k, median(timed.map((t) => t[k]))]));
}

async function memoryAndLatency(work, archive) {
  const dataDir = join(work, 'memory-service');
  const service = await startBenchService(dataDir);
  const token = await createUser(service.url, 'mem');
  // The reference site first: a service that has just unpacked 5,000 files holds more
  // memory than a fresh one, and the upload's peak is measured on top of that.
  await httpDeploy(service.url, token, 'warm', archive.warm);
  const monitor = await startMonitor(service);
  try {
    const deployMs = await monitor.during(() => httpDeploy(service.url, token, 'large', archive.large), true);
    return { uploadBytes: statSync(archive.large).size, deployMs, ...(await monitor.report()) };
  } finally {
    await service.stop();
  }
}

/** A project's releases on disk, by their ids' form (what else its directory holds is not one). */
const releasesOf = (deploysRoot, project) => readdirSync(join(deploysRoot, BENCH_USER, project)).filter((name) => /^\d{8}T\d{6}$/.test(name));

/**
 * Each shape's project deployed twice more by a service that keeps one release more than
 * the project has, so that the second deploy, timed, prunes the oldest, as every deploy
 * of a project at its limit does. Timed last, because a deletion slows whatever writes
 * next on this disk (see `settle`): the deploy, its record + prune phase (a rename under
 * the project's lock), and the collector's deletion of the pruned release after the
 * answer, with peak RSS watched throughout and GET /api/v1/status polled while it deletes.
 */
async function prunes(work, archives, token) {
  const dataDir = join(work, 'service');
  const results = [];
  for (const [name, archive] of Object.entries(archives)) {
    // Room for one more: the warm-up below prunes nothing, the timed deploy after it one.
    const keep = releasesOf(join(dataDir, 'deploys'), name).length + 1;
    execFileSync('sync');
    const service = await startBenchService(dataDir, keep);
    // A fresh service's first deploy of a project starts its threads and lists what the
    // project's releases hold: that cost is not the prune's, and repeats do not pay it.
    await httpDeploy(service.url, token, name, archive);
    await settle(service, [[BENCH_USER, name]]);
    const monitor = await startMonitor(service);
    try {
      // Unpolled, as the repeats it is set beside; the status is polled while the collector deletes.
      const logged = service.phases.get(name)?.length ?? 0;
      const answered = now();
      const deployMs = await monitor.during(() => httpDeploy(service.url, token, name, archive).then(() => now() - answered), false);
      const deleting = now();
      const deletedMs = await monitor.during(() => trashEmptied(service.deploysRoot).then(() => now() - deleting), true);
      const left = releasesOf(service.deploysRoot, name).length;
      if (left !== keep) throw new Error(`${name}: ${left} releases after the prune, not ${keep}`);
      // Its log line may come after its answer (the logger writes asynchronously).
      while ((service.phases.get(name)?.length ?? 0) === logged) await new Promise((resolve) => setTimeout(resolve, 10));
      results.push({ name, keep, deployMs, deletedMs, phasesMs: service.phases.get(name).at(-1), ...(await monitor.report()) });
    } finally {
      await service.stop();
    }
  }
  return results;
}

async function main() {
  const work = opts.dir ?? (await mkdtemp(join(tmpdir(), 'sitedrop-bench-')));
  mkdirSync(work, { recursive: true });
  // A --dir kept from an earlier run keeps its fixtures, never its service or releases: the
  // first deploys' users would otherwise find their stores full.
  for (const left of ['service', 'memory-service', 'by-hand']) rmSync(join(work, left), { recursive: true, force: true });
  const results = { machine: { node: process.version, cpus: (await import('node:os')).cpus().length }, pairs: PAIRS, scenarios: [], memory: undefined };
  const service = await startBenchService(join(work, 'service'));
  const token = await createUser(service.url, BENCH_USER);
  const handRoot = join(work, 'by-hand');
  const archives = {};
  try {
    for (const name of opts.shapes.split(',')) {
      const fixture = makeSite(join(work, 'fixtures', name), SHAPES[name]);
      archives[name] = fixture.archive;
      const gzip = statSync(fixture.archive).size;
      process.stderr.write(`${name}: ${fixture.files} files, ${(fixture.bytes / 1e6).toFixed(1)} MB unpacked, ${(gzip / 1e6).toFixed(1)} MB gzip\n`);
      const monitor = await startMonitor(service);
      const deploy = (poll, part) => monitor.during(() => httpDeploy(service.url, token, name, fixture.archive), poll, part);
      const settled = () => settle(service, [[BENCH_USER, name]]);
      const r = await pairs(name, (warmUp) => deploy(false, warmUp ? 'warm-up' : 'timed'), () => byHand(handRoot, fixture.archive, name), () => byHand(handRoot, fixture.archive, name, true), settled);
      const servicePhasesMs = medianPhases(service, [name]);
      const first = firstDeploys(service, monitor);
      const firstRun = opts.first === 'off' ? undefined : await pairs(`${name} first`, (warmUp) => first.deploy(fixture.archive, [name], warmUp), () => byHand(handRoot, fixture.archive, name), () => byHand(handRoot, fixture.archive, name, true), first.settled);
      await polledDeploys(settled, () => deploy(true));
      results.scenarios.push({ name, files: fixture.files, unpackedBytes: fixture.bytes, gzipBytes: gzip, ...r, servicePhasesMs, first: firstRun, ...(await monitor.report()) });
    }
    const base = opts.shapes.includes('standard') ? 'standard' : opts.shapes.split(',')[0];
    const projects = Array.from({ length: CONCURRENT }, (_, i) => `together-${i}`);
    if (CONCURRENT > 1) {
      process.stderr.write(`${CONCURRENT} ${base} deploys at once\n`);
      const monitor = await startMonitor(service);
      const sites = projects.map((p) => [BENCH_USER, p]);
      const together = (poll, part) => monitor.during(async () => { const t = now(); await Promise.all(projects.map((p) => httpDeploy(service.url, token, p, archives[base]))); return now() - t; }, poll, part);
      const r = await pairs(
        `${CONCURRENT}x ${base}`,
        (warmUp) => together(false, warmUp ? 'warm-up' : 'timed'),
        async () => { const t = now(); await Promise.all(projects.map((p) => byHand(handRoot, archives[base], p))); return now() - t; },
        async () => { const t = now(); await Promise.all(projects.map((p) => byHand(handRoot, archives[base], p, true))); return now() - t; },
        () => settle(service, sites),
      );
      const baseScenario = results.scenarios.find((s) => s.name === base);
      const servicePhasesMs = medianPhases(service, projects);
      const first = firstDeploys(service, monitor);
      const firstRun = opts.first === 'off' ? undefined : await pairs(
        `${CONCURRENT}x ${base} first`,
        (warmUp) => first.deploy(archives[base], projects, warmUp),
        async () => { const t = now(); await Promise.all(projects.map((p) => byHand(handRoot, archives[base], p))); return now() - t; },
        async () => { const t = now(); await Promise.all(projects.map((p) => byHand(handRoot, archives[base], p, true))); return now() - t; },
        first.settled,
      );
      await polledDeploys(() => settle(service, sites), () => together(true));
      results.scenarios.push({ name: `${CONCURRENT}x ${base} at once`, files: baseScenario.files * CONCURRENT, unpackedBytes: baseScenario.unpackedBytes * CONCURRENT, gzipBytes: baseScenario.gzipBytes * CONCURRENT, ...r, servicePhasesMs, first: firstRun, ...(await monitor.report()) });
    }
  } finally {
    await service.stop();
  }

  if (UPLOAD_BYTES > 0) {
    process.stderr.write(`memory: a ${(UPLOAD_BYTES / 1024 / 1024).toFixed(0)} MiB upload\n`);
    // The by-hand runs leave gigabytes unflushed; their writeback would load the machine
    // during the measurement of the service's latency. Start it from a quiet disk.
    execFileSync('sync');
    // 1% below the limit leaves room for the tar headers, gzip framing and multipart envelope.
    const large = makeLargeUpload(join(work, 'fixtures', 'large'), Math.floor(UPLOAD_BYTES * 0.99));
    results.memory = await memoryAndLatency(work, { warm: archives.standard ?? archives[opts.shapes.split(',')[0]], large });
  }

  results.prunes = await prunes(work, archives, token);

  // The target is the reference site's ratio, and it must hold at every size: the
  // pooled median would let the shapes that favour the service hide the ones that do not.
  const overall = median(results.scenarios.flatMap((s) => s.ratios));
  const reference = results.scenarios.find((s) => s.name === 'standard') ?? results.scenarios[0];
  const worst = results.scenarios.reduce((a, b) => (b.medianRatio > a.medianRatio ? b : a));
  const worstFirst = results.scenarios.filter((s) => s.first).reduce((a, b) => (b.first.medianRatio > a.first.medianRatio ? b : a), results.scenarios[0]);
  results.medianRatio = overall;
  results.referenceRatio = reference.medianRatio;
  results.worst = { name: worst.name, ratio: worst.medianRatio };
  if (worstFirst.first) results.worstFirst = { name: worstFirst.name, ratio: worstFirst.first.medianRatio };
  const rows = [
    ['scenario', 'files', 'unpacked MB', 'gzip MB', 'deploy ms (median)', 'by hand ms (median)', 'ratio (median of pairs)', 'pair ratios', 'by hand + sync -f ms', 'ratio to it', 'first deploy ms', 'first ratio', 'first pair ratios', 'first to sync -f', 'peak RSS MiB', 'status p99 ms'],
    ...results.scenarios.map((s) => [s.name, String(s.files), (s.unpackedBytes / 1e6).toFixed(1), (s.gzipBytes / 1e6).toFixed(1), s.medianA.toFixed(0), s.medianB.toFixed(0), s.medianRatio.toFixed(2), s.ratios.map((x) => x.toFixed(2)).join(' '), s.medianC.toFixed(0), s.medianDurableRatio.toFixed(2), ...firstColumns(s.first), s.peakRssMiB.toFixed(1), p99(s)]),
  ];
  const m = results.memory;
  if (m) rows.push([`${(m.uploadBytes / 1024 / 1024).toFixed(1)} MiB upload`, '1', '', (m.uploadBytes / 1e6).toFixed(1), m.deployMs.toFixed(0), '', '', '', '', '', '', '', '', '', m.peakRssMiB.toFixed(1), p99(m)]);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log(line(rows[0]));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows.slice(1)) console.log(line(r));
  console.log('');
  for (const sc of results.scenarios) {
    const p = sc.servicePhasesMs;
    if (p) console.log(`${sc.name}: the service's own phases, median ms: stage ${p.stage} (of it flush to disk ${p.flush}), lock wait ${p.lockWait}, publish ${p.publish}, record + prune ${p.prune}`);
  }
  for (const sc of results.scenarios) console.log(`${sc.name}: ${watchedLine(sc)}`);
  console.log(`reference (${reference.name}) ratio: ${reference.medianRatio.toFixed(2)}; worst shape: ${worst.name} ${worst.medianRatio.toFixed(2)}; median of all pair ratios: ${overall.toFixed(2)}`);
  if (results.worstFirst) console.log(`first deploys (an empty store each): worst shape ${results.worstFirst.name} ${results.worstFirst.ratio.toFixed(2)}`);
  if (m) console.log(`${(m.uploadBytes / 1024 / 1024).toFixed(1)} MiB upload: deploy ${m.deployMs.toFixed(0)} ms, ${watchedLine(m)}`);
  for (const p of results.prunes) {
    const repeat = results.scenarios.find((s) => s.name === p.name);
    const phases = p.phasesMs;
    console.log(
      `${p.name}: a deploy that prunes one release: ${p.deployMs.toFixed(0)} ms (repeats' median ${repeat.medianA.toFixed(0)}), stage ${phases.stage} ms, ` +
        `record + prune ${phases.prune} ms (repeats' median ${repeat.servicePhasesMs?.prune}); deleted ${p.deletedMs.toFixed(0)} ms after the answer; ` +
        `service peak RSS ${p.peakRssMiB.toFixed(1)} MiB; GET /api/v1/status while it was deleted: ${p.status.samples} samples` +
        (p.status.samples === 0 ? '' : `, p50 ${p.status.p50.toFixed(1)} ms, p99 ${p.status.p99.toFixed(1)} ms`),
    );
  }
  mkdirSync(dirname(opts.json), { recursive: true });
  writeFileSync(opts.json, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`figures written to ${opts.json}`);
  if (!opts.dir) rmSync(work, { recursive: true, force: true });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
