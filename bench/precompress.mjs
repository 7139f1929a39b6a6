#!/usr/bin/env node
// Issue 27's precompression target: a first deploy of the 40,000-page docs site into an
// empty store, then the wall time from the deploy's answer until every compressed sibling
// is there, the CPU the precompression thread spent, the disk the siblings add, and
// GET /api/v1/status while they are made. Then the same site as a second project: every
// sibling linked, none compressed again.
//   npm run build && node bench/precompress.mjs [--shape docs] [--dir /some/disk]
import { lstatSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { makeSite, SHAPES } from './fixtures.mjs';
import { createUser, httpDeploy, startService } from './service.mjs';

const { values: opts } = parseArgs({ options: { shape: { type: 'string', default: 'docs' }, dir: { type: 'string' } } });
const TEXT = /\.(html?|css|m?js|json|svg|xml|txt|map|wasm)$/i;
const MIN_BYTES = 256;

/** Every regular file below `dir`, with its path, size and allocated bytes. */
function files(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const path = join(e.parentPath, e.name);
      const info = lstatSync(path);
      return { path, size: info.size, disk: info.blocks * 512 };
    });
}
const sum = (xs, f) => xs.reduce((a, x) => a + f(x), 0);
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

const work = await mkdtemp(join(opts.dir ?? tmpdir(), 'sitedrop-bench-precompress-'));
try {
  process.stderr.write(`making the ${opts.shape} site...\n`);
  const site = makeSite(join(work, 'fixture'), SHAPES[opts.shape]);
  const expected = files(site.site).filter((f) => TEXT.test(f.path) && f.size >= MIN_BYTES).length;
  const done = [];
  let waiting;
  const service = await startService(join(work, 'data'), {
    onLine: (line) => {
      if (!line.includes('"msg":"precompressed"')) return;
      done.push({ at: performance.now(), ...JSON.parse(line) });
      waiting?.();
    },
  });
  const token = await createUser(service.url, 'bench');
  const projectDone = (project) =>
    new Promise((resolve) => {
      waiting = () => {
        const line = done.find((d) => d.project === project);
        if (line) resolve(line);
      };
      waiting();
    });

  const rounds = [];
  for (const project of ['first', 'second']) {
    const deployMs = await httpDeploy(service.url, token, project, site.archive);
    const answered = performance.now();
    // GET /api/v1/status every 20 ms until the siblings are done.
    const latencies = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const t = performance.now();
        await fetch(`${service.url}/api/v1/status`).then((r) => r.arrayBuffer());
        latencies.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const line = await projectDone(project);
    polling = false;
    await poller;
    const release = join(service.deploysRoot, 'bench', project, line.release);
    const all = files(release);
    const siblings = all.filter((f) => /\.(br|gz)$/.test(f.path));
    rounds.push({
      project,
      deployMs: Math.round(deployMs),
      untilAllSiblingsMs: Math.round(line.at - answered),
      threadMs: line.ms,
      cpuMs: line.cpuMs,
      made: line.made,
      linked: line.linked,
      notSmaller: line.notSmaller,
      siblings: siblings.length,
      expectedSiblings: 2 * expected,
      bytesIn: line.bytesIn,
      bytesOut: line.bytesOut,
      statusSamples: latencies.length,
      statusP50: latencies.length ? Number(pct(latencies, 0.5).toFixed(1)) : undefined,
      statusP99: latencies.length ? Number(pct(latencies, 0.99).toFixed(1)) : undefined,
    });
  }
  const store = join(service.deploysRoot, 'bench', '.objects');
  const storeFiles = files(store);
  const derived = storeFiles.filter((f) => /\.(br|gz)$/.test(f.path));
  const objects = storeFiles.filter((f) => !/\.(br|gz)$/.test(f.path));
  const disk = {
    objects: objects.length,
    objectBytes: sum(objects, (f) => f.size),
    objectDisk: sum(objects, (f) => f.disk),
    derived: derived.length,
    derivedBytes: sum(derived, (f) => f.size),
    derivedDisk: sum(derived, (f) => f.disk),
  };
  await service.stop();
  console.log(JSON.stringify({ shape: opts.shape, files: site.files, rounds, disk }, null, 2));
  console.log(
    `siblings add ${(disk.derivedBytes / 1e6).toFixed(1)} MB of bytes (${((100 * disk.derivedBytes) / disk.objectBytes).toFixed(0)}% of the release's ${(disk.objectBytes / 1e6).toFixed(1)} MB), ` +
      `${(disk.derivedDisk / 1e6).toFixed(1)} MB on disk (${((100 * disk.derivedDisk) / disk.objectDisk).toFixed(0)}% of its ${(disk.objectDisk / 1e6).toFixed(1)} MB)`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
