// When a release's compressed siblings are done. The service makes them after its answer,
// in a process that gives way to deploys but still takes a core and the disk: a bench
// waits for them (untimed) so that neither side of a pair meets another deploy's
// compression, and a site's next deploy finds them there as it would in use.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { TUNING } from './service.mjs';

/** Watches the service's log (`onLine`); `settled` waits for the latest release of each user's project. */
export function siblingsWatch(deploysRoot) {
  const ended = new Set();
  const onLine = (line) => {
    if (!line.includes('precompress')) return;
    try {
      const { msg, user, release } = JSON.parse(line);
      if (release && /^precompress(ed|ion skipped|ion failed)/.test(msg)) ended.add(`${user}/${release}`);
    } catch {
      // Not a log line of the service's.
    }
  };
  const latest = (user, project) => {
    try {
      return readdirSync(join(deploysRoot, user, project)).filter((n) => /^\d{8}T\d{6}/.test(n)).sort().at(-1);
    } catch (e) {
      if (e.code === 'ENOENT') return undefined; // nothing deployed there yet
      throw e;
    }
  };
  const done = ([user, project]) => {
    const release = latest(user, project);
    return release === undefined || ended.has(`${user}/${release}`);
  };
  /** Resolves with the ms waited once each [user, project]'s latest release has its siblings; throws past `limitMs`. */
  const settled = async (sites, limitMs = 300_000) => {
    if (TUNING.PRECOMPRESS === 'off') return 0;
    const started = Date.now();
    while (!sites.every(done)) {
      if (Date.now() - started > limitMs) throw new Error(`the latest releases of ${sites.map((s) => s.join('/')).join(', ')} had no siblings after ${limitMs / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return Date.now() - started;
  };
  return { onLine, settled };
}
