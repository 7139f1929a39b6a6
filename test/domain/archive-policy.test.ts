import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ArchiveLedger, entryKind, normaliseEntryPath } from '../../src/domain/archive-policy.js';
import { ArchiveRejected } from '../../src/domain/errors.js';

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
    for (const type of ['CharacterDevice', 'BlockDevice', 'FIFO', 'SparseFile']) {
      expect(rejection(() => entryKind(type, 'x'))).toBe(`entry type ${type} is not allowed: x`);
    }
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
    expect(ledger.entries).toBe(4);
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
    expect(rejection(() => few.admit('file', 'c', 0))).toBe('archive has more than 2 entries');
  });
});
