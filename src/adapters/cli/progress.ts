import { count, err, megabytes } from './output.js';

// The bars are for a terminal only: a CI log never loads cli-progress (nor readline with it).
const bars = process.stderr.isTTY ? await import('cli-progress') : undefined;

/** How far a phase has got: a bar on a terminal; on anything else (a CI log) a line at each end, no escape codes. */
export interface Meter {
  update(done: number): void;
  /** Ends the bar (and gives the cursor back); off a terminal, the closing line is for a phase that `finished`. */
  stop(finished: boolean): void;
}

interface Phase {
  /** Work in all, or undefined while it is not known (an archive still being packed). */
  readonly total: number | undefined;
  /** cli-progress's format, with {bar}, {value}, {total} and the payload's fields. */
  readonly bar: string;
  readonly payload: (done: number, ms: number) => Record<string, string>;
  readonly begin: string;
  readonly end: (done: number, ms: number) => string;
}

/** Runs `work` under a meter that is stopped however the work ends. */
export async function metered<T>(meter: Meter, work: () => Promise<T>): Promise<T> {
  let finished = false;
  try {
    const result = await work();
    finished = true;
    return result;
  } finally {
    meter.stop(finished);
  }
}

const rate = (bytes: number, ms: number): string => `${megabytes((bytes / Math.max(1, ms)) * 1000)}/s`;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

function meter(phase: Phase): Meter {
  const started = Date.now();
  if (bars) {
    const bar = new bars.SingleBar({ format: phase.bar, stream: process.stderr, hideCursor: true }, undefined);
    const value = (done: number) => (phase.total === undefined ? 0 : done);
    bar.start(phase.total ?? 1, 0, phase.payload(0, 0));
    return { update: (done) => bar.update(value(done), phase.payload(done, Date.now() - started)), stop: () => bar.stop() };
  }
  err(phase.begin);
  let last = 0;
  return { update: (done) => void (last = done), stop: (finished) => finished && err(phase.end(last, Date.now() - started)) };
}

export const hashingMeter = (files: number): Meter =>
  meter({
    total: files,
    bar: 'hashing {bar} {value}/{total} files',
    payload: () => ({}),
    begin: `hashing ${count(files)} files...`,
    end: (done, ms) => `hashed ${count(done)} files in ${seconds(ms)}`,
  });

export const sendingMeter = (objects: number, bytes: number): Meter =>
  meter({
    total: bytes,
    bar: 'sending {bar} {sent} of {size} at {rate}',
    payload: (done, ms) => ({ sent: megabytes(done), size: megabytes(bytes), rate: rate(done, ms) }),
    begin: `sending ${count(objects)} files (${megabytes(bytes)})...`,
    end: (done, ms) => `sent ${megabytes(done)} in ${seconds(ms)}`,
  });

/** A whole archive, whose compressed size is known only once it is sent. */
export const uploadingMeter = (): Meter =>
  meter({
    total: undefined,
    bar: 'uploading {sent} at {rate}',
    payload: (done, ms) => ({ sent: megabytes(done), rate: ms === 0 ? '-' : rate(done, ms) }),
    begin: 'uploading...',
    end: (done, ms) => `sent ${megabytes(done)} in ${seconds(ms)}`,
  });
