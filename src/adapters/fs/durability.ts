import { execFile } from 'node:child_process';
import { mkdir, open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** syncfs(2) through coreutils: a process spawned from the service, ~5 ms of its event loop each time. */
export async function syncFilesystemBySpawn(path: string): Promise<void> {
  await run('sync', ['-f', path]);
}

type Binding = { syncfs(path: string): Promise<void> };

/** The addon `npm ci` builds (binding.gyp, native/syncfs.c); undefined if it was not built. */
function loadBinding(): Binding | undefined {
  try {
    // src/adapters/fs and dist/adapters/fs are both three levels below the project root.
    return createRequire(import.meta.url)('../../../build/Release/syncfs.node') as Binding;
  } catch {
    return undefined;
  }
}

const binding = loadBinding();

/** How this process flushes a release, for the start-up log. */
export const syncfsMethod: 'native' | 'sync -f' = binding ? 'native' : 'sync -f';

/**
 * Flushes the whole filesystem that holds `path` (syncfs(2)). One call makes every file
 * of a fresh release durable; measured cheaper than an fsync per file
 * (docs/performance.md). Node has no binding for it: the addon makes the call on the
 * thread pool; without the addon (`npm ci --ignore-scripts`), coreutils' `sync -f` does.
 */
export const syncFilesystem: (path: string) => Promise<void> = binding ? (path) => binding.syncfs(path) : syncFilesystemBySpawn;

/** Makes a directory's entries (a rename, a new link) durable. */
export async function fsyncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** mkdir -p, then fsync each parent that gained an entry, so the new path survives a crash. */
export async function mkdirDurable(path: string, mode = 0o755): Promise<void> {
  const first = await mkdir(path, { recursive: true, mode });
  if (first === undefined) return;
  let dir = path;
  const parents: string[] = [];
  while (dir.length >= first.length) {
    parents.push(dirname(dir));
    dir = dirname(dir);
  }
  for (const parent of parents) await fsyncDirectory(parent);
}
