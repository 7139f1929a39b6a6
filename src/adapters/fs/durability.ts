import { execFile } from 'node:child_process';
import { mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Flushes the whole filesystem that holds `path` (syncfs(2), through coreutils'
 * `sync -f`: Node has no binding). One call makes every file of a fresh release
 * durable; measured cheaper than an fsync per file (docs/performance.md).
 */
export async function syncFilesystem(path: string): Promise<void> {
  await run('sync', ['-f', path]);
}

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
