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

const utf8 = new TextEncoder();
/** UTF-8 takes at most 3 bytes per UTF-16 unit, so most names need no encoding to be measured. */
const fitsInBytes = (s: string, max: number): boolean => s.length * 3 <= max || utf8.encode(s).length <= max;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f\x7f]/;

/** Shown as \uXXXX, so a hostile name cannot forge lines in an error message or a log. */
function escapeControls(path: string): string {
  return path.replace(new RegExp(CONTROL.source, 'g'), (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The spec's own rule and message, checked on every name an entry carries. */
export function assertNoDotDot(rawPath: string): void {
  // Checked per entry: most names hold no '..' at all and need no splitting.
  if (rawPath.includes('..') && rawPath.split(/[\\/]/).includes('..')) {
    throw new ArchiveRejected(`path contains '..' component which is not allowed: ${escapeControls(rawPath)}`);
  }
}

/**
 * The entry's path relative to the release root, without `.` or empty components;
 * '' is the root itself (`.` or `./`, which tar -C dir . writes).
 */
export function normaliseEntryPath(rawPath: string): string {
  assertNoDotDot(rawPath);
  if (CONTROL.test(rawPath)) throw new ArchiveRejected(`path contains a control character: ${escapeControls(rawPath)}`);
  // Names are decoded as UTF-8; an invalid sequence decodes to U+FFFD.
  if (rawPath.includes('\uFFFD')) throw new ArchiveRejected(`path is not valid UTF-8: ${rawPath}`);
  if (rawPath.startsWith('/')) throw new ArchiveRejected(`absolute path not allowed: ${rawPath}`);
  if (/^[A-Za-z]:/.test(rawPath)) throw new ArchiveRejected(`drive-letter path not allowed: ${rawPath}`);
  if (rawPath.includes('\\')) throw new ArchiveRejected(`backslash in path not allowed: ${rawPath}`);
  const parts = rawPath.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.length > PATH_LIMITS.maxDepth) {
    throw new ArchiveRejected(`path nested deeper than ${PATH_LIMITS.maxDepth} levels: ${rawPath}`);
  }
  if (parts.some((part) => !fitsInBytes(part, PATH_LIMITS.maxComponentBytes))) {
    throw new ArchiveRejected(`path component longer than ${PATH_LIMITS.maxComponentBytes} bytes: ${rawPath}`);
  }
  const path = parts.join('/');
  if (!fitsInBytes(path, PATH_LIMITS.maxPathBytes)) {
    throw new ArchiveRejected(`path longer than ${PATH_LIMITS.maxPathBytes} bytes: ${rawPath}`);
  }
  return path;
}

/** Maps a tar entry type to what a site may hold: regular files and directories only. */
export function entryKind(tarType: string, rawPath: string): EntryKind {
  switch (tarType) {
    case 'File':
    case 'OldFile':
    case 'ContiguousFile':
      return 'file';
    case 'Directory':
      return 'directory';
    case 'SymbolicLink':
    case 'Link':
      throw new ArchiveRejected(`links are not allowed: ${rawPath}`);
    default:
      throw new ArchiveRejected(`entry type ${tarType} is not allowed: ${rawPath}`);
  }
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

  /** Files and directories, the root excepted. */
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
    this.entryCount += 1;
    if (this.entryCount > this.limits.maxFiles) {
      throw new ArchiveRejected(`archive has more than ${this.limits.maxFiles} entries`);
    }
    this.byteCount += size;
    if (this.byteCount > this.limits.maxBytes) {
      throw new ArchiveRejected(`archive unpacks to more than ${this.limits.maxBytes} bytes`);
    }

    const previous = this.seen.get(path);
    if (previous === 'file' || previous === 'explicit-dir') {
      if ((previous === 'file') !== (kind === 'file')) throw new ArchiveRejected(`a file and a directory share the path: ${path}`);
      throw new ArchiveRejected(`duplicate path: ${path}`);
    }
    if (previous === 'implicit-dir') {
      if (kind === 'file') throw new ArchiveRejected(`a file and a directory share the path: ${path}`);
      this.seen.set(path, 'explicit-dir');
      return [];
    }

    const created = this.missingParents(path);
    this.seen.set(path, kind === 'file' ? 'file' : 'explicit-dir');
    if (kind === 'directory') created.push(path);
    else this.fileCount += 1;
    return created;
  }

  private missingParents(path: string): string[] {
    const missing: string[] = [];
    let cut = path.lastIndexOf('/');
    while (cut > 0) {
      const parent = path.slice(0, cut);
      const state = this.seen.get(parent);
      if (state === 'file') throw new ArchiveRejected(`a file and a directory share the path: ${parent}`);
      if (state !== undefined) break;
      this.seen.set(parent, 'implicit-dir');
      missing.push(parent);
      cut = parent.lastIndexOf('/');
    }
    return missing.reverse();
  }
}
