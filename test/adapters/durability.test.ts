import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncFilesystem, syncFilesystemBySpawn, syncfsMethod } from '../../src/adapters/fs/layout/durability.js';

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
