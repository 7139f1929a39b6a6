import { ArchiveRejected } from './errors.js';
import { shownName, type ArchiveLimits, type EntryKind } from './archive-policy.js';

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
 * The directories a list of paths implies, each named once, parents first: what an
 * assembly from a manifest (checked already, when its session opened) must make before
 * its files.
 */
export class ImpliedDirectories {
  private readonly made: Set<string>;

  /** `made`: directories there already, whose paths imply nothing more to make. */
  constructor(made: Iterable<string> = []) {
    this.made = new Set(['', ...made]);
  }

  /** The parents of `path` not named yet, parents first; they count as made from now on. */
  missingParents(path: string): string[] {
    const missing: string[] = [];
    for (let cut = path.lastIndexOf('/'); cut > 0; cut = path.lastIndexOf('/', cut - 1)) {
      const parent = path.slice(0, cut);
      if (this.made.has(parent)) break;
      this.made.add(parent);
      missing.push(parent);
    }
    return missing.reverse();
  }
}
