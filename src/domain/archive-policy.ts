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

/** GNU tar stops at the first zero block; entries node-tar would still read after it are not what tar extracts. */
export function assertNotAfterLoneZeroBlock(sawZeroBlock: boolean, rawPath: string): void {
  if (sawZeroBlock) throw new ArchiveRejected(`entries after a lone zero block (tar stops reading there): ${shownName(rawPath)}`);
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


/**
 * A pax header's keys as the parser met them, or why they could not be read (paxKeys);
 * none when the entry has no such header.
 */
export type PaxFacts = readonly string[] | ArchiveRejected | undefined;

/** What the tar parser says of one entry, before anything of it is written. */
export interface EntryFacts {
  /** The tar type name (node-tar's: 'File', 'Directory', 'SymbolicLink'...). */
  readonly tarType: string;
  /** The name the entry will have: the header block's, or a pax `path` record's. */
  readonly path: string;
  /** The name in the header block itself, which a pax `path` record may have replaced. */
  readonly headerName: string;
  /** Whether a lone zero block came before the entry. */
  readonly afterZeroBlock: boolean;
  readonly pax: PaxFacts;
  readonly globalPax: PaxFacts;
}

function checkPax(keys: PaxFacts, global: boolean, rawPath: string): void {
  if (keys instanceof ArchiveRejected) throw keys;
  if (keys) assertPaxKeys(keys, global, rawPath);
}

/**
 * Every check of one tar entry, in order: nothing after a lone zero block (where tar
 * stops), no `..` in either of its names (another tool would use the header's), pax
 * records tar would read otherwise, then its kind and its path. Returns the kind and the
 * path relative to the release root ('' is the root).
 */
export function checkEntry(facts: EntryFacts): { kind: EntryKind; path: string } {
  assertNotAfterLoneZeroBlock(facts.afterZeroBlock, facts.path);
  assertNoDotDot(facts.headerName);
  checkPax(facts.pax, false, facts.path);
  checkPax(facts.globalPax, true, facts.path);
  const kind = entryKind(facts.tarType, facts.path);
  return { kind, path: normaliseEntryPath(facts.path) };
}
