import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PinoLogger } from '../../src/adapters/log/logger.js';
import { startChild } from '../support/child-service.js';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';

describe('logs: one JSON line per request and per deploy outcome, never a token', () => {
  const lines: string[] = [];
  let h: Harness;
  const tokens: string[] = [ADMIN_TOKEN];
  const logged = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);

  beforeAll(async () => {
    const logger = new PinoLogger({ level: 'info', format: 'json', destination: { write: (line: string) => void lines.push(line) } });
    h = await startHarness({}, logger);
  });
  afterAll(async () => {
    await h.close();
  });

  it('logs each request with its id (also returned as X-Request-Id), status, duration and user', async () => {
    const token = await h.createUser('logged');
    tokens.push(token);
    const r = await h.call('GET', '/api/v1/projects', { token, headers: { 'x-request-id': 'ci-run-42' } });
    expect(r.headers.get('x-request-id')).toBe('ci-run-42');
    const fresh = await h.call('GET', '/api/v1/status');
    const id = fresh.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(logged()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ msg: 'request', requestId: 'ci-run-42', method: 'GET', path: '/api/v1/projects', status: 200, user: 'logged', durationMs: expect.any(Number) }),
        expect.objectContaining({ msg: 'request', requestId: id, path: '/api/v1/status', status: 200, user: null }),
        expect.objectContaining({ msg: 'request', path: '/api/v1/auth', status: 200, user: '(admin)' }),
      ]),
    );
  });

  it('logs each deploy outcome: the release and sizes, or the reason it failed', async () => {
    const token = await h.createUser('deployer');
    tokens.push(token);
    const ok = await h.deploy(token, 'site', tgz([file('index.html', 'hello'), file('a/b.css', 'x')]));
    expect(ok.status).toBe(200);
    await h.deploy(token, 'site', tgz([file('../escape')]));
    await h.deploy('Z'.repeat(32), 'site', tgz([file('index.html')]));
    const rerolled = await h.createUser('deployer');
    tokens.push(rerolled);
    expect(logged()).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          msg: 'deployed', user: 'deployer', project: 'site', release: ok.body.release, files: 2, bytes: 6, durationMs: expect.any(Number),
          phasesMs: { stage: expect.any(Number), lockWait: expect.any(Number), publish: expect.any(Number), prune: expect.any(Number) },
        }),
        expect.objectContaining({
          msg: 'staged', user: 'deployer', files: 2, bytes: 6, compressedBytes: expect.any(Number),
          phasesMs: { unpack: expect.any(Number), flush: expect.any(Number) },
        }),
        expect.objectContaining({ msg: 'deploy failed', user: 'deployer', status: 500, reason: "failed to extract tarball: path contains '..' component which is not allowed: ../escape" }),
        expect.objectContaining({ msg: 'request', path: '/api/v1/deploy', status: 401, user: null }),
      ]),
    );
  });

  it("times the flush to disk as a part of the staging, in the staging's own line, with the bytes it received", () => {
    const deployed = logged().find((l) => l.msg === 'deployed') as { phasesMs: { stage: number } };
    const staged = logged().find((l) => l.msg === 'staged') as { compressedBytes: number; phasesMs: { unpack: number; flush: number } };
    expect(staged.phasesMs.flush).toBeGreaterThanOrEqual(0);
    // Whole milliseconds from different clocks: allow the rounding.
    expect(staged.phasesMs.unpack + staged.phasesMs.flush).toBeLessThanOrEqual(deployed.phasesMs.stage + 2);
    expect(staged.compressedBytes).toBe(tgz([file('index.html', 'hello'), file('a/b.css', 'x')]).length);
  });

  it('never writes a token or an Authorization header', () => {
    const all = lines.join('');
    expect(lines.length).toBeGreaterThan(8);
    for (const token of tokens) expect(all).not.toContain(token);
    expect(all.toLowerCase()).not.toContain('bearer');
  });
});

describe('LOG_FORMAT=pretty (the built service)', () => {
  it('writes readable lines, not JSON', async () => {
    const data = await mkdtemp(join(tmpdir(), 'sitedrop-pretty-'));
    const child = await startChild({ DATA_DIR: data, ADMIN_TOKEN, LOG_FORMAT: 'pretty' });
    try {
      const out = child.output();
      expect(out).toMatch(/url: "http:\/\/127\.0\.0\.1:\d+"/);
      expect(out.split('\n')[0]).not.toMatch(/^\{/);
    } finally {
      child.process.kill('SIGTERM');
      await child.exited;
      await rm(data, { recursive: true, force: true });
    }
  });
});
