import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { mkdtemp, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { syncfsMethod } from '../src/adapters/fs/layout/durability.js';
import { spawnService, whenListening } from '../scripts/service-process.mjs';
import { createUserAt, deployTo } from './support/child-service.js';
import { file, tgz } from './support/tar-builder.js';
import { until } from './support/until.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ENTRIES = ['main.js', 'adapters/fs/unpack/unpack-thread.js', 'adapters/fs/write/writer-thread.js', 'adapters/precompress/precompress-process.js'];
const built = (entry: string): string => readFileSync(join(ROOT, 'dist', entry), 'utf8');
const ADMIN = 'bundle-admin-token-0123456789abcdefghij';

/**
 * `npm run build` bundles the service's process, threads and fork (scripts/bundle-service.mjs):
 * the memory figures in docs/performance.md are those of one file each. Every other test
 * that starts the service or its threads runs these files; what is held here is what they
 * cannot see.
 */
describe.each(ENTRIES)('the built service: dist/%s', (entry) => {
  it('is one file, importing none of our modules', () => {
    // tsc's files import their neighbours by relative path; a bundle imports only packages and Node's modules.
    expect(built(entry)).not.toMatch(/^(import|export)\b[^;]*\bfrom\s*["']\.{1,2}\//m);
  });

  it('names no path of the machine that built it', () => {
    expect(built(entry)).not.toContain(ROOT.replace(/\/$/, ''));
  });
});

describe('the built service, its project moved elsewhere', () => {
  const cleanUp: Array<() => unknown> = [];
  afterAll(async () => {
    for (const step of cleanUp.reverse()) await step();
  });

  // The addons and the files beside the code are found from each bundled module's own
  // address: a wrong one would fall back in silence (the addons) or fail only on the path
  // that reads it.
  it('finds its addons, threads, precompression, CLI bundle and API document in the new place, and deploys', async () => {
    const moved = await mkdtemp(join(tmpdir(), 'sitedrop-moved-'));
    cleanUp.push(() => rm(moved, { recursive: true, force: true }));
    for (const part of ['dist', 'build/Release', 'package.json']) cpSync(join(ROOT, part), join(moved, part), { recursive: true });
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(moved, 'node_modules'));
    const data = join(moved, 'var');
    mkdirSync(data);

    const child = spawnService({ DATA_DIR: data, ADMIN_TOKEN: ADMIN, PRECOMPRESS: 'on' }, { main: join(moved, 'dist/main.js') });
    cleanUp.push(() => child.kill('SIGKILL'));
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const url = await whenListening(child, { output: () => output });

    expect(output).toContain(`"syncfs":"${syncfsMethod}"`);
    const cli = await fetch(`${url}/api/v1/cli`);
    expect(cli.status).toBe(200);
    expect(Buffer.from(await cli.arrayBuffer()).equals(readFileSync(join(moved, 'dist/sitedrop.mjs')))).toBe(true);
    expect((await fetch(`${url}/api/v1/openapi.json`)).status).toBe(200);

    const token = await createUserAt(url, ADMIN, 'mover');
    const page = `<h1>moved</h1>${'<p>the same paragraph, again</p>'.repeat(40)}`;
    const deployed = await deployTo(url, token, 'site', tgz([file('index.html', page)]));
    expect(deployed.status).toBe(200);
    const live = await readlink(join(data, 'docs/mover/site'));
    expect(readFileSync(join(live, 'index.html'), 'utf8')).toBe(page);
    // Made by the precompression process, the fourth bundle, which loads the addons too.
    await until(() => existsSync(join(live, 'index.html.br')) && existsSync(join(live, 'index.html.gz')), 'the compressed siblings');
  });
});
