import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { removeTree } from '../../src/adapters/fs/tree-remover.js';
import { WorkerPool } from '../../src/adapters/fs/worker-pool.js';

describe('WorkerPool (real worker threads)', () => {
  const pool = new WorkerPool();
  afterAll(async () => {
    await pool.close();
  });

  it('does not hand out an idle worker that has died', async () => {
    const root = await mkdtemp(join(tmpdir(), 'sitedrop-pool-'));
    try {
      const worker = pool.acquire();
      pool.release(worker, true);
      await worker.terminate();

      // Handed the dead worker, this would wait for an answer that never comes.
      await mkdir(join(root, 'tree', 'deep'), { recursive: true });
      await writeFile(join(root, 'tree', 'deep', 'file'), 'x');
      let timer: NodeJS.Timeout | undefined;
      const removed = removeTree(pool, join(root, 'tree'));
      const outcome = await Promise.race([removed.then(() => 'removed'), new Promise((resolve) => (timer = setTimeout(() => resolve('no answer'), 5000)))]);
      clearTimeout(timer);
      expect(outcome).toBe('removed');
      await expect(stat(join(root, 'tree'))).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
