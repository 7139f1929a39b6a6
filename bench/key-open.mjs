#!/usr/bin/env node
// Issue 26, point 5: what answering a deploy key's session from its project's content
// alone costs. The docs site (40,001 files) deployed `--releases` times as a tarball (its
// releases are what a key's session is answered from), then the open of a whole
// 40,001-file manifest with 5% of its contents new, by the owner's token and by a deploy
// key of the project, alternated; each session is cancelled at once. The first open by the
// key after a start lists every release's inodes (cold); the rest find them remembered.
//   npm run build && node bench/key-open.mjs [--rounds 7] [--releases 5] [--main <another tree's dist/main.js>]
import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { makeSite, manifestOf, SHAPES } from './fixtures.mjs';
import { createUser, httpDeploy, startService } from './service.mjs';

const { values: opts } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    releases: { type: 'string', default: '5' },
    dir: { type: 'string' },
    main: { type: 'string' },
  },
});

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};


/** A request with a JSON body (`gzipped` if so); its answer and how long it took. */
async function call(url, token, method, path, body, gzipped = false) {
  const started = performance.now();
  const r = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body && { 'content-type': 'application/json' }), ...(gzipped && { 'content-encoding': 'gzip' }) },
    body,
  });
  const text = await r.text();
  if (r.status >= 300 && r.status !== 201) throw new Error(`${method} ${path} answered ${r.status}: ${text}`);
  return { status: r.status, body: text ? JSON.parse(text) : {}, ms: performance.now() - started };
}

const root = await mkdtemp(join(opts.dir ?? tmpdir(), 'sitedrop-key-open-'));
try {
  const { site, archive } = makeSite(root, SHAPES.docs);
  const service = await startService(join(root, 'data'), { env: { RELEASES_KEEP: opts.releases, DEPLOY_SESSIONS_MAX: '50' }, ...(opts.main && { main: opts.main }) });
  try {
    const owner = await createUser(service.url, 'bench');
    for (let i = 0; i < Number(opts.releases); i += 1) {
      await httpDeploy(service.url, owner, 'docs', archive);
      await new Promise((resolve) => setTimeout(resolve, 1100)); // release ids are by the second
    }
    const key = (await call(service.url, owner, 'POST', '/api/v1/projects/docs/keys', JSON.stringify({ name: 'bench', scope: 'preview' }))).body.token;
    const files = manifestOf(site).map((f, i) => (i % 20 === 7 ? { ...f, digest: randomBytes(32).toString('hex') } : f));
    const body = gzipSync(JSON.stringify({ project: 'docs', preview: 'bench', files }));
    const times = { owner: [], key: [] };
    let cold;
    for (let round = 0; round < Number(opts.rounds); round += 1) {
      for (const who of round % 2 === 0 ? ['key', 'owner'] : ['owner', 'key']) {
        const opened = await call(service.url, who === 'key' ? key : owner, 'POST', '/api/v1/deploys', body, true);
        if (who === 'key' && cold === undefined) cold = opened.ms;
        else times[who].push(opened.ms);
        const missing = opened.body.missing.length;
        await call(service.url, owner, 'DELETE', `/api/v1/deploys/${opened.body.id}`);
        // The release prepared for it is thrown away in the background: the next open is timed on its own.
        while (readdirSync(join(service.deploysRoot, '.trash')).length > 0) await new Promise((resolve) => setTimeout(resolve, 50));
        await new Promise((resolve) => setTimeout(resolve, 300));
        console.log(`round ${round} ${who}: ${opened.ms.toFixed(0)} ms, ${missing} missing`);
      }
    }
    console.log(`\n${files.length} files, ${opts.releases} releases; open, median of ${opts.rounds}:`);
    console.log(`  owner's token  ${median(times.owner).toFixed(0)} ms (${Math.min(...times.owner).toFixed(0)}-${Math.max(...times.owner).toFixed(0)})`);
    console.log(`  deploy key     ${median(times.key).toFixed(0)} ms (${Math.min(...times.key).toFixed(0)}-${Math.max(...times.key).toFixed(0)}), its first ${cold.toFixed(0)} ms`);
  } finally {
    await service.stop();
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
