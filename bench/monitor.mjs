// The service watched while a benchmark loads it: its peak RSS and, from a process of its
// own, GET /api/v1/status's latencies. Shared by bench/run.mjs and bench/manifest-bombs.mjs.
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { procStatus, running } from './service.mjs';

const here = dirname(fileURLToPath(import.meta.url));

export const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

const readStatus = (pid, field) => procStatus(pid, field) * 1024;

export function resetPeak(pid) {
  try {
    // Linux 4.0+: resets VmHWM to the current RSS, so each window's own peak can be read.
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false; // then the samples alone give the peak
  }
}

/**
 * Watches the service during its deploys, and only then (not during the by-hand runs):
 * its RSS sampled every 10 ms, with the kernel's high-water mark reset at the start of
 * each window and read at its end, so a peak between two samples is not missed; and,
 * during the deploys `during` is told to poll, GET /api/v1/status polled by
 * bench/status-poller.mjs, a process of its own, as a health checker would. Not during
 * the timed ones: polling every 5 ms made them 10-50% slower (docs/performance.md),
 * which would skew the ratio to the by-hand way. One monitor per shape; `report()` gives
 * its peak and latencies.
 */
export async function startMonitor(service) {
  const child = fork(join(here, 'status-poller.mjs'), [service.url], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  running.add(child);
  await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`status poller exited (${code})`)));
  });
  let peak = 0;
  /** Each part's own peak (`during`'s `part`): which kind of deploy made the shape's. */
  const parts = {};
  let windowPeak = 0;
  let windows = 0;
  let polledWindows = 0;
  const sample = (field) => {
    try {
      windowPeak = Math.max(windowPeak, readStatus(service.pid, field));
      peak = Math.max(peak, windowPeak);
    } catch {
      // the service has died: its peak so far stands
    }
  };
  return {
    /** Runs `work` (the service's deploys) with the service watched throughout; `part` names what it is for the peaks by part. */
    async during(work, poll = false, part = poll ? 'polled' : 'timed') {
      windows += 1;
      windowPeak = 0;
      if (poll) polledWindows += 1;
      const hwm = resetPeak(service.pid);
      if (poll) child.send('start');
      const sampler = setInterval(() => sample('VmRSS'), 10);
      try {
        return await work();
      } finally {
        clearInterval(sampler);
        child.send('pause');
        sample(hwm ? 'VmHWM' : 'VmRSS');
        parts[part] = Math.max(parts[part] ?? 0, windowPeak / 1024 / 1024);
      }
    },
    report: () => new Promise((resolve, reject) => {
      child.removeAllListeners('exit');
      child.once('message', ({ latencies, failed }) => resolve({
        deploys: windows,
        polledDeploys: polledWindows,
        peakRssMiB: peak / 1024 / 1024,
        peaksByPartMiB: parts,
        status: latencies.length === 0
          ? { samples: 0, failed }
          : { samples: latencies.length, failed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) },
      }));
      child.once('exit', (code) => code !== 0 && reject(new Error(`status poller exited (${code})`)));
      child.send('stop');
    }),
  };
}

