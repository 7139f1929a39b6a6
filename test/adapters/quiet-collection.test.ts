import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/** The compiled module: worker threads need JavaScript (`npm test` builds first). */
const quietJs = fileURLToPath(new URL('../../dist/adapters/fs/threads/quiet-collection.js', import.meta.url));

type Mode = 'quiet' | 'busy' | 'none' | 'below';

/**
 * A worker that ends a job holding 300,000 objects, promoted as a 40,000-file walk's are,
 * then is sent one message and left alone: its heap in use (MiB) when it let go of them,
 * 600 ms after the message while `busy()` holds, and 600 ms after it no longer does.
 * `none` runs without collectWhenQuiet; `below` with a threshold above what it holds.
 */
const probe = (mode: Mode): string => `
  import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  if (isMainThread) {
    const worker = new Worker(new URL(import.meta.url), { workerData: ${JSON.stringify(mode)} });
    worker.on('message', (message) => {
      if (message === 'ready') worker.postMessage('the job is over');
      else { console.log(JSON.stringify(message)); void worker.terminate(); }
    });
  } else {
    const { collectWhenQuiet } = await import(${JSON.stringify(quietJs)});
    let busy = workerData === 'busy';
    const heldBytes = workerData === 'below' ? 200 * 1024 * 1024 : 16 * 1024 * 1024;
    if (workerData !== 'none') collectWhenQuiet([parentPort], () => busy, { quietMs: 200, heldBytes });
    const used = () => process.memoryUsage().heapUsed / 1024 / 1024;
    let held = Array.from({ length: 300_000 }, (_, i) => ({ i, path: 'docs/page-' + i + '.html' }));
    for (let i = 0; i < 4; i += 1) gc({ type: 'minor' });
    held = undefined;
    const ended = used();
    parentPort.on('message', async () => {
      await sleep(600);
      const whileBusy = used();
      busy = false;
      await sleep(600);
      parentPort.postMessage({ ended, whileBusy, after: used() });
    });
    parentPort.postMessage('ready');
  }
`;

async function heap(mode: Mode): Promise<{ ended: number; whileBusy: number; after: number }> {
  const file = fileURLToPath(new URL(`../../dist/quiet-collection-probe-${mode}.mjs`, import.meta.url));
  await writeFile(file, probe(mode));
  try {
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', file], { timeout: 30_000 });
    return JSON.parse(stdout.trim()) as { ended: number; whileBusy: number; after: number };
  } finally {
    await rm(file, { force: true });
  }
}

describe('collectWhenQuiet', () => {
  it("frees what a worker's last job left once it has been quiet, not while it is busy, and not below the threshold", async () => {
    const [quiet, busy, none, below] = await Promise.all([heap('quiet'), heap('busy'), heap('none'), heap('below')]);
    // V8 keeps the promoted garbage of an idle worker: nothing else starts a collection.
    expect(none.ended).toBeGreaterThan(20);
    expect(none.after).toBeGreaterThan(20);
    expect(quiet.whileBusy).toBeLessThan(8);
    expect(busy.whileBusy).toBeGreaterThan(20);
    expect(busy.after).toBeLessThan(8);
    expect(below.after).toBeGreaterThan(20);
  });
});
