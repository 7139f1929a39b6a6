import { InvalidReleaseId } from './errors.js';

/** `YYYYMMDDTHHMMSS` in UTC: sorts as text in time order, which retention relies on. */
export type ReleaseId = string & { readonly __brand: 'ReleaseId' };

const RELEASE_ID_PATTERN = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})$/;

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

export const ReleaseId = {
  isReleaseId(value: string): value is ReleaseId {
    return ReleaseId.toDate(value) !== undefined;
  },

  parse(value: string): ReleaseId {
    if (!ReleaseId.isReleaseId(value)) throw new InvalidReleaseId(value);
    return value;
  },

  fromDate(date: Date): ReleaseId {
    const year = date.getUTCFullYear();
    if (year < 0 || year > 9999) throw new InvalidReleaseId(date.toISOString());
    return (`${pad(year, 4)}${pad(date.getUTCMonth() + 1)}${pad(date.getUTCDate())}` +
      `T${pad(date.getUTCHours())}${pad(date.getUTCMinutes())}${pad(date.getUTCSeconds())}`) as ReleaseId;
  },

  /** The instant an id names, or undefined when the text is not a real UTC second. */
  toDate(value: string): Date | undefined {
    const m = RELEASE_ID_PATTERN.exec(value);
    if (!m) return undefined;
    const [year, month, day, hour, minute, second] = m.slice(1).map(Number) as [number, number, number, number, number, number];
    const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
    date.setUTCFullYear(year); // Date.UTC maps years 0-99 to 1900-1999
    return ReleaseId.fromDate(date) === value ? date : undefined;
  },

  /**
   * The id for a deploy at `now`: the current UTC second, or one second after the
   * newest existing release when that is not earlier, so ids stay unique and increasing
   * even for several deploys within one second or a clock that stepped back.
   */
  next(now: Date, existing: readonly ReleaseId[]): ReleaseId {
    const candidate = ReleaseId.fromDate(now);
    const newest = existing.reduce<ReleaseId | undefined>((max, id) => (max === undefined || id > max ? id : max), undefined);
    if (newest === undefined || candidate > newest) return candidate;
    const after = ReleaseId.toDate(newest);
    if (!after) throw new InvalidReleaseId(newest);
    return ReleaseId.fromDate(new Date(after.getTime() + 1000));
  },
};
