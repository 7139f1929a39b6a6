/**
 * Unpacks archives off the main thread: inflates, parses and checks every entry against
 * the archive policy here, and hands the directories and files to create to the writer
 * thread (writer-thread.ts), which makes them with synchronous calls, one syscall each,
 * with no thread-pool round trip per entry (node-tar's own extractor makes several).
 * One unpack thread serves every deploy at once, each its own job (ArchiveJob, Assembly):
 * a second deploy costs its buffers, not another two isolates. docs/performance.md has the figures.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PackedManifest } from '../../../domain/packed-manifest.js';
import type { FromUnpacker, FromWriter, ThreadData, ToUnpacker, ToWriter } from '../threads/fs-protocol.js';
import { lowerThisThreadsPriority } from '../threads/thread-priority.js';
import { ArchiveJob } from './archive-job.js';
import { Assembly } from './assembly.js';
import type { JobChannels } from './writer-job.js';

if (!parentPort) throw new Error('the unpack thread must run as a worker thread');
const main = parentPort;
lowerThisThreadsPriority();
const toMain = (message: FromUnpacker, transfer?: ArrayBuffer[]): void => main.postMessage(message, transfer);
const writer = (workerData as ThreadData).peer;
const toWriter = (message: ToWriter, transfer?: ArrayBuffer[]): void => writer.postMessage(message, transfer);
const channels: JobChannels = { toMain, toWriter };

const jobs = new Map<number, ArchiveJob | Assembly>();

writer.on('message', (message: FromWriter) => {
  const job = jobs.get(message.job);
  if (!job) return;
  job.fromWriter(message);
  if (job.answered) jobs.delete(message.job);
});
main.on('message', (message: ToUnpacker) => {
  if (message.type === 'begin') {
    jobs.set(message.job, new ArchiveJob(channels, message.job, message.dir, message.objects, message.limits, message.chmod, message.expect && PackedManifest.from(message.expect)));
    return;
  }
  if (message.type === 'digest') {
    // A throw here would stop the thread, and every deploy it has in hand with it.
    try {
      toMain({ type: 'digest', job: message.job, digest: PackedManifest.from(message.manifest).canonicalDigest() });
    } catch (error) {
      toMain({ type: 'failed', job: message.job, kind: 'io', message: (error as Error).message });
    }
    return;
  }
  if (message.type === 'assemble') {
    jobs.set(message.job, new Assembly(channels, message.job, message.dir, message.objects, message.chmod, PackedManifest.from(message.manifest), message.part, message.uploadsOnly));
    return;
  }
  const job = jobs.get(message.job);
  if (!job) {
    // A job already answered still owes the sender its buffer back.
    if (message.type === 'chunk') toMain({ type: 'ack', job: message.job, data: message.data }, [message.data.buffer as ArrayBuffer]);
    return;
  }
  if (message.type === 'chunk' && job instanceof ArchiveJob) job.write(message.data);
  else if (message.type === 'end' && job instanceof ArchiveJob) job.end();
  else if (message.type === 'abort') job.fail('aborted', 'deploy aborted');
});
