export const out = (line: string): void => void process.stdout.write(`${line}\n`);
export const err = (line: string): void => void process.stderr.write(`${line}\n`);
export const megabytes = (n: number): string => `${(n / 1e6).toFixed(1)} MB`;
/**
 * Counts as people read them in a log: 40,000, not 40000. Not toLocaleString: its first
 * call loads ICU's number formats, a noticeable part of a redeploy (docs/performance.md).
 */
export const count = (n: number): string => String(n).replace(/\B(?=(\d{3})+$)/g, ',');
