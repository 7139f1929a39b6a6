import { execFile } from 'node:child_process';
import { mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { loadAddon } from './native-addon.js';

const run = promisify(execFile);

/** syncfs(2) through coreutils: a process spawned from the service, which costs its event loop a fork each time. */
export async function syncFilesystemBySpawn(path: string): Promise<void> {
  await run('sync', ['-f', path]);
}

type Binding = { syncfs(path: string): Promise<void> };

const binding = loadAddon<Binding>('syncfs');

/** How this process flushes a release, for the start-up log. */
export const syncfsMethod: 'native' | 'sync -f' = binding ? 'native' : 'sync -f';

/**
 * Flushes the whole filesystem that holds `path` (syncfs(2)). One call makes every file
 * of a fresh release durable, for less than an fsync per file
 * (docs/performance.md). Node has no binding for it: the addon makes the call on the
 * thread pool; without the addon (`npm ci --ignore-scripts`), coreutils' `sync -f` does.
 */
export const syncFilesystem: (path: string) => Promise<void> = binding ? (path) => binding.syncfs(path) : syncFilesystemBySpawn;

/** The flush begun while a release is written, if one is: every deploy's is the same syncfs. */
let flushingEarly: Promise<void> | undefined;

/**
 * Runs `work` (writing a release under `path`) while the filesystem is flushed every
 * `everyMs`, one flush at a time for the whole process, so that the disk writes the
 * release back while the deploy is still unpacking, which on two cores waits on the CPU,
 * not the disk; the flush after it then has only the tail left (docs/performance.md,
 * "Flushed while it unpacks"). Work shorter than `everyMs` is not flushed early at all.
 * An early flush's failure is the final flush's to report.
 */
export async function flushingMeanwhile<T>(path: string, work: () => Promise<T>, everyMs: number, flush = syncFilesystem): Promise<T> {
  let done = false;
  let timer: NodeJS.Timeout | undefined;
  const next = (): void => {
    timer = setTimeout(() => {
      if (done) return;
      flushingEarly ??= flush(path)
        .catch(() => undefined)
        .finally(() => (flushingEarly = undefined));
      void flushingEarly.then(next);
    }, everyMs).unref();
  };
  next();
  try {
    return await work();
  } finally {
    done = true;
    clearTimeout(timer);
  }
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
