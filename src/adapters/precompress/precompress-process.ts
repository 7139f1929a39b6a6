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

process.on('message', (job: SiblingJob) => {
  const cpu = threadCpuMs();
  new ReleaseSiblings(job.release, job.store, job.scratch, job.settings, syncFilesystem)
    .run()
    .then(
      (tally): SiblingAnswer => ({ id: job.id, tally, cpuMs: threadCpuMs() - cpu }),
      (error: unknown): SiblingAnswer => ({ id: job.id, error: (error as Error).message }),
    )
    .then((answer) => process.send!(answer));
});
