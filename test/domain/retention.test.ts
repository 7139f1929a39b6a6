import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReleaseId } from '../../src/domain/release-id.js';
import { releasesToPrune } from '../../src/domain/retention.js';

const ids = fc
  .uniqueArray(fc.integer({ min: 0, max: 10_000_000 }), { maxLength: 40 })
  .map((secs) => secs.map((s) => ReleaseId.fromDate(new Date(Date.UTC(2026, 0, 1) + s * 1000))));

describe('retention', () => {
  it('keeps exactly min(n, keep) releases, the newest ones, when the live one is the newest', () => {
    fc.assert(
      fc.property(ids, fc.integer({ min: 1, max: 10 }), (releases, keep) => {
        const sorted = [...releases].sort();
        const live = sorted[sorted.length - 1];
        const pruned = releasesToPrune(releases, live, keep);
        const kept = sorted.filter((id) => !pruned.includes(id));
        expect(kept.length).toBe(Math.min(releases.length, keep));
        expect(kept).toEqual(sorted.slice(Math.max(0, sorted.length - keep)));
        expect([...kept, ...pruned].sort()).toEqual(sorted);
      }),
    );
  });

  it('never prunes the live release, wherever it is', () => {
    fc.assert(
      fc.property(ids.filter((r) => r.length > 0), fc.nat(), fc.integer({ min: 1, max: 10 }), (releases, pick, keep) => {
        const live = releases[pick % releases.length]!;
        const pruned = releasesToPrune(releases, live, keep);
        expect(pruned).not.toContain(live);
        expect(releases.length - pruned.length).toBe(Math.min(releases.length, keep));
      }),
    );
  });

  it('never prunes a release a preview points to, and counts only the others towards keep', () => {
    fc.assert(
      fc.property(ids.filter((r) => r.length > 0), fc.array(fc.nat()), fc.nat(), fc.integer({ min: 1, max: 10 }), (releases, picks, pick, keep) => {
        const live = releases[pick % releases.length]!;
        const pinned = picks.map((p) => releases[p % releases.length]!);
        const pruned = releasesToPrune(releases, live, keep, { pinned });
        for (const id of [live, ...pinned]) expect(pruned).not.toContain(id);
        const held = new Set(pinned.filter((id) => id !== live));
        const counted = releases.filter((id) => !held.has(id));
        expect(counted.length - pruned.length).toBe(Math.min(counted.length, keep));
        // Of the counted, the oldest go first (the live one aside).
        const keptCounted = counted.filter((id) => !pruned.includes(id) && id !== live).sort();
        for (const id of pruned) for (const kept of keptCounted) expect(id < kept).toBe(true);
      }),
    );
  });

  it('prunes oldest first and refuses a keep below 1', () => {
    const r = ['20260101T000001', '20260101T000002', '20260101T000003'] as ReleaseId[];
    expect(releasesToPrune(r, r[2], 1)).toEqual([r[0], r[1]]);
    expect(() => releasesToPrune(r, r[2], 0)).toThrow(RangeError);
  });

  it('removes replaced preview releases first, and never lets them push out a release that was live', () => {
    fc.assert(
      fc.property(ids.filter((r) => r.length > 0), fc.array(fc.nat()), fc.array(fc.nat()), fc.nat(), fc.integer({ min: 1, max: 10 }), (releases, marks, pins, pick, keep) => {
        const live = releases[pick % releases.length]!;
        const previewOnly = [...new Set(marks.map((m) => releases[m % releases.length]!))].filter((id) => id !== live);
        const pinned = pins.map((p) => releases[p % releases.length]!);
        const pruned = releasesToPrune(releases, live, keep, { pinned, previewOnly });
        for (const id of [live, ...pinned]) expect(pruned).not.toContain(id);
        // Every preview-only release no preview points to goes, and goes first.
        const replaced = previewOnly.filter((id) => !pinned.includes(id));
        expect(new Set(pruned.slice(0, replaced.length))).toEqual(new Set(replaced));
        // The live history is pruned exactly as if the previews had never been deployed.
        const history = releases.filter((id) => !previewOnly.includes(id));
        const historyPruned = releasesToPrune(history, live, keep, { pinned: pinned.filter((id) => history.includes(id)) });
        expect(pruned.filter((id) => !previewOnly.includes(id))).toEqual(historyPruned);
      }),
    );
  });

  it('keeps the live history when a preview is redeployed (the issue\'s RELEASES_KEEP=3 case)', () => {
    const r = (s: number) => `2026010${s}T000000` as ReleaseId;
    // R1-R3 live deploys; R4, R5, R6 one preview's redeploys, R6 still pointed to.
    const pruned = releasesToPrune([r(1), r(2), r(3), r(4), r(5), r(6)], r(3), 3, { pinned: [r(6)], previewOnly: [r(4), r(5), r(6)] });
    expect(pruned).toEqual([r(4), r(5)]);
  });
});
