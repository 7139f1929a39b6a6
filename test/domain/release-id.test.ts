import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidReleaseId } from '../../src/domain/errors.js';
import { ReleaseId } from '../../src/domain/release-id.js';

const instant = fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('9000-12-31T23:59:59Z'), noInvalidDate: true });

describe('ReleaseId', () => {
  it('formats a date as YYYYMMDDTHHMMSS in UTC', () => {
    expect(ReleaseId.fromDate(new Date('2026-03-04T05:06:07.890Z'))).toBe('20260304T050607');
  });

  it('round-trips every second and matches the spec pattern', () => {
    fc.assert(
      fc.property(instant, (date) => {
        const id = ReleaseId.fromDate(date);
        expect(id).toMatch(/^[0-9]{8}T[0-9]{6}$/);
        expect(ReleaseId.toDate(id)?.getTime()).toBe(Math.floor(date.getTime() / 1000) * 1000);
      }),
    );
  });

  it('sorts as text in the order of the dates it names', () => {
    fc.assert(
      fc.property(instant, instant, (a, b) => {
        const [x, y] = [ReleaseId.fromDate(a), ReleaseId.fromDate(b)];
        const bySecond = Math.sign(Math.floor(a.getTime() / 1000) - Math.floor(b.getTime() / 1000));
        expect(Math.sign(x.localeCompare(y))).toBe(bySecond);
      }),
    );
  });

  it('refuses impossible dates and other shapes', () => {
    for (const bad of ['20261340T000000', '20260230T000000', '20260101T240000', '2026010T000000', '20260101 000000', '']) {
      expect(ReleaseId.isReleaseId(bad)).toBe(false);
      expect(() => ReleaseId.parse(bad)).toThrow(InvalidReleaseId);
    }
  });

  it('next() is unique and increasing whatever the clock says', () => {
    fc.assert(
      fc.property(fc.array(instant, { minLength: 1, maxLength: 30 }), (clockReadings) => {
        const ids: ReleaseId[] = [];
        for (const now of clockReadings) {
          const id = ReleaseId.next(now, ids);
          if (ids.length > 0) expect(id > ids[ids.length - 1]!).toBe(true);
          ids.push(id);
        }
      }),
    );
  });

  it('next() takes the following second when the current one is taken', () => {
    const now = new Date('2026-01-01T00:00:59Z');
    expect(ReleaseId.next(now, ['20260101T000059' as ReleaseId])).toBe('20260101T000100');
    expect(ReleaseId.next(now, [])).toBe('20260101T000059');
  });
});
