import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NothingToRollBackTo, ReleaseNotFound } from '../../src/domain/errors.js';
import { ReleaseId } from '../../src/domain/release-id.js';
import { rollbackTarget } from '../../src/domain/rollback.js';

const r = (s: string) => `2026010${s}T000000` as ReleaseId;

describe('rollbackTarget', () => {
  it('defaults to the newest release older than the live one', () => {
    expect(rollbackTarget([r('1'), r('2'), r('3')], r('3'))).toBe(r('2'));
    expect(rollbackTarget([r('1'), r('2'), r('3')], r('2'))).toBe(r('1'));
  });

  it('takes a named release that exists, newer ones too', () => {
    expect(rollbackTarget([r('1'), r('2'), r('3')], r('1'), r('3'))).toBe(r('3'));
    expect(() => rollbackTarget([r('1'), r('2')], r('2'), r('5'))).toThrow(ReleaseNotFound);
  });

  it('refuses when nothing is older', () => {
    expect(() => rollbackTarget([r('1')], r('1'))).toThrow(NothingToRollBackTo);
    expect(() => rollbackTarget([r('1'), r('2')], r('1'))).toThrow(NothingToRollBackTo);
  });

  it('always lands on an existing release older than live, when it lands', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 1e6 }), { minLength: 1, maxLength: 20 }), fc.nat(), (secs, pick) => {
        const ids = secs.map((s) => ReleaseId.fromDate(new Date(Date.UTC(2026, 0, 1) + s * 1000)));
        const live = ids[pick % ids.length]!;
        try {
          const target = rollbackTarget(ids, live);
          expect(ids).toContain(target);
          expect(target < live).toBe(true);
          expect(ids.filter((id) => id > target && id < live)).toEqual([]);
        } catch (error) {
          expect(error).toBeInstanceOf(NothingToRollBackTo);
          expect(ids.every((id) => id >= live)).toBe(true);
        }
      }),
    );
  });

  it('goes back only through releases that were live, unless a preview\'s is named', () => {
    // R1 live, R2 a preview's build, R3 live: back one from R3 is R1.
    expect(rollbackTarget([r('1'), r('2'), r('3')], r('3'), undefined, [r('2')])).toBe(r('1'));
    expect(() => rollbackTarget([r('1'), r('2')], r('2'), undefined, [r('1')])).toThrow(NothingToRollBackTo);
    expect(rollbackTarget([r('1'), r('2'), r('3')], r('3'), r('2'), [r('2')])).toBe(r('2'));
  });

  it('never lands on a preview-only release unless it is named', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 1e6 }), { minLength: 1, maxLength: 20 }), fc.nat(), fc.array(fc.nat()), (secs, pick, marks) => {
        const ids = secs.map((s) => ReleaseId.fromDate(new Date(Date.UTC(2026, 0, 1) + s * 1000)));
        const live = ids[pick % ids.length]!;
        const previewOnly = marks.map((m) => ids[m % ids.length]!).filter((id) => id !== live);
        try {
          const target = rollbackTarget(ids, live, undefined, previewOnly);
          expect(previewOnly).not.toContain(target);
          expect(target < live).toBe(true);
          expect(ids.filter((id) => id > target && id < live && !previewOnly.includes(id))).toEqual([]);
        } catch (error) {
          expect(error).toBeInstanceOf(NothingToRollBackTo);
          expect(ids.every((id) => id >= live || previewOnly.includes(id))).toBe(true);
        }
      }),
    );
  });
});
