import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { versionedSite } from '../support/sites.js';

/** The benchmark runs end to end on a tiny fixture, so it cannot rot. No timing is asserted. */
describe('npm run bench', () => {
  it('runs on a tiny fixture and reports every figure', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sitedrop-bench-test-'));
    const json = join(dir, 'latest.json');
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ['bench/run.mjs', '--tiny', '--json', json], { timeout: 60_000 });
      expect(stdout).toMatch(/reference \(tiny\) ratio: \d+\.\d\d; worst shape: .+ \d+\.\d\d; median of all pair ratios: \d+\.\d\d/);
      expect(stdout).toMatch(/service peak RSS \d+\.\d MiB/);
      const results = JSON.parse(await readFile(json, 'utf8'));
      expect(results.scenarios.map((s: { name: string }) => s.name)).toEqual(['tiny', '2x tiny at once']);
      for (const s of results.scenarios) {
        expect(s.ratios).toHaveLength(1);
        expect(s.ratios[0]).toBeGreaterThan(0);
        expect(s.durableRatios).toHaveLength(1);
        expect(s.medianC).toBeGreaterThan(0);
        // First deploys, an empty store each (a new user's), beside the repeats.
        expect(s.first.ratios).toHaveLength(1);
        expect(s.first.ratios[0]).toBeGreaterThan(0);
        expect(s.first.durableRatios).toHaveLength(1);
        expect(s.servicePhasesMs).toEqual({ stage: expect.any(Number), flush: expect.any(Number), lockWait: expect.any(Number), publish: expect.any(Number), prune: expect.any(Number) });
        expect(s.files).toBeGreaterThan(0);
        // Every shape's deploys are watched (the warm-ups, the pairs' repeat and first, the polled
        // one); the status is polled during the untimed one only, so polling cannot slow the timed ones.
        expect(s.deploys).toBe(5);
        expect(s.polledDeploys).toBe(1);
        expect(s.peakRssMiB).toBeGreaterThan(10);
        // No poll failed: the service answered every one.
        expect(s.status).toEqual({ samples: expect.any(Number), failed: 0, p50: expect.any(Number), p99: expect.any(Number), max: expect.any(Number) });
        expect(s.status.samples).toBeGreaterThan(0);
      }
      expect(stdout).toMatch(/\| peak RSS MiB \| status p99 ms \|/);
      expect(stdout).toMatch(/\| first deploy ms \| first ratio \| first pair ratios \| first to sync -f \|/);
      expect(stdout).toMatch(/\| tiny +\|(.*\|){13} \d+\.\d +\| \d+\.\d +\|/);
      expect(stdout).toMatch(/\| 1\.0 MiB upload +\|(.*\|){13} \d+\.\d +\| \d+\.\d +\|/);
      expect(stdout).toMatch(/first deploys \(an empty store each\): worst shape .+ \d+\.\d\d/);
      expect(results.memory.deploys).toBe(1);
      expect(results.memory.polledDeploys).toBe(1);
      expect(results.memory.peakRssMiB).toBeGreaterThan(10);
      expect(results.memory.status.samples).toBeGreaterThan(0);
      // A prune is timed last: one deploy per shape that prunes the oldest release, and the
      // collector's deletion of it after the answer, with the status polled meanwhile.
      expect(results.prunes).toEqual([{
        name: 'tiny', keep: expect.any(Number), deployMs: expect.any(Number), deletedMs: expect.any(Number),
        phasesMs: { stage: expect.any(Number), flush: expect.any(Number), lockWait: expect.any(Number), publish: expect.any(Number), prune: expect.any(Number) },
        deploys: 2, polledDeploys: 1, peakRssMiB: expect.any(Number), peaksByPartMiB: { timed: expect.any(Number), polled: expect.any(Number) }, status: expect.objectContaining({ failed: 0 }),
      }]);
      expect(results.prunes[0].keep).toBeGreaterThan(2);
      expect(stdout).toMatch(/tiny: a deploy that prunes one release: \d+ ms \(repeats' median \d+\), stage \d+ ms, record \+ prune \d+ ms \(repeats' median [\d.]+\); deleted \d+ ms after the answer; service peak RSS \d+\.\d MiB; GET \/api\/v1\/status while it was deleted: \d+ samples/);
      expect(typeof results.medianRatio).toBe('number');
      expect(typeof results.referenceRatio).toBe('number');
      expect(results.worst.name).toBeTruthy();
      expect(results.worstFirst.name).toBeTruthy();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('bench/deploy-loop.mjs deploys an archive round after round through a built service and leaves nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sitedrop-loop-test-'));
    try {
      const archive = join(dir, 'site.tgz');
      await writeFile(archive, versionedSite('loop', 20));
      const run = promisify(execFile)(process.execPath, ['bench/deploy-loop.mjs', '--archive', archive, '--rounds', '2', '--concurrent', '2', '--dir', dir], { timeout: 60_000 });
      await expect(run).resolves.toBeTruthy();
      // Its data directory (two projects, two releases each) is gone with it.
      expect(await readdir(dir)).toEqual(['site.tgz']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
