import { readFileSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { syncFilesystem } from '../fs/layout/durability.js';
import { lowerThisThreadsPriority } from '../fs/threads/thread-priority.js';
import type { SiblingAnswer, SiblingJob } from './precompress-protocol.js';
import { ReleaseSiblings } from './release-siblings.js';

/**
 * The precompression thread: releases one at a time, at the lowest priority (nice 19),
 * below even the deploys' threads (nice 10). Compressing is the one piece of background
 * work here that is pure CPU; at nice 19 it takes only the cycles deploys and requests leave.
 */
lowerThisThreadsPriority(19);

/** This thread's CPU time (user and system), from /proc; 0 where there is none. */
function threadCpuMs(): number {
  try {
    // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th, in ticks of 10 ms.
    const fields = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

parentPort!.on('message', (job: SiblingJob) => {
  const cpu = threadCpuMs();
  new ReleaseSiblings(job.release, job.store, job.scratch, job.settings, syncFilesystem)
    .run()
    .then(
      (tally): SiblingAnswer => ({ id: job.id, tally, cpuMs: threadCpuMs() - cpu }),
      (error: unknown): SiblingAnswer => ({ id: job.id, error: (error as Error).message }),
    )
    .then((answer) => parentPort!.postMessage(answer));
});
