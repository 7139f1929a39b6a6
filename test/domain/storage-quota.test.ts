import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StorageQuotaExceeded } from '../../src/domain/errors.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import { ReleaseId } from '../../src/domain/release-id.js';
import { releasesToPrune } from '../../src/domain/retention.js';
import { enforceStorageQuota, keptAfterDeploy, type StoredRelease } from '../../src/domain/storage-quota.js';

const id = (s: number) => ReleaseId.fromDate(new Date(Date.UTC(2026, 0, 1) + s * 1000));
const key = (r: StoredRelease) => `${r.project}/${r.release}`;

/** A user's releases over a few projects, and a deploy to one of them newer than all it holds. */
const world = fc
  .record({
    stored: fc.uniqueArray(fc.record({ project: fc.constantFrom('a', 'b', 'c'), s: fc.integer({ min: 0, max: 1000 }) }), {
      selector: (r) => `${r.project}/${r.s}`,
      maxLength: 30,
    }),
    project: fc.constantFrom('a', 'b', 'c'),
    keep: fc.integer({ min: 1, max: 8 }),
  })
  .map(({ stored, project, keep }) => ({
    stored: stored.map((r) => ({ project: r.project as ProjectName, release: id(r.s) })),
    deployed: { project: project as ProjectName, release: id(2000) },
    keep,
  }));

describe('storage quota', () => {
  it('keeps the deploy, every release of the other projects, and the newest `keep` of its own', () => {
    fc.assert(
      fc.property(world, ({ stored, deployed, keep }) => {
        const kept = keptAfterDeploy(stored, deployed, keep);
        expect(kept.map(key)).toContain(key(deployed));
        const others = (rs: StoredRelease[]) => rs.filter((r) => r.project !== deployed.project).map(key).sort();
        expect(others(kept)).toEqual(others(stored));
        const own = stored.filter((r) => r.project === deployed.project).map((r) => r.release).sort();
        const keptOwn = kept.filter((r) => r.project === deployed.project).map((r) => r.release).sort();
        expect(keptOwn).toEqual([...own, deployed.release].slice(-keep));
      }),
    );
  });

  it('counts nothing twice and nothing that the deploy\'s own pruning removes', () => {
    fc.assert(
      fc.property(world, ({ stored, deployed, keep }) => {
        const kept = keptAfterDeploy(stored, deployed, keep).map(key);
        expect(new Set(kept).size).toBe(kept.length);
        const own = stored.filter((r) => r.project === deployed.project).map((r) => r.release);
        const pruned = releasesToPrune([...own, deployed.release], deployed.release, keep).map((release) => `${deployed.project}/${release}`);
        expect(kept.filter((k) => pruned.includes(k))).toEqual([]);
        expect([...kept, ...pruned].sort()).toEqual([...stored.map(key), key(deployed)].sort());
      }),
    );
  });

  it('refuses exactly when the kept bytes are over the limit, and never without one', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 2 ** 40 }), { maxLength: 40 }), fc.integer({ min: 1, max: 2 ** 45 }), (sizes, limit) => {
        const total = sizes.reduce((a, b) => a + b, 0);
        expect(enforceStorageQuota(undefined, sizes)).toBe(total);
        if (total <= limit) expect(enforceStorageQuota(limit, sizes)).toBe(total);
        else expect(() => enforceStorageQuota(limit, sizes)).toThrow(StorageQuotaExceeded);
      }),
    );
  });

  it('says how much the deploy would keep and what the quota is', () => {
    expect(enforceStorageQuota(10, [4, 6])).toBe(10);
    try {
      enforceStorageQuota(10, [4, 7]);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(StorageQuotaExceeded);
      expect(error).toMatchObject({ wouldKeep: 11, limit: 10 });
    }
  });

  it('a redeploy of a project at its retention limit counts the release it replaces as gone', () => {
    const p = 'site' as ProjectName;
    const stored = [1, 2, 3].map((s) => ({ project: p, release: id(s) }));
    expect(keptAfterDeploy(stored, { project: p, release: id(4) }, 3).map((r) => r.release)).toEqual([id(2), id(3), id(4)]);
  });

  it("counts the releases previews hold besides the kept ones, and a preview deploy leaves the live one live", () => {
    const p = 'site' as ProjectName;
    const stored = [1, 2, 3, 4].map((s) => ({ project: p, release: id(s) }));
    // A live deploy: release 1 is a preview's, so it stays though it is the oldest.
    const live = keptAfterDeploy(stored, { project: p, release: id(5) }, 2, { live: id(5), pinned: [id(1)] });
    expect(live.map((r) => r.release).sort()).toEqual([id(1), id(4), id(5)]);
    // A preview deploy: the live release 2 stays live and counts; the new one is held by its preview.
    const preview = keptAfterDeploy(stored, { project: p, release: id(5) }, 2, { live: id(2), pinned: [id(5)] });
    expect(preview.map((r) => r.release).sort()).toEqual([id(2), id(4), id(5)]);
  });
});
