import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import type { Digest, ManifestFile } from '../../domain/manifest.js';
import { readFileSyncInto } from './file-chunks.js';
import type { HashAnswer } from './hash-thread.js';
import { UsageError } from './usage-error.js';


/** A file is read in pieces of this: one read for nearly every page of a site. */
export const CHUNK_BYTES = 1024 * 1024;
/** Paths a thread is given at a time: enough to make a message's cost nothing, few enough to share the work out evenly. */
const BATCH = 256;

/**
 * Size and SHA-256 of `root/path`, from the bytes actually read: a file that changes
 * while it is read is described as read. `buffer` is the caller's, reused file to file.
 */
export function hashFile(root: string, path: string, buffer: Buffer): ManifestFile {
  const hash = createHash('sha256');
  const size = readFileSyncInto(root, path, buffer, (chunk) => hash.update(chunk));
  return { path, size, digest: hash.digest('hex') as Digest };
}

/** The hash thread's script, put in by scripts/bundle-cli.mjs: only the one-file bundle has it. */
declare const SITEDROP_HASH_THREAD: string | undefined;

/**
 * A thread running hash-thread.ts: inside the one-file bundle, from the code it carries;
 * elsewhere, the compiled file beside this one. Under vitest this is the .ts source, so
 * the compiled one that `npm test` builds first is used.
 */
function startThread(Thread: typeof Worker): Worker {
  if (typeof SITEDROP_HASH_THREAD === 'string') return new Thread(SITEDROP_HASH_THREAD, { eval: true });
  const here = fileURLToPath(import.meta.url);
  if (!here.endsWith('.ts')) return new Thread(fileURLToPath(new URL('hash-thread.js', import.meta.url)));
  const built = here.replace(/([\\/])src([\\/])adapters([\\/])cli([\\/])hash-threads\.ts$/, '$1dist$2adapters$3cli$4hash-thread.js');
  if (existsSync(built)) return new Thread(built);
  throw new Error(`hash-thread.js not found at ${built}: run npm run build`);
}

/** Threads to hash on: every core but none beyond four, where a disk rather than a core is what waits. */
export function hashThreadCount(): number {
  return Math.max(1, Math.min(4, availableParallelism()));
}

/**
 * Every file hashed on `threads` worker threads at once, each taking the next batch of
 * paths as it finishes one; the results keep `paths`' order. The first refusal ends all
 * the threads and rejects.
 */
export async function hashOnThreads(root: string, paths: readonly string[], threads: number, onHashed: (file: ManifestFile) => void): Promise<ManifestFile[]> {
  // Loaded here, not with this module: a site below THREADED_FROM never starts a thread.
  const { Worker } = await import('node:worker_threads');
  const results = new Array<ManifestFile>(paths.length);
  const workers = Array.from({ length: Math.min(threads, Math.ceil(paths.length / BATCH)) }, () => startThread(Worker));
  let next = 0;
  const drive = (worker: Worker): Promise<void> =>
    new Promise((resolve, reject) => {
      const send = (): void => {
        if (next >= paths.length) return resolve();
        const start = next;
        next += BATCH;
        worker.once('message', (answer: HashAnswer) => {
          if ('usage' in answer) return reject(new UsageError(answer.usage));
          if ('failure' in answer) return reject(new Error(answer.failure));
          answer.files.forEach((file, i) => {
            results[start + i] = file;
            onHashed(file);
          });
          send();
        });
        worker.postMessage({ root, paths: paths.slice(start, start + BATCH) });
      };
      worker.once('error', reject);
      // A thread that ends before its last answer would leave this waiting for ever.
      worker.once('exit', (code) => reject(new Error(`a hashing thread stopped (exit code ${code})`)));
      send();
    });
  try {
    await Promise.all(workers.map(drive));
    return results;
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}
