import { ArchiveRejected } from './errors.js';

/**
 * What a site archive may contain. A release is served to the public by a web
 * server that follows symlinks, so anything that could land or point outside the
 * release is refused rather than repaired.
 */
export const PATH_LIMITS = { maxComponentBytes: 255, maxPathBytes: 1024, maxDepth: 32 } as const;

export interface ArchiveLimits {
  /** Entries (files and directories) an archive may hold. */
  readonly maxFiles: number;
  /** Bytes the archive's files may unpack to, in total. */
  readonly maxBytes: number;
}

export type EntryKind = 'file' | 'directory';

/**
 * Modes every published entry gets, whatever the archive recorded: the web server reads
 * every file and enters every directory, and nothing a user uploads is executable or
 * writable by others.
 */
export const PUBLISHED_FILE_MODE = 0o644;
export const PUBLISHED_DIRECTORY_MODE = 0o755;

/** UTF-8 takes at most 3 bytes per UTF-16 unit, so most names need no measuring; the rest are measured, not copied. */
const fitsInBytes = (s: string, max: number): boolean => s.length * 3 <= max || Buffer.byteLength(s, 'utf8') <= max;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f\x7f]/;

/** Characters of a name an error message repeats: a 1 MiB name must not make a 1 MiB answer and log line. */
export const SHOWN_NAME_CHARS = 200;

/**
 * A name as every message shows it: control characters as \uXXXX, so a hostile name
 * cannot forge lines in an answer or a log, and cut at SHOWN_NAME_CHARS with an ellipsis.
 */
export function shownName(name: string): string {
  let shown = '';
  for (const char of name) {
    const piece = CONTROL.test(char) ? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}` : char;
    if (shown.length + piece.length > SHOWN_NAME_CHARS) return `${shown}…`;
    shown += piece;
  }
  return shown;
}

/** The spec's own rule and message, checked on every name an entry carries. */
export function assertNoDotDot(rawPath: string): void {
  // Checked per entry: most names hold no '..' at all and need no splitting.
  if (rawPath.includes('..') && rawPath.split(/[\\/]/).includes('..')) {
    throw new ArchiveRejected(`path contains '..' component which is not allowed: ${shownName(rawPath)}`);
  }
}

/**
 * The entry's path relative to the release root, without `.` or empty components;
 * '' is the root itself (`.` or `./`, which tar -C dir . writes).
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function normaliseEntryPath(rawPath: string): string {
  assertNoDotDot(rawPath);
  if (CONTROL.test(rawPath)) throw new ArchiveRejected(`path contains a control character: ${shownName(rawPath)}`);
  // Names are decoded as UTF-8; an invalid sequence decodes to U+FFFD. A manifest's JSON
  // can also spell half a surrogate pair, which no UTF-8 can hold: written, it would become
  // U+FFFD, another path than the one checked.
  if (rawPath.includes('\uFFFD') || LONE_SURROGATE.test(rawPath)) throw new ArchiveRejected(`path is not valid UTF-8: ${shownName(rawPath)}`);
  if (rawPath.startsWith('/')) throw new ArchiveRejected(`absolute path not allowed: ${shownName(rawPath)}`);
  if (/^[A-Za-z]:/.test(rawPath)) throw new ArchiveRejected(`drive-letter path not allowed: ${shownName(rawPath)}`);
  if (rawPath.includes('\\')) throw new ArchiveRejected(`backslash in path not allowed: ${shownName(rawPath)}`);
  if (alreadyNormal(rawPath)) return notReserved(rawPath, rawPath);
  const parts = rawPath.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.length > PATH_LIMITS.maxDepth) {
    throw new ArchiveRejected(`path nested deeper than ${PATH_LIMITS.maxDepth} levels: ${shownName(rawPath)}`);
  }
  if (parts.some((part) => !fitsInBytes(part, PATH_LIMITS.maxComponentBytes))) {
    throw new ArchiveRejected(`path component longer than ${PATH_LIMITS.maxComponentBytes} bytes: ${shownName(rawPath)}`);
  }
  const path = parts.join('/');
  if (!fitsInBytes(path, PATH_LIMITS.maxPathBytes)) {
    throw new ArchiveRejected(`path longer than ${PATH_LIMITS.maxPathBytes} bytes: ${shownName(rawPath)}`);
  }
  return notReserved(path, rawPath);
}

/** sitedrop's own files in a release (its compiled rules): a site may not hold or shadow them. */
export const RESERVED_DIRECTORY = '.sitedrop';

function notReserved(path: string, rawPath: string): string {
  if (path === RESERVED_DIRECTORY || path.startsWith(`${RESERVED_DIRECTORY}/`)) {
    throw new ArchiveRejected(`paths under ${RESERVED_DIRECTORY}/ are reserved for sitedrop: ${shownName(rawPath)}`);
  }
  return path;
}

/** An empty or `.` component: the start or a `/`, perhaps a `.`, then a `/` or the end. */
const EMPTY_OR_DOT = /(?:^|\/)\.?(?:\/|$)/;

/**
 * Most paths need no normalising: short enough that no component or the whole can be over
 * its byte limit, no deeper than the limit, with no empty or `.` component. Taken as they
 * are, they are spared the split, filter and join of tens of thousands of entries.
 */
function alreadyNormal(rawPath: string): boolean {
  if (rawPath.length * 3 > PATH_LIMITS.maxComponentBytes || EMPTY_OR_DOT.test(rawPath)) return false;
  let depth = 1;
  for (let at = rawPath.indexOf('/'); at !== -1; at = rawPath.indexOf('/', at + 1)) depth += 1;
  return depth <= PATH_LIMITS.maxDepth;
}

const SPARSE_REASON = 'GNU sparse files are not supported (archive without --sparse)';

/** Maps a tar entry type to what a site may hold: regular files and directories only. */
export function entryKind(tarType: string, rawPath: string): EntryKind {
  switch (tarType) {
    case 'File':
    case 'OldFile':
    case 'ContiguousFile':
      // Old tars mark a directory as a file named with a trailing '/', and GNU tar makes it
      // a directory: publishing a file there would not be what the archiver meant.
      if (rawPath.endsWith('/')) throw new ArchiveRejected(`a file entry's name ends in '/': ${shownName(rawPath)}`);
      return 'file';
    case 'Directory':
      return 'directory';
    case 'SymbolicLink':
    case 'Link':
      throw new ArchiveRejected(`links are not allowed: ${shownName(rawPath)}`);
    case 'SparseFile':
      throw new ArchiveRejected(`${SPARSE_REASON}: ${shownName(rawPath)}`);
    default:
      throw new ArchiveRejected(`entry type ${tarType} is not allowed: ${shownName(rawPath)}`);
  }
}

/**
 * The keys of a pax extended header, read by their lengths as tar does. A record the
 * parser would read otherwise is refused: node-tar splits records at newlines, so a
 * value holding a newline could hide a record (a `path`) that only node-tar would honour.
 */
export function paxKeys(text: string): string[] {
  const bytes = new TextEncoder().encode(text);
  const keys: string[] = [];
  const decoder = new TextDecoder();
  for (let at = 0; at < bytes.length; ) {
    let space = at;
    const isDigit = (i: number) => (bytes[i] ?? 0) >= 0x30 && (bytes[i] ?? 0) <= 0x39;
    while (space < bytes.length && isDigit(space)) space += 1;
    const length = Number(decoder.decode(bytes.subarray(at, space)));
    const end = at + length;
    if (space === at || bytes[space] !== 0x20 || end > bytes.length || end <= space + 1 || bytes[end - 1] !== 0x0a) {
      throw new ArchiveRejected('malformed pax extended header');
    }
    const record = decoder.decode(bytes.subarray(space + 1, end - 1));
    const equals = record.indexOf('=');
    if (equals <= 0) throw new ArchiveRejected('malformed pax extended header');
    const key = record.slice(0, equals);
    if (record.includes('\n', equals)) throw new ArchiveRejected(`a pax record's value holds a newline: ${shownName(key)}`);
    keys.push(key);
    at = end;
  }
  return keys;
}

/** Keys a global header would apply to every later entry: each would publish another name or size than the entry's own. */
const GLOBAL_FORBIDDEN = ['path', 'linkpath', 'size'];

/**
 * Pax keys that would make the file on disk differ from what tar extracts: GNU's sparse
 * records (the stored bytes are a map plus data, under a placeholder name) and global
 * names and sizes. Every other key node-tar reads is metadata sitedrop does not apply.
 */
export function assertPaxKeys(keys: readonly string[], global: boolean, rawPath: string): void {
  if (keys.some((key) => key.startsWith('GNU.sparse.'))) throw new ArchiveRejected(`${SPARSE_REASON}: ${shownName(rawPath)}`);
  if (!global) return;
  const forbidden = keys.find((key) => GLOBAL_FORBIDDEN.includes(key));
  if (forbidden) throw new ArchiveRejected(`a global pax header may not set ${forbidden}`);
}

/** Leading bytes of compressed formats; a tar header never starts with these in a valid name. */
const COMPRESSED: readonly (readonly [string, readonly number[]])[] = [
  ['gzip', [0x1f, 0x8b]],
  ['zstd', [0x28, 0xb5, 0x2f, 0xfd]],
  ['xz', [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]],
  ['bzip2', [0x42, 0x5a, 0x68]],
  ['lz4', [0x04, 0x22, 0x4d, 0x18]],
  ['compress (.Z)', [0x1f, 0x9d]],
  ['lzip', [0x4c, 0x5a, 0x49, 0x50]],
];

export const TAR_BLOCK = 512;

function isTarHeader(block: Uint8Array): boolean {
  if (block.every((byte) => byte === 0)) return true;
  const field = new TextDecoder('latin1').decode(block.subarray(148, 156)).replace(/[\0 ]+$/, '').trim();
  if (!/^[0-7]{1,8}$/.test(field)) return false;
  let sum = 0;
  for (let i = 0; i < TAR_BLOCK; i += 1) sum += i >= 148 && i < 156 ? 0x20 : (block[i] ?? 0);
  return sum === parseInt(field, 8);
}

/**
 * The first block of the inflated stream must be a tar header. sitedrop's own gunzip is
 * the only decompression: the tar parser would inflate a second gzip or zstd layer itself,
 * outside every cap, so a stream that is compressed again is refused before it is parsed.
 * `head` is the first TAR_BLOCK bytes, or fewer when the stream ended sooner.
 */
export function assertTarStart(head: Uint8Array): void {
  const starts = (magic: readonly number[]) => magic.every((byte, i) => head[i] === byte);
  // gzip and zstd first: node-tar would decompress those whatever the rest of the block says.
  const twice = COMPRESSED.slice(0, 2).find(([, magic]) => starts(magic));
  if (twice) throw compressedTwice(twice[0]);
  if (head.length === TAR_BLOCK && isTarHeader(head)) return;
  const other = COMPRESSED.slice(2).find(([, magic]) => starts(magic));
  if (other) throw compressedTwice(other[0]);
  throw new ArchiveRejected('the inflated stream is not a tar archive');
}

function compressedTwice(kind: string): ArchiveRejected {
  return new ArchiveRejected(`archive is compressed twice: the inflated stream is ${kind}, not tar (upload a .tar.gz compressed once)`);
}

/** Zeros after the tar end-of-archive marker beyond this are a bomb, not padding (records are 10 KiB). */
const MAX_TRAILER_BYTES = 1024 * 1024;

/**
 * The inflated byte stream of one archive, before and after the tar end marker: caps
 * what a small upload may inflate to (headers and PAX records on top of the file bytes)
 * and what may follow the end marker.
 */
export class InflatedStream {
  private readonly cap: number;
  private total = 0;
  private trailer = 0;

  constructor(limits: ArchiveLimits) {
    this.cap = limits.maxBytes + limits.maxFiles * 3 * TAR_BLOCK + 64 * 1024 * 1024;
  }

  /** Counts inflated bytes; `afterEnd` when they follow the tar end marker. */
  take(bytes: number, afterEnd: boolean): void {
    this.total += bytes;
    if (this.total > this.cap) throw new ArchiveRejected(`archive decompresses to more than ${this.cap} bytes`);
    if (!afterEnd) return;
    this.trailer += bytes;
    if (this.trailer > MAX_TRAILER_BYTES) throw new ArchiveRejected('unexpected data after the end of the tar archive');
  }
}

/** GNU tar stops at the first zero block; entries node-tar would still read after it are not what tar extracts. */
export function assertNotAfterLoneZeroBlock(sawZeroBlock: boolean, rawPath: string): void {
  if (sawZeroBlock) throw new ArchiveRejected(`entries after a lone zero block (tar stops reading there): ${shownName(rawPath)}`);
}

/**
 * The running account of one archive: enforces the limits while entries stream in,
 * refuses duplicates and file/directory clashes, and says which directories an entry
 * needs that do not exist yet, so a writer creates each directory exactly once.
 */
export class ArchiveLedger {
  private readonly seen = new Map<string, 'file' | 'explicit-dir' | 'implicit-dir'>([['', 'explicit-dir']]);
  private entryCount = 0;
  private fileCount = 0;
  private byteCount = 0;

  constructor(private readonly limits: ArchiveLimits) {}

  /** Files and directories created, those only implied by a path included; the root excepted. */
  get entries(): number {
    return this.entryCount;
  }

  get files(): number {
    return this.fileCount;
  }

  get bytes(): number {
    return this.byteCount;
  }

  /** Records an entry; returns the directories to create for it, parents first. */
  admit(kind: EntryKind, path: string, size: number): string[] {
    if (path === '') {
      if (kind === 'file') throw new ArchiveRejected('a file cannot be the archive root');
      return [];
    }
    this.byteCount += size;
    if (this.byteCount > this.limits.maxBytes) {
      throw new ArchiveRejected(`archive unpacks to more than ${this.limits.maxBytes} bytes`);
    }

    const previous = this.seen.get(path);
    if (previous === 'file' || previous === 'explicit-dir') {
      if ((previous === 'file') !== (kind === 'file')) throw new ArchiveRejected(`a file and a directory share the path: ${shownName(path)}`);
      throw new ArchiveRejected(`duplicate path: ${shownName(path)}`);
    }
    if (previous === 'implicit-dir') {
      if (kind === 'file') throw new ArchiveRejected(`a file and a directory share the path: ${shownName(path)}`);
      this.seen.set(path, 'explicit-dir');
      return [];
    }

    const created = this.missingParents(path);
    this.seen.set(path, kind === 'file' ? 'file' : 'explicit-dir');
    if (kind === 'directory') created.push(path);
    else this.fileCount += 1;
    // What reaches the disk is counted, directories a path implies included: otherwise a
    // few deep paths create thousands of directories under a small MAX_FILES.
    this.entryCount += created.length + (kind === 'file' ? 1 : 0);
    if (this.entryCount > this.limits.maxFiles) {
      throw new ArchiveRejected(`archive has more than ${this.limits.maxFiles} files and directories`);
    }
    return created;
  }

  /** Whether a file was admitted at `path` (as the path rules write it). */
  holdsFile(path: string): boolean {
    return this.seen.get(path) === 'file';
  }

  /** Called at the end of the archive: a site needs at least one file. */
  assertComplete(): void {
    if (this.fileCount === 0) throw new ArchiveRejected('archive contains no files');
  }

  private missingParents(path: string): string[] {
    const missing: string[] = [];
    let cut = path.lastIndexOf('/');
    while (cut > 0) {
      const parent = path.slice(0, cut);
      const state = this.seen.get(parent);
      if (state === 'file') throw new ArchiveRejected(`a file and a directory share the path: ${shownName(parent)}`);
      if (state !== undefined) break;
      this.seen.set(parent, 'implicit-dir');
      missing.push(parent);
      cut = parent.lastIndexOf('/');
    }
    return missing.reverse();
  }
}

/**
 * An entry the tar parser skipped rather than handed over: a metadata header over its
 * 1 MiB bound, or a type it does not extract. Skipping would publish a site without it.
 */
export function refuseIgnoredEntry(tarType: string, rawPath: string, meta: boolean): never {
  if (meta) throw new ArchiveRejected(`metadata header ${tarType} larger than 1 MiB: ${shownName(rawPath)}`);
  entryKind(tarType, rawPath);
  throw new ArchiveRejected(`entry type ${tarType} is not allowed: ${shownName(rawPath)}`);
}

/** A stream its parser could not read; the parser's words are shown as a name is. */
export function unreadable(format: 'gzip' | 'tar', message: string): ArchiveRejected {
  return new ArchiveRejected(format === 'gzip' ? `not a valid gzip stream: ${shownName(message)}` : `invalid tar archive: ${shownName(message)}`);
}
