import { existsSync } from 'node:fs';
import { syncFilesystem } from '../fs/layout/durability.js';
import { lowerThisThreadsPriority } from '../fs/threads/thread-priority.js';
import type { SiblingAnswer, SiblingJob } from './precompress-protocol.js';
import { ReleaseSiblings } from './release-siblings.js';

/**
 * The precompression process, forked by the service: releases one at a time, at the
 * lowest priority (nice 19), below even the deploys' threads (nice 10). Compressing is the
 * one piece of background work here that is pure CPU; at nice 19 it takes only the cycles
 * deploys and requests leave. It ends with the service (its IPC channel closes).
 */
lowerThisThreadsPriority(19);
process.on('disconnect', () => process.exit(0));

/** This process's CPU time (user and system). */
const threadCpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/**
 * How often, in ms of work, the pause file is looked at between files; it is looked at
 * before every flush too. A deploy that starts meanwhile shares the CPU with at most this,
 * one file's compression and one batch's links, and none of its syncfs.
 */
const CHECK_EVERY_MS = 5;
/** The longest one wait: the service removes the file within its patience (15 s); a file it could not remove holds nothing for ever. */
const LONGEST_WAIT_MS = 60_000;
const parent = process.ppid;
const nap = new Int32Array(new SharedArrayBuffer(4));

/**
 * Waits while `pauseFile` exists (the service made it: a deploy runs). The run is
 * synchronous, so it looks for the file itself between files rather than hearing a
 * message; and while it waits it watches for the service going away (its parent
 * changes), since no message could reach it, and ends.
 */
function giveWayTo(pauseFile: string): () => void {
  let checked = -Infinity;
  return (now = false) => {
    if (!now && performance.now() - checked < CHECK_EVERY_MS) return;
    const giveUp = performance.now() + LONGEST_WAIT_MS;
    while (existsSync(pauseFile) && performance.now() < giveUp) {
      if (process.ppid !== parent) process.exit(0);
      Atomics.wait(nap, 0, 0, 20);
    }
    checked = performance.now();
  };
}

process.on('message', (job: SiblingJob) => {
  const cpu = threadCpuMs();
  new ReleaseSiblings(job.release, job.store, job.scratch, job.settings, syncFilesystem, giveWayTo(job.pauseFile))
    .run()
    .then(
      (tally): SiblingAnswer => ({ id: job.id, tally, cpuMs: threadCpuMs() - cpu }),
      (error: unknown): SiblingAnswer => ({ id: job.id, error: (error as Error).message }),
    )
    .then((answer) => process.send!(answer));
});
