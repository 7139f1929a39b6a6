#!/usr/bin/env node
// Custom domains with 1,000 of them verified (50 projects of 20), through a real nginx
// running the generated configuration: a file requested at a domain (Host header, the
// catch-all server following DOMAINS_ROOT/$host) against the same file at its path
// address, rounds interleaved A B A B, medians of each round's median request time; and
// what the API takes: add + verify per domain (TXT lookups at a UDP responder here) and
// the tokenless check Caddy asks before a certificate. Needs root and Debian's nginx-light
// with libnginx-mod-http-js and brotli, as bench/webserver.mjs.
import { execFileSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, median, startBenchNginx, timedGets } from './nginx-bench.mjs';
import { createUser, startService } from './service.mjs';

const { FormData, Blob } = globalThis;
const { values: opts } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, requests: { type: 'string', default: '2000' }, domains: { type: 'string', default: '1000' } } });
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
const service = await startService(dataDir, { env });
try {
  const token = await createUser(service.url, 'bench');
  const site = join(root, 'site');
  mkdirSync(join(site, 'assets'), { recursive: true });
  writeFileSync(join(site, 'index.html'), '<h1>home</h1>\n');
  for (let i = 0; i < 50; i += 1) writeFileSync(join(site, 'assets', `page-${i}.html`), `<p>page ${i}</p>\n`.repeat(40));
  execFileSync('tar', ['-czf', `${site}.tgz`, '-C', site, '.']);
  const archive = execFileSync('cat', [`${site}.tgz`]);
  const projects = Math.ceil(DOMAINS / PER_PROJECT);
  for (let p = 0; p < projects; p += 1) {
    const form = new FormData();
    form.append('project', `p${p}`);
    form.append('file', new Blob([archive]), 'site.tgz');
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

  const nginx = await startBenchNginx(root, { DATA_DIR: dataDir, ...env });
  try {
    const last = DOMAINS - 1;
    const cases = [
      ['file at its path address', `127.0.0.1:${port}`, `/bench/p${Math.floor(last / PER_PROJECT)}/assets/page-7.html`],
      [`file at a domain (1 of ${DOMAINS})`, `d${last}.example.com`, '/assets/page-7.html'],
    ];
    for (const [, host, path] of cases) await timedGets(port, path, 200, { host });
    const rounds = cases.map(() => []);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [i, [, host, path]] of cases.entries()) rounds[i].push(await timedGets(port, path, REQUESTS, { host }));
    }
    const byPath = median(rounds[0]);
    console.log(`${DOMAINS} domains verified over ${projects} projects; ${links} host links in DOMAINS_ROOT`);
    console.log(`  API: add median ${median(addMs).toFixed(1)} ms, verify (with its TXT lookup) median ${median(verifyMs).toFixed(1)} ms, check median ${median(checkMs).toFixed(2)} ms (500 asked)`);
    console.log(`nginx, ${ROUNDS} interleaved rounds of ${REQUESTS} sequential kept-alive requests; median of round medians:`);
    for (const [i, [name]] of cases.entries()) {
      const ms = median(rounds[i]);
      console.log(`  ${name.padEnd(30)} ${(ms * 1000).toFixed(0).padStart(5)} µs  ${(ms / byPath).toFixed(2)}x the path address`);
    }
  } finally {
    nginx.stop();
  }
} finally {
  await service.stop();
  dns.close();
  rmSync(root, { recursive: true, force: true });
}
