import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flushingMeanwhile, syncFilesystem, syncFilesystemBySpawn, syncfsMethod } from '../../src/adapters/fs/layout/durability.js';

// The strace test (test/faults/durability-order.test.ts) shows the real service calling
// syncfs on the staged release before the renames; these check the two ways of calling it.
describe('syncfs, the flush of a release', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'sitedrop-syncfs-'));
    await writeFile(join(root, 'file'), 'x');
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('is the native addon that npm ci builds, not the spawned fallback', () => {
    expect(syncfsMethod).toBe('native');
  });

  for (const [name, flush] of [['native', syncFilesystem], ['sync -f', syncFilesystemBySpawn]] as const) {
    describe(name, () => {
      it('resolves once a directory\'s filesystem is flushed', async () => {
        await expect(flush(root)).resolves.toBeUndefined();
      });

      it('rejects a missing directory, naming it', async () => {
        const missing = join(root, 'missing');
        const error = await flush(missing).then(() => undefined, (e: unknown) => e as Error & { code?: string; path?: string });
        expect(error).toBeInstanceOf(Error);
        expect(error!.message).toContain(missing);
        if (name === 'native') expect(error).toMatchObject({ code: 'ENOENT', syscall: 'open', path: missing });
      });
    });
  }

  it('native: refuses a file, which is not a directory', async () => {
    await expect(syncFilesystem(join(root, 'file'))).rejects.toMatchObject({ code: 'ENOTDIR' });
  });

  it('native: many flushes at once all settle', async () => {
    await expect(Promise.all(Array.from({ length: 16 }, () => syncFilesystem(root)))).resolves.toHaveLength(16);
  });
});

describe('flushes while a release is written (flushingMeanwhile)', () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** A flush that takes `ms`, recording how many ran at once and when each began. */
  const slowFlush = (ms: number) => {
    const seen = { began: [] as number[], atOnce: 0, mostAtOnce: 0, paths: [] as string[] };
    const flush = async (path: string): Promise<void> => {
      seen.began.push(performance.now());
      seen.paths.push(path);
      seen.atOnce += 1;
      seen.mostAtOnce = Math.max(seen.mostAtOnce, seen.atOnce);
      await sleep(ms);
      seen.atOnce -= 1;
    };
    return { flush, seen };
  };

  it("flushes the release's filesystem now and again while the work runs, one flush at a time, none once it is done", async () => {
    const { flush, seen } = slowFlush(30);
    const result = await flushingMeanwhile('/release', async () => (await sleep(400), 'written'), 50, flush);
    const ended = performance.now();
    expect(result).toBe('written');
    expect(seen.began.length).toBeGreaterThanOrEqual(2);
    expect(seen.mostAtOnce).toBe(1);
    expect(seen.paths.every((path) => path === '/release')).toBe(true);
    await sleep(200);
    expect(seen.began.filter((at) => at > ended)).toEqual([]);
  });

  it('flushes nothing early for work shorter than its period', async () => {
    const { flush, seen } = slowFlush(1);
    await flushingMeanwhile('/release', () => sleep(10), 200, flush);
    await sleep(300);
    expect(seen.began).toEqual([]);
  });

  it('two releases written at once share one flush at a time: each flushes the whole filesystem', async () => {
    const { flush, seen } = slowFlush(80);
    await Promise.all([flushingMeanwhile('/a', () => sleep(400), 20, flush), flushingMeanwhile('/b', () => sleep(400), 20, flush)]);
    expect(seen.began.length).toBeGreaterThanOrEqual(2);
    expect(seen.mostAtOnce).toBe(1);
  });

  it("an early flush's failure is not the work's: the flush after it reports", async () => {
    let failed = 0;
    const failing = async (): Promise<void> => {
      failed += 1;
      throw new Error('EIO');
    };
    await expect(flushingMeanwhile('/release', async () => (await sleep(200), 7), 30, failing)).resolves.toBe(7);
    expect(failed).toBeGreaterThanOrEqual(1);
  });

  it("the work's own failure is what it rejects with, and stops the flushes", async () => {
    const { flush, seen } = slowFlush(5);
    await expect(flushingMeanwhile('/release', async () => (await sleep(120), Promise.reject(new Error('refused'))), 30, flush)).rejects.toThrow('refused');
    const count = seen.began.length;
    await sleep(150);
    expect(seen.began.length).toBe(count);
  });

  it('with the real syncfs, on a directory being written', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sitedrop-early-'));
    try {
      const files = await flushingMeanwhile(dir, async () => {
        for (let i = 0; i < 20; i += 1) {
          await writeFile(join(dir, `f${i}`), 'x'.repeat(64 * 1024));
          await sleep(10);
        }
        return 20;
      }, 50);
      expect(files).toBe(20);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
