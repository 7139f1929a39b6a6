import type { Username } from '../../src/domain/username.js';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArchiveRejected } from '../../src/domain/errors.js';
import { pax, tar, type RawEntry } from '../support/tar-builder.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { snapshot } from '../support/tree.js';

/**
 * The archive policy's promise beyond safety: whatever sitedrop publishes is what GNU tar
 * extracts from the same bytes (names, kinds, contents), or the archive is refused.
 * Archives are generated from the header features where tar readers disagree: pax path
 * and size records, ustar prefixes, GNU long names, global headers, zero blocks, sparse
 * records, old-style directory entries, records hidden in values.
 */
const name = fc.constantFrom('a', 'b', 'c', 'index', 'GNUSparseFile.7');
const path = fc.array(name, { minLength: 1, maxLength: 3 }).map((parts) => `${parts.join('/')}.html`);
const body = fc.string({ maxLength: 30 });

const piece: fc.Arbitrary<RawEntry[]> = fc.oneof(
  { arbitrary: fc.tuple(path, body).map(([p, b]): RawEntry[] => [{ path: p, body: b }]), weight: 8 },
  fc.array(name, { minLength: 1, maxLength: 2 }).map((parts) => [{ path: `${parts.join('/')}/`, type: '5' }]),
  fc.array(name, { minLength: 1, maxLength: 2 }).map((parts) => [{ path: `${parts.join('/')}/`, type: '\u0000' }]),
  fc.tuple(path, path, body).map(([real, shown, b]) => [pax({ path: real }), { path: shown, body: b }]),
  fc.tuple(path, body).map(([p, b]) => [pax({ size: String(Buffer.byteLength(b)) }), { path: p, body: b, size: 0 }]),
  fc.tuple(name, path, body).map(([prefix, p, b]) => [{ path: p, body: b, prefix }]),
  fc.tuple(name, path, path, body).map(([prefix, real, shown, b]) => [pax({ path: real }), { path: shown, body: b, prefix }]),
  fc.tuple(path, path, body).map(([real, shown, b]) => [{ path: '././@LongLink', type: 'L', body: `${real}\0` }, { path: shown, body: b }]),
  fc.tuple(path, body).map(([p, b]) => [{ ...pax({ comment: 'hello' }), type: 'g' }, { path: p, body: b }]),
  fc.tuple(path, path, body).map(([g, p, b]) => [{ ...pax({ path: g }), type: 'g' }, { path: p, body: b }]),
  fc.tuple(path, body).map(([p, b]) => [pax({ 'GNU.sparse.major': '1', 'GNU.sparse.minor': '0', 'GNU.sparse.name': p, 'GNU.sparse.realsize': '4' }), { path: `GNUSparseFile.7/${p}`, body: b }]),
  fc.tuple(path, body).map(([p, b]) => [{ path: 'PaxHeader', type: 'x', body: `${String(16 + Buffer.byteLength(p))} comment=x\n${String(6 + Buffer.byteLength(p) + 3)} path=${p}\n` }, { path: 'innocent.html', body: b }]),
);

function archiveOf(pieces: RawEntry[][], zeroBlockAt: number | undefined): Buffer {
  const parts = pieces.map((p) => tar(p, { endMarker: false }));
  if (zeroBlockAt !== undefined) parts.splice(zeroBlockAt % (parts.length + 1), 0, Buffer.alloc(512));
  return Buffer.concat([...parts, Buffer.alloc(1024)]);
}

describe('sitedrop publishes what GNU tar extracts, or refuses', () => {
  let fsx: RealDeploys;
  beforeAll(async () => {
    fsx = await realDeploys('sitedrop-agree-');
  });
  afterAll(() => fsx.close());

  it('on archives built from the features tar readers disagree on', async () => {
    let published = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(piece, { minLength: 1, maxLength: 5 }), fc.option(fc.nat(), { nil: undefined }), async (pieces, zeroBlockAt) => {
        const archive = archiveOf(pieces, zeroBlockAt);
        async function* upload() {
          yield gzipSync(archive);
        }
        let staged;
        try {
          staged = await fsx.staging.stage('alice' as Username, upload(), { maxFiles: 1000, maxBytes: 1_000_000 }, new AbortController().signal);
        } catch (error) {
          expect(error).toBeInstanceOf(ArchiveRejected);
          return;
        }
        published += 1;
        const byHand = await mkdtemp(join(tmpdir(), 'sitedrop-agree-tar-'));
        try {
          execFileSync('tar', ['-xf', '-', '-C', byHand, '--no-same-owner', '--no-same-permissions'], { input: archive, stdio: ['pipe', 'ignore', 'pipe'] });
          const kinds = (tree: Record<string, string>) => Object.fromEntries(Object.entries(tree).map(([p, v]) => [p, v.replace(/^(file|dir) \d+/, '$1')]));
          expect(kinds(await snapshot(staged.handle))).toEqual(kinds(await snapshot(byHand)));
        } finally {
          await rm(byHand, { recursive: true, force: true });
          await fsx.staging.discard(staged);
        }
      }),
      { numRuns: 200 },
    );
    // The generator must publish some archives too, or the comparison proves nothing
    // (about 45 of 200 are published; most runs hold a feature sitedrop refuses).
    expect(published).toBeGreaterThan(15);
  });
});
