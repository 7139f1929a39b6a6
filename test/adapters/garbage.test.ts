import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/** The compiled module: worker threads and plain node processes need JavaScript (`npm test` builds first). */
const garbageJs = fileURLToPath(new URL('../../dist/adapters/fs/threads/garbage.js', import.meta.url));

/**
 * Holds 24 MiB of buffers across enough minor collections that V8 promotes them, as the
 * inflate queue's buffers are during a 40,000-file archive, then lets go of them and
 * reports how much of them is still allocated after one YoungGarbage step.
 */
const probe = (inWorker: boolean): string => `
  import { Worker, isMainThread, parentPort } from 'node:worker_threads';
  const run = async () => {
    const { YoungGarbage } = await import(${JSON.stringify(garbageJs)});
    let held = Array.from({ length: 24 }, () => new Uint8Array(1024 * 1024));
    for (let i = 0; i < 4; i += 1) gc({ type: 'minor' });
    held = undefined;
    new YoungGarbage(1).dropped(1);
    // V8 finishes sweeping freed buffers, and updates its count of them, in a later task.
    await new Promise((resolve) => setTimeout(resolve, 100));
    return process.memoryUsage().arrayBuffers;
  };
  if (!${inWorker}) console.log(await run());
  else if (isMainThread) {
    const worker = new Worker(new URL(import.meta.url));
    worker.once('message', (bytes) => { console.log(bytes); worker.terminate(); });
  } else parentPort.postMessage(await run());
`;

async function heldAfterStep(inWorker: boolean): Promise<number> {
  const file = fileURLToPath(new URL(`../../dist/garbage-probe-${inWorker ? 'worker' : 'main'}.mjs`, import.meta.url));
  const { writeFile, rm } = await import('node:fs/promises');
  await writeFile(file, probe(inWorker));
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', file], { timeout: 30_000 });
    return Number(stdout.trim()) / 1024 / 1024;
  } finally {
    await rm(file, { force: true });
  }
}

describe('YoungGarbage', () => {
  it('frees promoted buffers a worker has let go of, with a full collection', async () => {
    expect(await heldAfterStep(true)).toBeLessThan(4);
  });

  it('never makes a full collection on the main thread, where it would hold every request', async () => {
    // The buffers are promoted: only a full collection would free them.
    expect(await heldAfterStep(false)).toBeGreaterThan(20);
  });
});
