import { describe, expect, it } from 'vitest';
import { BATCH_BYTES, BATCH_PATH_OPS, DIGEST_BYTES, OP_LINK, OP_PUT, OpBatcher } from '../../src/adapters/fs/threads/fs-ops.js';

/** The LINK and PUT operations of shipped batches, decoded: [op, path, bytes of a PUT]. */
function decode(batch: Uint8Array): [number, string, number][] {
  const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
  const ops: [number, string, number][] = [];
  for (let at = 0; at < batch.length; ) {
    const op = batch[at]!;
    const length = view.getUint16(at + 1);
    const path = Buffer.from(batch.subarray(at + 3, at + 3 + length)).toString('utf8');
    at += 3 + length + DIGEST_BYTES;
    if (op === OP_PUT) {
      const size = view.getUint32(at);
      ops.push([op, path, size]);
      at += 4 + size;
    } else {
      expect(op).toBe(OP_LINK);
      ops.push([op, path, 0]);
    }
  }
  return ops;
}

function batcher(): { ops: OpBatcher; shipped: Uint8Array[] } {
  const shipped: Uint8Array[] = [];
  const ops = new OpBatcher(() => new Uint8Array(BATCH_BYTES), (batch) => shipped.push(batch));
  return { ops, shipped };
}

describe('OpBatcher: batches bounded by bytes and by system calls', () => {
  const digest = new Uint8Array(DIGEST_BYTES).fill(7);

  it(`ships a batch of links at ${BATCH_PATH_OPS} operations, long before its bytes are full, and loses none`, () => {
    const { ops, shipped } = batcher();
    const paths = Array.from({ length: 3000 }, (_, i) => `docs/section-${i % 40}/page-${i}.html`);
    for (const path of paths) ops.link(path, digest);
    ops.flush();
    expect(shipped.map((batch) => decode(batch).length)).toEqual([BATCH_PATH_OPS, BATCH_PATH_OPS, 3000 - 2 * BATCH_PATH_OPS]);
    expect(shipped.every((batch) => batch.length < BATCH_BYTES / 2)).toBe(true);
    expect(shipped.flatMap((batch) => decode(batch).map(([, path]) => path))).toEqual(paths);
  });

  it('ships at the byte bound first when the operations are large, and keeps a small file whole in one batch', () => {
    const { ops, shipped } = batcher();
    const body = new Uint8Array(100_000).fill(1);
    for (let i = 0; i < 10; i += 1) ops.put(`big-${i}.bin`, digest, body);
    for (let i = 0; i < 2000; i += 1) ops.link(`${'d'.repeat(900)}/${i}`, digest);
    ops.flush();
    const decoded = shipped.map(decode);
    expect(shipped.every((batch) => batch.length <= BATCH_BYTES)).toBe(true);
    expect(decoded.flat().filter(([op]) => op === OP_PUT).map(([, , size]) => size)).toEqual(Array(10).fill(100_000));
    expect(decoded.flat()).toHaveLength(2010);
    // 900-byte paths: about 270 to a batch, far fewer than the operation bound.
    expect(Math.max(...decoded.map((batch) => batch.length))).toBeLessThan(300);
  });

  it('puts a whole small file into the next batch when the bound falls on it, its bytes with its path', () => {
    const { ops, shipped } = batcher();
    for (let i = 0; i < BATCH_PATH_OPS - 1; i += 1) ops.link(`l${i}`, digest);
    ops.put('small.html', digest, new Uint8Array(500).fill(2));
    ops.put('next.html', digest, new Uint8Array(10).fill(3));
    ops.flush();
    const decoded = shipped.map(decode);
    expect(decoded.map((batch) => batch.length)).toEqual([BATCH_PATH_OPS, 1]);
    expect(decoded[0]!.at(-1)).toEqual([OP_PUT, 'small.html', 500]);
    expect(decoded[1]).toEqual([[OP_PUT, 'next.html', 10]]);
  });
});
