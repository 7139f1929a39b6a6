#!/usr/bin/env node
// Issue 14's targets: a redeploy of a site whose build changed 5% of its files, through
// the CLI end to end (hash, upload what is missing, assemble, swap), against doing it by
// hand with `rsync -a --link-dest=<previous release>` into a new directory plus the
// symlink swap, on the same disk, alternated pair by pair (A B, B A, ...). Also: the
// bytes the CLI puts on the wire against the full .tar.gz, and the disk five kept
// releases take against one, for the CLI and for tarball deploys. And, each round, Node
// starting and exiting with nothing to do (`node -e 0`): no Node CLI is faster than that.
//   npm run build && node bench/incremental.mjs [--shapes small,standard,docs] [--rounds 4] [--dir /some/disk]
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { makeSite, SHAPES } from './fixtures.mjs';
import { createUser, httpDeploy, procStatus, startService, TUNING } from './service.mjs';
import { siblingsWatch } from './siblings.mjs';
import { resetPeak } from './monitor.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const CLI = join(here, '..', 'dist', 'sitedrop.mjs');

const { values: opts } = parseArgs({
  options: {
    shapes: { type: 'string', default: 'small,standard,docs' },
    // Redeploys per shape, each timed against its by-hand pair; four make the five releases
    // the disk target is about, the first deploy's and theirs.
    rounds: { type: 'string', default: '4' },
    churn: { type: 'string', default: '0.05' },
    // The disk by default (the targets are about it), not tmpfs.
    dir: { type: 'string' },
    cli: { type: 'string', default: CLI },
    // Another build of the service to time (an older tree's dist/main.js), to compare trees.
    main: { type: 'string' },
    // A file to keep the service's log in: each request's time and each staging's phases.
    log: { type: 'string' },
  },
});

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const du = (...paths) => Number(execFileSync('du', ['-sbc', ...paths], { encoding: 'utf8' }).trim().split('\n').at(-1).split(/\s+/)[0]);
const files = (root) => {
  const out = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else out.push(path);
    }
  };
  walk(root);
  return out.sort();
};

/** Rewrites `share` of the site's files (a new version of each, the same size class), seeded by `round`. */
function churn(site, share, round) {
  const all = files(site);
  const every = Math.max(1, Math.round(1 / share));
  let changed = 0;
  for (let i = round % every; i < all.length; i += every) {
    const bytes = readFileSync(all[i]);
    bytes.write(` v${round} `, Math.min(16, Math.max(0, bytes.length - 8)));
    writeFileSync(all[i], bytes);
    changed += 1;
  }
  return changed;
}

/**
 * A TCP proxy in front of the service that counts what the client sends: the bytes on
 * the wire, whatever the CLI does with them.
 */
async function countingProxy(target) {
  const { port, hostname } = new URL(target);
  let sent = 0;
  // Nagle's algorithm off on both legs, as the CLI's and the service's own sockets have it:
  // with it on, a body's last small write waited for the service's delayed ACK, ~40 ms.
  const server = createServer({ noDelay: true }, (client) => {
    const upstream = connect({ port: Number(port), host: hostname, noDelay: true });
    client.on('data', (chunk) => (sent += chunk.length));
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    take: () => {
      const n = sent;
      sent = 0;
      return n;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

function timed(command, args, env = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`${command} ${args.join(' ')} exited ${code}: ${err}${out}`));
      else resolve({ ms: performance.now() - started, out });
    });
  });
}

/** The by-hand way: a new release linked against the previous one, then the atomic swap. */
async function byHand(site, releases, round) {
  const previous = join(releases, `r${round - 1}`);
  const next = join(releases, `r${round}`);
  const live = join(releases, 'live');
  const script = `rsync -a --link-dest="${previous}" "${site}/" "${next}/" && ln -sfn "${next}" "${live}.tmp" && mv -T "${live}.tmp" "${live}"`;
  return (await timed('sh', ['-c', script])).ms;
}

async function shapeRun(work, name) {
  const root = join(work, name);
  const fixture = makeSite(join(root, 'fixture'), SHAPES[name]);
  const data = join(root, 'data');
  const releases = join(root, 'by-hand');
  // A --dir kept from an earlier run keeps its fixtures, never its service, releases or CLI cache.
  for (const left of [data, releases, join(root, 'cli-cache')]) rmSync(left, { recursive: true, force: true });
  mkdirSync(releases, { recursive: true });
  // Compressed siblings waited for after each round: a site's deploys come minutes apart, so a
  // redeploy's base has them; without the wait the disk figure counted some releases' and not others'.
  const siblings = siblingsWatch(join(data, 'deploys'));
  const service = await startService(data, {
    // Every release kept: a prune deletes 40,000 files, and on this disk (mounted with
    // `discard`) whatever writes next pays for it many times over (docs/performance.md).
    env: { ...TUNING, RELEASES_KEEP: String(Math.max(5, Number(opts.rounds) + 1)) },
    onLine: siblings.onLine,
    ...(opts.main ? { main: opts.main } : {}),
    ...(opts.log ? { logFile: opts.log } : {}),
  });
  const proxy = await countingProxy(service.url);
  try {
    const token = await createUser(service.url, 'cli');
    const tarToken = await createUser(service.url, 'tar');
    // The CLI keeps the manifest it published here, so each redeploy sends only what changed
    // since the last (a relative manifest), as it does run after run on one machine or a CI
    // that keeps the directory.
    const cacheDir = join(root, 'cli-cache');
    const cli = (args) => timed(process.execPath, [opts.cli, 'deploy', fixture.site, '--project', name, '--server', proxy.url, '--json', ...args], { SITEDROP_TOKEN: token, SITEDROP_CACHE_DIR: cacheDir });
    const tarball = () => {
      execFileSync('tar', ['-czf', fixture.archive, '-C', fixture.site, '.']);
      return statSync(fixture.archive).size;
    };

    // Each part's own peak RSS: the kernel's high-water mark reset as a deploy starts and read
    // as the next starts, so what a deploy leaves to do after its answer counts as its own.
    const peaks = { first: [], archives: [], redeploys: [] };
    let part;
    const startPart = (name) => {
      if (part) part.push(procStatus(service.pid, 'VmHWM') / 1024);
      part = name && peaks[name];
      // Without it (a kernel before 4.0) each part's figure is the peak so far, not its own.
      if (!resetPeak(service.pid)) peaks.cumulative = true;
    };
    startPart('first');
    const first = await cli([]);
    const firstWire = proxy.take();
    execFileSync('cp', ['-a', `${fixture.site}/.`, join(releases, 'r0')]);
    startPart('archives');
    await httpDeploy(service.url, tarToken, name, fixture.archive);
    const siblingWaits = [await siblings.settled([['cli', name], ['tar', name]])];
    const rows = [];
    for (let round = 1; round <= Number(opts.rounds); round += 1) {
      const changed = churn(fixture.site, Number(opts.churn), round);
      const full = tarball();
      // Alternated: A B, then B A, so neither always meets the disk the other left. Each
      // starts with nothing dirty (sync, untimed): the service's flush (syncfs) writes out
      // whatever the filesystem holds, so without it the CLI would pay for writing the
      // by-hand copy (or the tarball deploy) just before it, and rsync never for its own.
      // The floor under any Node CLI: the runtime starting and exiting with nothing to do,
      // timed before the pair, as the pair's first side is, after the last round has settled.
      execFileSync('sync');
      const nodeMs = (await timed(process.execPath, ['-e', '0'])).ms;
      let cliMs;
      let handMs;
      const redeploy = async () => {
        startPart('redeploys');
        return (await cli([])).ms;
      };
      if (round % 2) {
        execFileSync('sync');
        cliMs = await redeploy();
        // Untimed: the new release's siblings are made just after the answer, and would
        // share the cores and the disk with rsync.
        siblingWaits.push(await siblings.settled([['cli', name]]));
        execFileSync('sync');
        handMs = await byHand(fixture.site, releases, round);
      } else {
        execFileSync('sync');
        handMs = await byHand(fixture.site, releases, round);
        execFileSync('sync');
        cliMs = await redeploy();
      }
      const wire = proxy.take();
      startPart('archives');
      await httpDeploy(service.url, tarToken, name, fixture.archive);
      siblingWaits.push(await siblings.settled([['cli', name], ['tar', name]]));
      rows.push({ round, changed, cliMs, handMs, ratio: cliMs / handMs, nodeMs, nodeShare: nodeMs / handMs, wire, full, wireShare: wire / full });
      console.log(
        `${name} round ${round}: ${changed} files changed; CLI ${(cliMs / 1000).toFixed(3)} s, by hand ${(handMs / 1000).toFixed(3)} s, ratio ${(cliMs / handMs).toFixed(2)}; ` +
          `node -e 0 ${(nodeMs / 1000).toFixed(3)} s = ${(nodeMs / handMs).toFixed(2)}x by hand; wire ${wire} B = ${(wire / full).toFixed(3)}x the .tar.gz (${full} B)`,
      );
    }
    // Retention and the store's collection run in the background: let them settle.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    startPart(undefined);
    const disk = (user) => {
      const project = join(data, 'deploys', user, name);
      const kept = readdirSync(project).sort();
      const one = du(join(project, kept.at(-1)));
      return { kept: kept.length, ratio: du(join(data, 'deploys', user)) / one, one };
    };
    // By hand, the last five releases (hard links counted once by one du): what directories cost.
    const last = Number(opts.rounds);
    const handReleases = Array.from({ length: last + 1 }, (_, k) => join(releases, `r${last - k}`));
    const handDisk = { kept: handReleases.length, ratio: du(...handReleases) / du(handReleases[0]) };
    const result = {
      name,
      files: fixture.files,
      // The service's peak over the whole shape: tarball and incremental deploys, the manifests it remembers.
      peakRssMiB: Math.max(...peaks.first, ...peaks.archives, ...peaks.redeploys),
      peaksMiB: peaks,
      firstDeployMs: first.ms,
      firstWire,
      medianRatio: median(rows.map((r) => r.ratio)),
      worstRatio: Math.max(...rows.map((r) => r.ratio)),
      medianNodeShare: median(rows.map((r) => r.nodeShare)),
      medianWireShare: median(rows.map((r) => r.wireShare)),
      worstWireShare: Math.max(...rows.map((r) => r.wireShare)),
      cliDisk: disk('cli'),
      tarDisk: disk('tar'),
      handDisk,
      // How long each round waited for the releases' compressed siblings (untimed).
      siblingWaitsMs: siblingWaits,
      rows,
    };
    console.log(
      `${name}: CLI/by-hand median ${result.medianRatio.toFixed(2)} (worst ${result.worstRatio.toFixed(2)}); node -e 0 / by hand ${result.medianNodeShare.toFixed(2)}; wire median ${result.medianWireShare.toFixed(3)}x (worst ${result.worstWireShare.toFixed(3)}x); ` +
        `${result.cliDisk.kept} releases: CLI ${result.cliDisk.ratio.toFixed(2)}x, tarball ${result.tarDisk.ratio.toFixed(2)}x, by hand ${handDisk.ratio.toFixed(2)}x the disk of one` +
        `${TUNING.PRECOMPRESS === 'off' ? '' : ' (the service\'s with compressed siblings, by hand\'s without: PRECOMPRESS=off compares like with like)'}; service peak RSS ${result.peakRssMiB.toFixed(1)} MiB ` +
        `(${['first', 'archives', 'redeploys'].map((k) => `${k} ${peaks[k].map((m) => m.toFixed(1)).join(', ')}`).join('; ')}${peaks.cumulative ? '; each the peak so far: the high-water mark could not be reset' : ''}); ` +
        `waited for siblings ${siblingWaits.map((ms) => (ms / 1000).toFixed(1)).join(', ')} s`,
    );
    return result;
  } finally {
    await proxy.close();
    await service.stop();
  }
}

const work = opts.dir ?? (await mkdtemp(join(tmpdir(), 'sitedrop-incremental-')));
try {
  const results = [];
  for (const name of opts.shapes.split(',')) results.push(await shapeRun(work, name));
  mkdirSync(join(here, 'results'), { recursive: true });
  const file = join(here, 'results', `incremental-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(results, null, 2));
  console.log(`\n| shape | files | CLI / rsync --link-dest (median, worst) | node -e 0 / rsync (median) | wire / .tar.gz (median, worst) | kept releases / 1: CLI | tarball | by hand |`);
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(`| ${r.name} | ${r.files} | ${r.medianRatio.toFixed(2)}, ${r.worstRatio.toFixed(2)} | ${r.medianNodeShare.toFixed(2)} | ${r.medianWireShare.toFixed(3)}, ${r.worstWireShare.toFixed(3)} | ${r.cliDisk.ratio.toFixed(2)} | ${r.tarDisk.ratio.toFixed(2)} | ${r.handDisk.ratio.toFixed(2)} |`);
  }
  console.log(`results: ${file}`);
} finally {
  if (!opts.dir) rmSync(work, { recursive: true, force: true });
}
