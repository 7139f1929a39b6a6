#!/usr/bin/env node
// What a site's rules cost per request through a real nginx running the generated
// configuration (`npm run webserver-config -- nginx`): the same file of a plain site and
// of a site with 2,000 redirect rules, and for reference the miss that reads all 2,000
// and the file served by a plain static block without the router. Rounds interleaved
// A B C D A B C D; medians of each round's median request time. Needs root (nginx's
// workers run as nobody) and Debian's nginx-light with libnginx-mod-http-js and brotli.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, median, startBenchNginx, timedGets } from './nginx-bench.mjs';
import { createUser, startService } from './service.mjs';

const { FormData, Blob } = globalThis;

const { values: opts } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, requests: { type: 'string', default: '2000' } } });
const ROUNDS = Number(opts.rounds);
const REQUESTS = Number(opts.requests);


function tgz(dir) {
  const out = `${dir}.tgz`;
  execFileSync('tar', ['-czf', out, '-C', dir, '.']);
  return out;
}

function site(root, name, extra = {}) {
  const dir = join(root, name);
  mkdirSync(join(dir, 'assets'), { recursive: true });
  writeFileSync(join(dir, 'index.html'), '<h1>home</h1>\n');
  for (let i = 0; i < 50; i += 1) writeFileSync(join(dir, 'assets', `page-${i}.html`), `<p>page ${i}</p>\n`.repeat(40));
  for (const [path, text] of Object.entries(extra)) writeFileSync(join(dir, path), text);
  return tgz(dir);
}

async function deploy(url, token, project, archive) {
  const form = new FormData();
  form.append('project', project);
  form.append('file', new Blob([execFileSync('cat', [archive])]), 'site.tgz');
  const r = await fetch(`${url}/api/v1/deploy`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  if (r.status !== 200) throw new Error(`deploy of ${project}: ${r.status} ${await r.text()}`);
}


const root = mkdtempSync(join(tmpdir(), 'sitedrop-bench-webserver-'));
chmodSync(root, 0o755);
const port = await freePort();
const dataDir = join(root, 'data');
const service = await startService(dataDir, { env: { PUBLIC_BASE: `http://127.0.0.1:${port}` } });
try {
  const token = await createUser(service.url, 'bench');
  const rules = Array.from({ length: 2000 }, (_, i) => `/moved/${i}/* /assets/page-${i % 50}.html 301`).join('\n') + '\n';
  await deploy(service.url, token, 'plain', site(root, 'plain'));
  await deploy(service.url, token, 'rules', site(root, 'rules', { _redirects: rules }));

  const staticPort = await freePort();
  // For reference: the same files by a plain static block, no router.
  const nginx = await startBenchNginx(root, { DATA_DIR: dataDir, PUBLIC_BASE: `http://127.0.0.1:${port}` }, `server { listen 127.0.0.1:${staticPort}; root ${join(dataDir, 'docs')}; location / { try_files $uri $uri/index.html =404; } }`);
  try {
    const cases = [
      ['file of a plain site', port, '/bench/plain/assets/page-7.html', 200],
      ['file of a site with 2,000 rules', port, '/bench/rules/assets/page-7.html', 200],
      ['redirect by rule 2,000 (all read)', port, '/bench/rules/moved/1999/x', 301],
      ['file, static block, no router', staticPort, '/bench/plain/assets/page-7.html', 200],
    ];
    for (const [, p, path, status] of cases) await timedGets(p, path, 200, { status });
    const rounds = cases.map(() => []);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [i, [, p, path, status]] of cases.entries()) rounds[i].push(await timedGets(p, path, REQUESTS, { status }));
    }
    const plain = median(rounds[0]);
    console.log(`nginx, ${ROUNDS} interleaved rounds of ${REQUESTS} sequential kept-alive requests; median of round medians:`);
    for (const [i, [name]] of cases.entries()) {
      const ms = median(rounds[i]);
      console.log(`  ${name.padEnd(36)} ${(ms * 1000).toFixed(0).padStart(5)} µs  ${(ms / plain).toFixed(2)}x the plain site's file`);
    }
  } finally {
    nginx.stop();
  }
} finally {
  await service.stop();
  rmSync(root, { recursive: true, force: true });
}
