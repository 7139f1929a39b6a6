#!/usr/bin/env node
// Custom domains with 1,000 of them verified (50 projects of 20), through a real nginx
// or Caddy running the generated configuration (`--server nginx|caddy`): a file requested
// at a domain (Host header, the catch-all server following DOMAINS_ROOT/$host) against the
// same file at its path address, rounds interleaved A B A B, medians of each round's
// median request time; and what the API takes: add + verify per domain (TXT lookups at a
// UDP responder here) and the tokenless check Caddy asks before a certificate. With Caddy,
// every verified domain loads a configuration (the HTTPS site names its hosts), and a
// tenth of the projects have rules (a route per site at its domains): also how long one
// load of all of it takes, and how long a new domain takes to answer over HTTPS. Needs
// root and Debian's nginx-light with libnginx-mod-http-js and brotli, or Debian's caddy.
import { execFileSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'node:https';
import { freePort, median, startBenchCaddy, startBenchNginx, timedGets } from './nginx-bench.mjs';
import { createUser, startService } from './service.mjs';

const { FormData, Blob } = globalThis;
const { values: opts } = parseArgs({
  options: { rounds: { type: 'string', default: '7' }, requests: { type: 'string', default: '2000' }, domains: { type: 'string', default: '1000' }, server: { type: 'string', default: 'nginx' } },
});
const CADDY = opts.server === 'caddy';
const ROUNDS = Number(opts.rounds);
const REQUESTS = Number(opts.requests);
const DOMAINS = Number(opts.domains);
const PER_PROJECT = 20;


/** Answers TXT questions from `records` (name -> value); enough of RFC 1035 for c-ares. */
async function dnsResponder(records) {
  const socket = createSocket('udp4');
  socket.on('message', (q, from) => {
    const labels = [];
    let at = 12;
    for (let n = q[at]; n > 0; n = q[at]) {
      labels.push(q.subarray(at + 1, at + 1 + n).toString('latin1'));
      at += 1 + n;
    }
    const value = records.get(labels.join('.').toLowerCase());
    const header = Buffer.from(q.subarray(0, 12));
    header.writeUInt16BE(0x8400 | (q.readUInt16BE(2) & 0x0100) | (value === undefined ? 3 : 0), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(value === undefined ? 0 : 1, 6);
    header.writeUInt32BE(0, 8);
    const question = q.subarray(12, at + 5);
    if (value === undefined) return socket.send(Buffer.concat([header, question]), from.port, from.address);
    const data = Buffer.concat([Buffer.from([value.length]), Buffer.from(value)]);
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0);
    rr.writeUInt16BE(16, 2);
    rr.writeUInt16BE(1, 4);
    rr.writeUInt16BE(data.length, 10);
    socket.send(Buffer.concat([header, question, rr, data]), from.port, from.address);
  });
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { address: `127.0.0.1:${socket.address().port}`, close: () => socket.close() };
}

async function call(url, method, path, token, body) {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  const r = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}


const root = mkdtempSync(join(tmpdir(), 'sitedrop-bench-domains-'));
chmodSync(root, 0o755);
const port = await freePort();
const dataDir = join(root, 'data');
const records = new Map();
const dns = await dnsResponder(records);
const env = { PUBLIC_BASE: `http://127.0.0.1:${port}`, DNS_SERVERS: dns.address, PRECOMPRESS: 'off' };
if (CADDY) Object.assign(env, { CADDY_ADMIN: `127.0.0.1:${await freePort()}`, PORT: String(await freePort()), DOMAINS_HTTPS_PORT: String(await freePort()), DOMAINS_TLS: 'internal' });
// Caddy is told of every load sitedrop makes: it runs from the start, as it would.
const caddy = CADDY ? await startBenchCaddy(root, { DATA_DIR: dataDir, ...env }) : undefined;
const service = await startService(dataDir, { env });
try {
  const token = await createUser(service.url, 'bench');
  const site = join(root, 'site');
  mkdirSync(join(site, 'assets'), { recursive: true });
  writeFileSync(join(site, 'index.html'), '<h1>home</h1>\n');
  for (let i = 0; i < 50; i += 1) writeFileSync(join(site, 'assets', `page-${i}.html`), `<p>page ${i}</p>\n`.repeat(40));
  execFileSync('tar', ['-czf', `${site}.tgz`, '-C', site, '.']);
  const archive = execFileSync('cat', [`${site}.tgz`]);
  // With Caddy, every tenth project has rules: a route Caddy loads, at the path and at the project's domains.
  writeFileSync(join(site, '_redirects'), '/old /index.html 301\n/docs/* /assets/:splat 200\n');
  execFileSync('tar', ['-czf', `${site}-rules.tgz`, '-C', site, '.']);
  const ruled = execFileSync('cat', [`${site}-rules.tgz`]);
  const projects = Math.ceil(DOMAINS / PER_PROJECT);
  for (let p = 0; p < projects; p += 1) {
    const form = new FormData();
    form.append('project', `p${p}`);
    form.append('file', new Blob([CADDY && p % 10 === 0 ? ruled : archive]), 'site.tgz');
    const r = await fetch(`${service.url}/api/v1/deploy`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    if (r.status !== 200) throw new Error(`deploy p${p}: ${r.status}`);
  }
  const addMs = [];
  const verifyMs = [];
  for (let d = 0; d < DOMAINS; d += 1) {
    const project = `p${Math.floor(d / PER_PROJECT)}`;
    let started = performance.now();
    const added = await call(service.url, 'POST', `/api/v1/projects/${project}/domains`, token, { domain: `d${d}.example.com` });
    addMs.push(performance.now() - started);
    if (added.status !== 200) throw new Error(`add d${d}: ${JSON.stringify(added.body)}`);
    records.set(added.body.verification.name, added.body.verification.value);
    started = performance.now();
    const verified = await call(service.url, 'POST', `/api/v1/projects/${project}/domains/d${d}.example.com/verify`, token);
    verifyMs.push(performance.now() - started);
    if (verified.status !== 200) throw new Error(`verify d${d}: ${JSON.stringify(verified.body)}`);
  }
  const links = readdirSync(join(dataDir, 'domains')).length;
  const checkMs = [];
  for (let i = 0; i < 500; i += 1) {
    const started = performance.now();
    const r = await fetch(`${service.url}/api/v1/domains/check?domain=d${(i * 7) % DOMAINS}.example.com`);
    await r.arrayBuffer();
    checkMs.push(performance.now() - started);
    if (r.status !== 200) throw new Error(`check: ${r.status}`);
  }

  const caddyFigures = caddy ? await caddyLoads(caddy, env, service.url, token, records) : undefined;
  const web = caddy ?? (await startBenchNginx(root, { DATA_DIR: dataDir, ...env }));
  try {
    const last = DOMAINS - 1;
    const cases = [
      ['file at its path address', `127.0.0.1:${port}`, `/bench/p${Math.floor(last / PER_PROJECT)}/assets/page-7.html`],
      [`file at a domain (1 of ${DOMAINS})`, `d${last}.example.com`, '/assets/page-7.html'],
      ...(CADDY ? [['file at a domain of a site with rules', 'd0.example.com', '/assets/page-7.html']] : []),
    ];
    for (const [, host, path] of cases) await timedGets(port, path, 200, { host });
    const rounds = cases.map(() => []);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [i, [, host, path]] of cases.entries()) rounds[i].push(await timedGets(port, path, REQUESTS, { host }));
    }
    const byPath = median(rounds[0]);
    console.log(`${DOMAINS} domains verified over ${projects} projects; ${links} host links in DOMAINS_ROOT`);
    console.log(`  API: add median ${median(addMs).toFixed(1)} ms, verify (with its TXT lookup) median ${median(verifyMs).toFixed(1)} ms, check median ${median(checkMs).toFixed(2)} ms (500 asked)`);
    if (caddyFigures) {
      const { loadMs, answerMs, deployMs } = caddyFigures;
      console.log(`  Caddy: one load of all of it (POST /load of the Caddyfile, ${loadMs.length} times) median ${median(loadMs).toFixed(0)} ms, worst ${Math.max(...loadMs).toFixed(0)} ms`);
      console.log(`  Caddy: a new domain answering over HTTPS after its verify's answer (certificate issued on demand), median of ${answerMs.length}: ${median(answerMs).toFixed(0)} ms, worst ${Math.max(...answerMs).toFixed(0)} ms`);
      console.log(`  Caddy: a redeploy of a site with rules (its own load), median of ${deployMs.length}: ${median(deployMs).toFixed(0)} ms`);
    }
    console.log(`${opts.server}, ${ROUNDS} interleaved rounds of ${REQUESTS} sequential kept-alive requests; median of round medians:`);
    for (const [i, [name]] of cases.entries()) {
      const ms = median(rounds[i]);
      console.log(`  ${name.padEnd(38)} ${(ms * 1000).toFixed(0).padStart(5)} µs  ${(ms / byPath).toFixed(2)}x the path address`);
    }
  } finally {
    web.stop();
  }
} finally {
  await service.stop();
  caddy?.stop();
  dns.close();
  rmSync(root, { recursive: true, force: true });
}

/** A GET over HTTPS with SNI `host` at Caddy's domains port: whether it answered 200. */
function tlsOk(port, host) {
  return new Promise((resolve) => {
    request({ host: '127.0.0.1', port, servername: host, path: '/', headers: { host }, rejectUnauthorized: false, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    }).on('error', () => resolve(false)).end();
  });
}

/** With 1,000 domains verified: one load's time, a new domain's time to answer over HTTPS, a rules site's redeploy. */
async function caddyLoads(caddy, env, url, token, records) {
  const text = readFileSync(caddy.caddyfile, 'utf8');
  const loadMs = [];
  for (let i = 0; i < 5; i += 1) {
    const started = performance.now();
    const r = await fetch(`http://${env.CADDY_ADMIN}/load`, { method: 'POST', headers: { 'content-type': 'text/caddyfile' }, body: text });
    if (!r.ok) throw new Error(`load: ${r.status} ${await r.text()}`);
    loadMs.push(performance.now() - started);
  }
  const answerMs = [];
  for (let i = 0; i < 5; i += 1) {
    const domain = `new${i}.example.com`;
    // The project is at DOMAINS_MAX: one goes, one comes.
    const removed = await call(url, 'DELETE', `/api/v1/projects/p1/domains/d${20 + i}.example.com`, token);
    if (removed.status !== 200) throw new Error(`remove: ${removed.status}`);
    const added = await call(url, 'POST', '/api/v1/projects/p1/domains', token, { domain });
    if (added.status !== 200) throw new Error(`add ${domain}: ${JSON.stringify(added.body)}`);
    records.set(added.body.verification.name, added.body.verification.value);
    const verified = await call(url, 'POST', `/api/v1/projects/p1/domains/${domain}/verify`, token);
    if (verified.status !== 200) throw new Error(`verify ${domain}: ${verified.status}`);
    const started = performance.now();
    while (!(await tlsOk(Number(env.DOMAINS_HTTPS_PORT), domain))) {
      if (performance.now() - started > 30_000) throw new Error(`${domain} never answered over HTTPS`);
      await new Promise((r) => setTimeout(r, 10));
    }
    answerMs.push(performance.now() - started);
  }
  const deployMs = [];
  const archive = readFileSync(join(root, 'site-rules.tgz'));
  for (let i = 0; i < 5; i += 1) {
    const form = new FormData();
    form.append('project', 'p0');
    form.append('file', new Blob([archive]), 'site.tgz');
    const started = performance.now();
    const r = await fetch(`${url}/api/v1/deploy`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`redeploy: ${r.status}`);
    deployMs.push(performance.now() - started);
  }
  return { loadMs, answerMs, deployMs };
}
