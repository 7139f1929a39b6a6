import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ArchiveLedger, ImpliedDirectories } from '../../src/domain/archive-ledger.js';
import { batchLimits } from '../../src/domain/object-batch.js';
import { assertPaxKeys, checkEntry, entryKind, normaliseEntryPath, paxKeys, refuseIgnoredEntry, SHOWN_NAME_CHARS, shownName, type EntryFacts } from '../../src/domain/archive-policy.js';
import { assertTarStart, InflatedStream, parserWarning } from '../../src/domain/archive-stream.js';
import { header, pax, tar } from '../support/tar-builder.js';
import { ArchiveRejected } from '../../src/domain/errors.js';
import { EMPTY_DIGEST, manifestOf, type Digest } from '../../src/domain/manifest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';

const segment = fc.stringMatching(/^[a-zA-Z0-9_.-]{1,12}$/).filter((s) => s !== '.' && s !== '..');

function rejection(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ArchiveRejected);
    return (error as ArchiveRejected).reason;
  }
  throw new Error('expected a rejection');
}

describe('the .. rule', () => {
  it('rejects a .. component anywhere, with the spec message', () => {
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 5 }), fc.nat(), fc.constantFrom('/', '\\'), (parts, at, sep) => {
        const i = at % (parts.length + 1);
        const path = [...parts.slice(0, i), '..', ...parts.slice(i)].join(sep);
        expect(rejection(() => normaliseEntryPath(path))).toBe(`path contains '..' component which is not allowed: ${path}`);
      }),
    );
  });

  it('accepts names that merely contain dots', () => {
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 5 }), (parts) => {
        expect(normaliseEntryPath(parts.join('/'))).toBe(parts.join('/'));
      }),
    );
    expect(normaliseEntryPath('a..b/..c/d..')).toBe('a..b/..c/d..');
  });
});

describe('entry paths', () => {
  it('is the path split at /, its empty and . components dropped, and joined, when that is within the limits, however it is spelt', () => {
    const part = fc.oneof(fc.constantFrom('', '.', 'a', 'é', '😀', 'x'.repeat(84), 'y'.repeat(256)), segment);
    // And paths around the depth limit, short enough to be taken as they are written.
    const deep = fc.array(fc.constantFrom('a', 'bc'), { minLength: 29, maxLength: 36 });
    fc.assert(
      fc.property(fc.oneof(fc.array(part, { maxLength: 40 }), deep), (parts) => {
        const raw = parts.join('/');
        fc.pre(!raw.startsWith('/'));
        const kept = parts.filter((p) => p !== '' && p !== '.');
        const within = kept.length <= 32 && kept.every((p) => Buffer.byteLength(p) <= 255) && Buffer.byteLength(kept.join('/')) <= 1024;
        if (within) expect(normaliseEntryPath(raw)).toBe(kept.join('/'));
        else rejection(() => normaliseEntryPath(raw));
      }),
      { numRuns: 2000 },
    );
  });

  it('treats ./ prefixes and . as the release root', () => {
    expect(normaliseEntryPath('.')).toBe('');
    expect(normaliseEntryPath('./')).toBe('');
    expect(normaliseEntryPath('./index.html')).toBe('index.html');
    expect(normaliseEntryPath('./css/')).toBe('css');
    expect(normaliseEntryPath('a//b/./c')).toBe('a/b/c');
  });

  it.each([
    ['/etc/passwd', 'absolute path not allowed: /etc/passwd'],
    ['//x', 'absolute path not allowed: //x'],
    ['C:x', 'drive-letter path not allowed: C:x'],
    ['a\\b', 'backslash in path not allowed: a\\b'],
    ['a\u0001b', 'path contains a control character: a\\u0001b'],
    ['a\u007fb', 'path contains a control character: a\\u007fb'],
    ['a\nb', 'path contains a control character: a\\u000ab'],
    ['caf\uFFFD', 'path is not valid UTF-8: caf\uFFFD'],
    ['a\uD800.html', 'path is not valid UTF-8: a\uD800.html'],
    ['a\uDC00.html', 'path is not valid UTF-8: a\uDC00.html'],
    ['\uDC00\uD800', 'path is not valid UTF-8: \uDC00\uD800'],
  ])('rejects %j', (path, reason) => {
    expect(rejection(() => normaliseEntryPath(path))).toBe(reason);
  });

  it('bounds component length, path length and depth', () => {
    expect(normaliseEntryPath('a'.repeat(255))).toBe('a'.repeat(255));
    expect(rejection(() => normaliseEntryPath('a'.repeat(256)))).toMatch(/^path component longer than 255 bytes/);
    expect(rejection(() => normaliseEntryPath('é'.repeat(128)))).toMatch(/^path component longer than 255 bytes/);
    const long = Array.from({ length: 10 }, () => 'b'.repeat(110)).join('/');
    expect(rejection(() => normaliseEntryPath(long))).toMatch(/^path longer than 1024 bytes/);
    expect(normaliseEntryPath(Array(32).fill('d').join('/'))).toBe(Array(32).fill('d').join('/'));
    expect(rejection(() => normaliseEntryPath(Array(33).fill('d').join('/')))).toMatch(/^path nested deeper than 32 levels/);
  });

  it('measures a component in UTF-8 bytes, whatever its characters', () => {
    // One, two, three and four UTF-8 bytes a character, mixed, around the 255-byte limit.
    const char = fc.constantFrom('a', 'é', '€', '😀');
    fc.assert(
      fc.property(fc.array(char, { minLength: 60, maxLength: 130 }), (chars) => {
        const name = chars.join('');
        const bytes = new TextEncoder().encode(name).length;
        if (bytes <= 255) expect(normaliseEntryPath(name)).toBe(name);
        else expect(rejection(() => normaliseEntryPath(name))).toMatch(/^path component longer than 255 bytes/);
      }),
      { numRuns: 300 },
    );
  });

  it('allows regular files and directories only', () => {
    expect(entryKind('File', 'a')).toBe('file');
    expect(entryKind('OldFile', 'a')).toBe('file');
    expect(entryKind('Directory', 'a')).toBe('directory');
    expect(rejection(() => entryKind('SymbolicLink', 'l'))).toBe('links are not allowed: l');
    expect(rejection(() => entryKind('Link', 'h'))).toBe('links are not allowed: h');
    for (const type of ['CharacterDevice', 'BlockDevice', 'FIFO', 'GNUDumpDir']) {
      expect(rejection(() => entryKind(type, 'x'))).toBe(`entry type ${type} is not allowed: x`);
    }
    expect(rejection(() => entryKind('SparseFile', 'x'))).toBe('GNU sparse files are not supported (archive without --sparse): x');
    expect(rejection(() => entryKind('ContiguousFile', 'd/'))).toBe("a file entry's name ends in '/': d/");
  });

  it('refuses what the parser skipped rather than publish a site without it', () => {
    expect(rejection(() => refuseIgnoredEntry('ExtendedHeader', 'PaxHeader', true))).toBe('metadata header ExtendedHeader larger than 1 MiB: PaxHeader');
    expect(rejection(() => refuseIgnoredEntry('TapeVolumeHeader', 'v\u001b', false))).toBe('entry type TapeVolumeHeader is not allowed: v\\u001b');
  });
});

describe('ArchiveLedger', () => {
  const limits = { maxFiles: 10, maxBytes: 100 };

  it('names each missing directory once, parents first', () => {
    const ledger = new ArchiveLedger(limits);
    expect(ledger.admit('file', 'a/b/c.html', 1)).toEqual(['a', 'a/b']);
    expect(ledger.admit('file', 'a/b/d.html', 1)).toEqual([]);
    expect(ledger.admit('directory', 'a', 0)).toEqual([]);
    expect(ledger.admit('directory', 'e', 0)).toEqual(['e']);
    expect(ledger.admit('directory', '', 0)).toEqual([]);
    expect(ledger.files).toBe(2);
    // a, a/b, two files, e: what reached the disk.
    expect(ledger.entries).toBe(5);
  });

  it('refuses duplicates and file/directory clashes', () => {
    const ledger = new ArchiveLedger(limits);
    ledger.admit('file', 'a/x', 1);
    expect(rejection(() => ledger.admit('file', 'a/x', 1))).toBe('duplicate path: a/x');
    expect(rejection(() => ledger.admit('directory', 'a/x', 0))).toBe('a file and a directory share the path: a/x');
    expect(rejection(() => ledger.admit('file', 'a', 1))).toBe('a file and a directory share the path: a');
    expect(rejection(() => ledger.admit('file', 'a/x/y', 1))).toBe('a file and a directory share the path: a/x');
    ledger.admit('directory', 'd', 0);
    expect(rejection(() => ledger.admit('directory', 'd', 0))).toBe('duplicate path: d');
  });

  it('stops at the entry and byte limits as entries stream in', () => {
    const ledger = new ArchiveLedger({ maxFiles: 2, maxBytes: 10 });
    ledger.admit('file', 'a', 6);
    expect(rejection(() => ledger.admit('file', 'b', 5))).toBe('archive unpacks to more than 10 bytes');
    const few = new ArchiveLedger({ maxFiles: 2, maxBytes: 10 });
    few.admit('file', 'a', 0);
    few.admit('file', 'b', 0);
    expect(rejection(() => few.admit('file', 'c', 0))).toBe('archive has more than 2 files and directories');
  });

  it('counts every directory a path implies toward the limit, and an explicit one only once', () => {
    fc.assert(
      fc.property(fc.array(fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 20 }), (paths) => {
        const ledger = new ArchiveLedger({ maxFiles: 1_000_000, maxBytes: 1_000_000 });
        const dirs = new Set<string>();
        const explicit = new Set<string>();
        let files = 0;
        for (const parts of paths) {
          const path = `${parts.join('/')}/f${files}`;
          try {
            ledger.admit('file', path, 0);
          } catch {
            continue; // a clash with an earlier file; not what this property is about
          }
          files += 1;
          for (let i = 1; i < parts.length + 1; i += 1) dirs.add(parts.slice(0, i).join('/'));
          if (!explicit.has(parts.join('/'))) ledger.admit('directory', parts.join('/'), 0);
          explicit.add(parts.join('/'));
          expect(ledger.entries).toBe(dirs.size + files);
        }
      }),
    );
    const ledger = new ArchiveLedger({ maxFiles: 31, maxBytes: 10 });
    expect(rejection(() => ledger.admit('file', `${Array(31).fill('d').join('/')}/f`, 0))).toBe('archive has more than 31 files and directories');
  });

  it('asks for at least one file at the end', () => {
    const ledger = new ArchiveLedger(limits);
    ledger.admit('directory', 'a', 0);
    expect(rejection(() => ledger.assertComplete())).toBe('archive contains no files');
    ledger.admit('file', 'a/b', 0);
    ledger.assertComplete();
  });
});

describe('names in messages', () => {
  it('are escaped and cut at SHOWN_NAME_CHARS, whatever they hold', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 600 }), (name) => {
        const shown = shownName(name);
        expect(shown.length).toBeLessThanOrEqual(SHOWN_NAME_CHARS + 1);
        // eslint-disable-next-line no-control-regex
        expect(shown).not.toMatch(/[\x00-\x1f\x7f]/);
        if (shown.endsWith('…') && !name.endsWith('…')) expect(name.length).toBeGreaterThan(SHOWN_NAME_CHARS / 6);
      }),
    );
    expect(shownName('a\nb')).toBe('a\\u000ab');
    expect(shownName('x'.repeat(1024 * 1024))).toBe(`${'x'.repeat(200)}…`);
  });

  it('are cut in every reason the policy gives', () => {
    const long = 'n'.repeat(5000);
    for (const reason of [
      rejection(() => normaliseEntryPath(`${long}/../x`)),
      rejection(() => normaliseEntryPath(`/${long}`)),
      rejection(() => normaliseEntryPath(long)),
      rejection(() => entryKind('FIFO', long)),
      rejection(() => entryKind('SymbolicLink', long)),
    ]) {
      expect(reason.length).toBeLessThan(300);
      expect(reason.endsWith('…')).toBe(true);
    }
  });
});

describe('the inflated stream', () => {
  const block = (entry: Parameters<typeof header>[0]) => header(entry, 0);

  it('must start with a tar header, and is refused when compressed again', () => {
    assertTarStart(block({ path: 'index.html' }));
    assertTarStart(tar([]).subarray(0, 512));
    const twice = (kind: string) => `archive is compressed twice: the inflated stream is ${kind}, not tar (upload a .tar.gz compressed once)`;
    const padded = (bytes: number[]) => Buffer.concat([Buffer.from(bytes), Buffer.alloc(512 - bytes.length)]);
    expect(rejection(() => assertTarStart(padded([0x1f, 0x8b, 8])))).toBe(twice('gzip'));
    expect(rejection(() => assertTarStart(padded([0x28, 0xb5, 0x2f, 0xfd])))).toBe(twice('zstd'));
    expect(rejection(() => assertTarStart(padded([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0])))).toBe(twice('xz'));
    expect(rejection(() => assertTarStart(padded([...Buffer.from('BZh9')])))).toBe(twice('bzip2'));
    expect(rejection(() => assertTarStart(Buffer.from([0x1f, 0x8b])))).toBe(twice('gzip'));
    expect(rejection(() => assertTarStart(Buffer.from('short')))).toBe('the inflated stream is not a tar archive');
    expect(rejection(() => assertTarStart(Buffer.alloc(512, 0x41)))).toBe('the inflated stream is not a tar archive');
    // A file may be named like bzip2's magic: a valid header is tar, whatever its name.
    assertTarStart(block({ path: 'BZh.html' }));
  });

  it('refuses a tar header that gzip magic would make node-tar inflate', () => {
    // 0x1f 0x8b as a name with a valid checksum: still refused, before the parser sees it.
    const forged = block({ path: Buffer.from([0x1f, 0x8b, 0x08]) });
    expect(rejection(() => assertTarStart(forged))).toMatch(/^archive is compressed twice: the inflated stream is gzip/);
  });

  it('caps what it inflates to, and what follows the end marker', () => {
    const stream = new InflatedStream({ maxFiles: 1, maxBytes: 10 * 1024 * 1024 });
    stream.take(64 * 1024 * 1024, false);
    stream.take(1024 * 1024, true);
    expect(rejection(() => stream.take(1, true))).toBe('unexpected data after the end of the tar archive');
    const small = new InflatedStream({ maxFiles: 1, maxBytes: 0 });
    expect(rejection(() => small.take(64 * 1024 * 1024 + 1537, false))).toBe(`archive decompresses to more than ${64 * 1024 * 1024 + 1536} bytes`);
  });
});

describe('pax headers', () => {
  const body = (records: Record<string, string>) => String(pax(records).body);

  it('reads every key by its length, as tar does', () => {
    expect(paxKeys(body({ path: 'a.html', 'GNU.sparse.major': '1', comment: 'é'.repeat(40) }))).toEqual(['path', 'GNU.sparse.major', 'comment']);
    expect(paxKeys('')).toEqual([]);
  });

  it('refuses records node-tar would read otherwise', () => {
    expect(rejection(() => paxKeys('41 comment=x\n28 path=sitedrop-pwned.html\n'))).toBe("a pax record's value holds a newline: comment");
    for (const bad of ['99 path=x\n', 'path=x\n', '11 path=x\n', '9 =value\n', '9 novalue\n']) {
      expect(rejection(() => paxKeys(bad))).toBe('malformed pax extended header');
    }
  });

  it('refuses GNU sparse records and global names and sizes', () => {
    for (const key of ['GNU.sparse.major', 'GNU.sparse.map', 'GNU.sparse.offset', 'GNU.sparse.name']) {
      expect(rejection(() => assertPaxKeys([key], false, 'f'))).toBe('GNU sparse files are not supported (archive without --sparse): f');
    }
    for (const key of ['path', 'linkpath', 'size']) {
      assertPaxKeys([key], false, 'f');
      expect(rejection(() => assertPaxKeys([key], true, 'f'))).toBe(`a global pax header may not set ${key}`);
    }
    assertPaxKeys(['mtime', 'comment', 'uname', 'SCHILY.xattr.user.x'], true, 'f');
  });
});

describe('one entry, every check in order (checkEntry)', () => {
  const entry = (facts: Partial<EntryFacts>): EntryFacts => ({ tarType: 'File', path: 'a.html', headerName: 'a.html', afterZeroBlock: false, pax: undefined, globalPax: undefined, ...facts });

  it('gives the kind and the normalised path of an entry that passes', () => {
    expect(checkEntry(entry({ path: './docs//a.html', headerName: './docs//a.html' }))).toEqual({ kind: 'file', path: 'docs/a.html' });
    expect(checkEntry(entry({ tarType: 'Directory', path: 'docs/', headerName: 'docs/', pax: ['mtime'], globalPax: ['comment'] }))).toEqual({ kind: 'directory', path: 'docs' });
  });

  it("refuses '..' in the header block's own name, which a pax path record replaced", () => {
    expect(rejection(() => checkEntry(entry({ path: 'fine.html', headerName: '../evil.html', pax: ['path'] })))).toBe("path contains '..' component which is not allowed: ../evil.html");
  });

  it('checks in order: a lone zero block, then the names, then pax, then the kind, then the path', () => {
    const everythingWrong = entry({ tarType: 'SymbolicLink', path: '/abs', headerName: '../x', afterZeroBlock: true, pax: ['GNU.sparse.map'], globalPax: ['path'] });
    expect(rejection(() => checkEntry(everythingWrong))).toBe('entries after a lone zero block (tar stops reading there): /abs');
    expect(rejection(() => checkEntry({ ...everythingWrong, afterZeroBlock: false }))).toBe("path contains '..' component which is not allowed: ../x");
    const fromPax = { ...everythingWrong, afterZeroBlock: false, headerName: 'x' };
    expect(rejection(() => checkEntry(fromPax))).toBe('GNU sparse files are not supported (archive without --sparse): /abs');
    expect(rejection(() => checkEntry({ ...fromPax, pax: undefined }))).toBe('a global pax header may not set path');
    expect(rejection(() => checkEntry({ ...fromPax, pax: undefined, globalPax: undefined }))).toBe('links are not allowed: /abs');
    expect(rejection(() => checkEntry({ ...fromPax, pax: undefined, globalPax: undefined, tarType: 'File' }))).toBe('absolute path not allowed: /abs');
  });

  it('refuses an entry whose pax header could not be read, with the reason found when it was read', () => {
    expect(rejection(() => checkEntry(entry({ pax: new ArchiveRejected('malformed pax extended header') })))).toBe('malformed pax extended header');
    expect(rejection(() => checkEntry(entry({ globalPax: new ArchiveRejected('malformed pax extended header') })))).toBe('malformed pax extended header');
  });

  it("refuses on any of the tar parser's warnings, its words shown as a name is", () => {
    expect(parserWarning('TAR_ENTRY_INVALID: checksum failure').reason).toBe('invalid tar archive: TAR_ENTRY_INVALID: checksum failure');
    expect(parserWarning('bad\nline').reason).toBe('invalid tar archive: bad\\u000aline');
  });
});

describe('the directories an assembly makes (ImpliedDirectories)', () => {
  it('names each parent once, parents first', () => {
    const dirs = new ImpliedDirectories();
    expect(dirs.missingParents('index.html')).toEqual([]);
    expect(dirs.missingParents('a/b/c/x.html')).toEqual(['a', 'a/b', 'a/b/c']);
    expect(dirs.missingParents('a/b/y.html')).toEqual([]);
    expect(dirs.missingParents('a/d/e/z.html')).toEqual(['a/d', 'a/d/e']);
  });

  it('agrees with the archive ledger on every list of file paths', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/')), { maxLength: 20 }), (paths) => {
        // Paths that are both a file and a directory are the ledger's to refuse, not an assembly's to meet.
        const files = paths.filter((p) => !paths.some((q) => q.startsWith(`${p}/`)));
        const ledger = new ArchiveLedger({ maxFiles: 1000, maxBytes: 1000 });
        const dirs = new ImpliedDirectories();
        for (const path of files) expect(dirs.missingParents(path)).toEqual(ledger.admit('file', path, 0));
      }),
    );
  });
});

describe('the limits of a batch of objects (batchLimits)', () => {
  it("are the manifest's objects: as many entries, as many bytes", () => {
    const digest = (c: string) => c.repeat(64) as Digest;
    const manifest = PackedManifest.pack(
      manifestOf([
        { path: 'a.html', size: 3, digest: digest('a') },
        { path: 'copy-of-a.html', size: 3, digest: digest('a') },
        { path: 'b.css', size: 10, digest: digest('b') },
        { path: 'empty', size: 0, digest: EMPTY_DIGEST },
      ]),
    );
    expect(batchLimits(manifest)).toEqual({ maxFiles: 2, maxBytes: 13 });
  });
});
