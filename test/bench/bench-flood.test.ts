import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/** bench/flood.mjs runs end to end on a tiny fixture, in both orders, so it cannot rot. No figure is asserted. */
describe('node bench/flood.mjs', () => {
  it('floods a tiny site with deploys and stalled uploads, in both orders, and reports every figure', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['bench/flood.mjs', '--shape', 'tiny', '--clients', '6', '--stallers', '2', '--concurrent', '2', '--idle-seconds', '1', '--json'],
      { timeout: 60_000 },
    );
    const runs = JSON.parse(stdout);
    expect(runs.map((r: { stallersFirst: boolean }) => r.stallersFirst)).toEqual([true, false]);
    for (const r of runs) {
      expect(r.honestAnswers).toEqual({ '200': 6 });
      expect(r.stalledAnswers).toEqual({ '408 upload stalled: no data received for 1 s': 2 });
      expect(r.deployed).toBe(6);
      expect(r.publishedInTime).toBe(6);
      expect(r.brokenReleases).toBe(0);
      // Two deploys at once, and the one scratch area compressed siblings are made in.
      expect(r.peakStaging).toBeLessThanOrEqual(3);
      expect(r.peakRssMiB).toBeGreaterThan(10);
      expect(r.status.samples).toBeGreaterThan(0);
      expect(r.stalledSilentMs.max).toBeGreaterThan(0);
      expect(r.targets).toMatchObject({ published: true, nothingLeft: true });
      expect(r.after).toMatchObject({ staging: 0, fresh: 0 });
      // The siblings' thread comes and goes with its work: no more threads after than before.
      expect(r.after.threads).toBeLessThanOrEqual(r.before.threads);
      expect(r.after.fds).toBeLessThanOrEqual(r.before.fds);
    }
  }, 90_000);
});
