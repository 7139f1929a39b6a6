import { parentPort } from 'node:worker_threads';
import type { ManifestFile } from '../../domain/manifest.js';
import { CHUNK_BYTES, hashFile } from './hash-threads.js';
import { UsageError } from './usage-error.js';

/** A thread's answer to a batch: its files, or the first refusal. */
export type HashAnswer = { readonly files: ManifestFile[] } | { readonly usage: string } | { readonly failure: string };

/**
 * A hash thread's whole script: only this and what it imports, not the CLI, so a thread
 * starts in a few milliseconds (the one-file bundle carries it as a string). It answers
 * each batch of paths with their sizes and digests; the CLI's refusals (a link, a pipe)
 * stay refusals on the other side.
 */
const port = parentPort;
if (port) {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  port.on('message', ({ root, paths }: { root: string; paths: string[] }) => {
    let answer: HashAnswer;
    try {
      answer = { files: paths.map((path) => hashFile(root, path, buffer)) };
    } catch (error) {
      answer = error instanceof UsageError ? { usage: error.message } : { failure: (error as Error).message };
    }
    port.postMessage(answer);
  });
}
