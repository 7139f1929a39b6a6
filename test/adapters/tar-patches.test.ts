import { createRequire } from 'node:module';
import { Parser, type ReadEntry } from 'tar';
import { describe, expect, it } from 'vitest';
import { globalPaxFacts, headerName, paxFacts } from '../../src/adapters/fs/unpack/tar-patches.js';
import { ArchiveRejected } from '../../src/domain/errors.js';
import { file, pax, tar, type RawEntry } from '../support/tar-builder.js';

/** Each entry node-tar hands over, with what the patches recorded of it. */
function parse(entries: readonly RawEntry[]): { path: string; headerPath: string | undefined; headerName: string; pax: unknown; globalPax: unknown }[] {
  const seen: ReturnType<typeof parse> = [];
  const parser = new Parser({ strict: false, zstd: false, brotli: false });
  parser.on('entry', (entry: ReadEntry) => {
    seen.push({ path: entry.path, headerPath: entry.header.path, headerName: headerName(entry), pax: paxFacts(entry), globalPax: globalPaxFacts(entry) });
    entry.resume();
  });
  parser.end(tar(entries));
  return seen;
}

/**
 * What the two prototype patches (src/adapters/fs/unpack/tar-patches.ts) rely on in node-tar:
 * the parser decodes every header through Header.prototype.decode and applies a pax
 * `path` record to the header itself, and it reads every pax header through the static
 * Pax.parse(text, previous, global), passing the previous one on. If an installed tar
 * changes any of it, these fail: re-check the patches before moving package.json's pin.
 */
describe('node-tar as the archive patches rely on it', () => {
  it('is the version package.json pins', () => {
    const require = createRequire(import.meta.url);
    const pinned = (require('../../package.json') as { dependencies: Record<string, string> }).dependencies.tar;
    expect((require('tar/package.json') as { version: string }).version).toBe(pinned);
  });

  it("keeps the header block's own name, which a pax path record replaces on the header itself", () => {
    const [entry] = parse([pax({ path: 'from-pax.html' }), file('in-block.html', 'x')]);
    expect(entry).toMatchObject({ path: 'from-pax.html', headerPath: 'from-pax.html', headerName: 'in-block.html' });
  });

  it("joins a ustar prefix to the block's name, as tar reads it", () => {
    const [entry] = parse([{ path: 'name.html', prefix: 'the/prefix', body: 'x' }]);
    expect(entry).toMatchObject({ path: 'the/prefix/name.html', headerName: 'the/prefix/name.html' });
  });

  it('records every key of a pax header, those node-tar ignores included, and of two in a row', () => {
    const [entry] = parse([pax({ 'GNU.sparse.major': '1', comment: 'hi' }), pax({ mtime: '1' }), file('a.html', 'x')]);
    expect(entry!.pax).toEqual(['GNU.sparse.major', 'comment', 'mtime']);
    expect(entry!.globalPax).toBeUndefined();
  });

  it('records the keys of a global header on every later entry, and not the next entry’s own', () => {
    const seen = parse([{ ...pax({ comment: 'all' }, 'GlobalHead'), type: 'g' }, file('a.html', 'x'), file('b.html', 'y')]);
    expect(seen.map((e) => [e.globalPax, e.pax])).toEqual([
      [['comment'], undefined],
      [['comment'], undefined],
    ]);
  });

  it('records why a pax header cannot be read by its lengths, for the entry it applies to', () => {
    const hidden = { path: 'PaxHeader', type: 'x', body: '41 comment=x\n28 path=sitedrop-pwned.html\n' };
    const [entry] = parse([hidden, file('a.html', 'x')]);
    expect(entry!.pax).toBeInstanceOf(ArchiveRejected);
    expect((entry!.pax as ArchiveRejected).reason).toBe("a pax record's value holds a newline: comment");
  });
});
