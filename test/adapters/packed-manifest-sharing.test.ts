import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { manifestOf, type ManifestFile } from '../../src/domain/manifest.js';
import { applyPackedChanges } from '../../src/domain/packed-changes.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { sha256 } from '../support/sha256.js';

const LIMITS = { maxFiles: 1000, maxBytes: 1e12 };
const files = (n: number, tag: string): ManifestFile[] => Array.from({ length: n }, (_, i) => ({ path: `docs/page-${i}.html`, size: 100 + i, digest: sha256(`${tag} ${i}`) }));

/**
 * Posts `bytes` to a real worker thread, which overwrites its first byte and answers:
 * what the posting side then reads there tells whether the thread got the same memory or
 * a copy of it.
 */
async function sharedWithAThread(bytes: Uint8Array): Promise<boolean> {
  const before = bytes[0];
  const worker = new Worker("require('node:worker_threads').parentPort.once('message', (b) => { b[0] = b[0] ^ 0xff; require('node:worker_threads').parentPort.postMessage('done'); });", { eval: true });
  try {
    await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.postMessage(bytes);
    });
    return bytes[0] !== before;
  } finally {
    await worker.terminate();
  }
}

describe("a packed manifest's bytes, posted to the file-system threads", () => {
  it('are shared, not copied, when packed here: packed, changed from a base, or read back from a view', async () => {
    const packed = PackedManifest.pack(manifestOf(files(50, 'a')));
    // pg hands small values out of a larger buffer: such a view is copied, into shared memory.
    const fromView = PackedManifest.from(Buffer.concat([Buffer.alloc(16), packed.packed]).subarray(16));
    const changed = applyPackedChanges(fromView, { files: files(3, 'b'), removed: ['docs/page-7.html'] }, LIMITS);
    const received = PackedManifest.from(changed.packed);
    for (const manifest of [packed, fromView, changed, received]) expect(await sharedWithAThread(manifest.packed)).toBe(true);
    // Read back from bytes already shared (another thread's), it is the same memory, not a second copy.
    expect(received.packed.buffer).toBe(changed.packed.buffer);
  });

  it("are the database's own when read whole: not copied on reading, and cloned when posted", async () => {
    // better-sqlite3 hands each blob out as a whole Buffer of its own.
    const asRead = new Uint8Array(PackedManifest.pack(manifestOf(files(50, 'a'))).packed);
    const session = PackedManifest.from(asRead);
    expect(session.packed.buffer).toBe(asRead.buffer);
    expect(await sharedWithAThread(session.packed)).toBe(false);
  });
});
