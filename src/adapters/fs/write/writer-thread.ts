/**
 * Creates archives' directories and files from batches of operations (fs-ops.ts), on a
 * thread of its own, while the unpack thread parses the next entries: per entry, the
 * parsing and the system calls each cost about as much, so doing them side by side
 * roughly halves the time of a site of many small files (docs/performance.md). One
 * writer serves every deploy (each job has its own root and open file) and deletes the
 * trees the main thread sends it, a few entries at a time between batches.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import type { FromWriter, ThreadData, ToWriter, WriterTaskRequest } from '../threads/fs-protocol.js';
import { collectWhenQuiet } from '../threads/quiet-collection.js';
import { lowerThisThreadsPriority } from '../threads/thread-priority.js';
import { WriterTaskQueue } from './task-queue.js';
import { Target } from './write-target.js';

if (!parentPort) throw new Error('the writer must run as a worker thread');
const main = parentPort;
lowerThisThreadsPriority();
const unpacker = (workerData as ThreadData).peer;
const toUnpacker = (message: FromWriter, transfer?: ArrayBuffer[]): void => unpacker.postMessage(message, transfer);

const targets = new Map<number, Target>();
const tasks = new WriterTaskQueue((answer) => main.postMessage(answer));
/** Heap in use past which the writer, once quiet, collects (see the end of this file). */
const WRITER_HELD_BYTES = 16 * 1024 * 1024;

unpacker.on('message', (message: ToWriter) => {
  // A client waits on a probe while its release is written here: taken now, not after the batches in flight.
  for (let task = receiveMessageOnPort(main); task; task = receiveMessageOnPort(main)) tasks.add(task.message as WriterTaskRequest);
  tasks.stepProbe();
  if (message.type === 'begin') {
    targets.set(message.job, new Target(message.root, message.objects, message.chmod));
    return;
  }
  const target = targets.get(message.job);
  if (message.type === 'flush') {
    targets.delete(message.job);
    try {
      target?.end();
    } catch (error) {
      if (!target!.failed) toUnpacker({ type: 'failed', job: message.job, message: (error as Error).message });
    }
    const adopt = target?.newObjects();
    toUnpacker({ type: 'flushed', job: message.job, missing: [...(target?.missing ?? [])], ...(adopt && { adopt }) }, adopt && [adopt.buffer as ArrayBuffer]);
    return;
  }
  if (target && !target.failed) {
    try {
      target.apply(message.data);
    } catch (error) {
      target.failed = true;
      try {
        target.end();
      } catch {
        // The first failure is the one worth reporting.
      }
      toUnpacker({ type: 'failed', job: message.job, message: (error as Error).message });
    }
  }
  toUnpacker({ type: 'ack', job: message.job, data: message.data }, [message.data.buffer as ArrayBuffer]);
});

main.on('message', (request: WriterTaskRequest) => tasks.add(request));
// An archive's batches leave the writer's heap below the threshold; a walk of a large
// release or its assembly from a base leaves garbage that the next deploy's peak stacks on.
collectWhenQuiet([main, unpacker], () => tasks.busy || targets.size > 0, { heldBytes: WRITER_HELD_BYTES });
