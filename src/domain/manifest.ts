import { ArchiveLedger } from './archive-ledger.js';
import { normaliseEntryPath, shownName, type ArchiveLimits } from './archive-policy.js';
import { ArchiveRejected, ManifestRejected } from './errors.js';
import { ReleaseId } from './release-id.js';

/**
 * What an incremental deploy says its site holds, before any byte of it is sent: each
 * file's path, size and SHA-256. The same rules as an archive's entries apply (the path
 * rules, duplicates, file/directory clashes, MAX_FILES counting the directories paths
 * imply, MAX_BYTES), all checked here, so a manifest the server accepts is one it can
 * build a release from (docs/content-store.md).
 */
export interface ManifestFile {
  /** Normalised as an archive entry's path is: relative, no '.' or empty components. */
  readonly path: string;
  readonly size: number;
  /** SHA-256 of the file's bytes, 64 lowercase hex digits. */
  readonly digest: Digest;
}

export type Digest = string & { readonly __brand: 'Digest' };

export interface Manifest {
  readonly files: readonly ManifestFile[];
  /** Every distinct non-empty content the release needs, with its size: what may be asked for. */
  readonly objects: ReadonlyMap<Digest, number>;
  readonly bytes: number;
}

/** The digest of no bytes: empty files are made, never uploaded or shared. */
export const EMPTY_DIGEST = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' as Digest;

const DIGEST = /^[0-9a-f]{64}$/;

export function isDigest(value: unknown): value is Digest {
  return typeof value === 'string' && DIGEST.test(value);
}

const FILES_NOT_A_LIST = 'files must be an array of {path, size, digest}';
const REMOVED_NOT_A_LIST = 'removed must be an array of paths';

/**
 * A manifest as the client sent it (parsed JSON of any shape), checked whole. Every
 * refusal names the file at fault, shortened and escaped as archive reasons are.
 */
export function parseManifest(files: unknown, limits: ArchiveLimits): Manifest {
  // Checked before any entry: a count far over the limit is refused without walking it.
  if (Array.isArray(files) && files.length > limits.maxFiles) throw new ManifestRejected(`more than ${limits.maxFiles} files and directories`);
  return readParsedManifest(new ManifestReader(limits), files).whole();
}

/** A file's path as the path rules write it, refused in a manifest's words. */
function sitePath(raw: string): string {
  let path: string;
  try {
    path = normaliseEntryPath(raw);
  } catch (error) {
    throw inManifestWords(error);
  }
  if (path === '') throw new ManifestRejected(`a file cannot be the site root: ${shownName(raw)}`);
  return path;
}

/** The archive's words, "archive has more than ...", read as well for a manifest (no closure: this is per entry). */
function inManifestWords(error: unknown): unknown {
  return error instanceof ArchiveRejected ? new ManifestRejected(error.reason.replace(/^archive /, 'site ')) : error;
}

/**
 * The rules over a whole site, file by file, for entries already well formed with paths
 * as the path rules write them: file/directory clashes, MAX_FILES counting the
 * directories paths imply, MAX_BYTES, the empty file's digest, one size per content.
 */
class SiteTally {
  private readonly ledger: ArchiveLedger;
  /** Every distinct non-empty content so far, with its size. */
  readonly objects = new Map<Digest, number>();

  constructor(limits: ArchiveLimits) {
    this.ledger = new ArchiveLedger(limits);
  }

  get bytes(): number {
    return this.ledger.bytes;
  }

  holdsFile(path: string): boolean {
    return this.ledger.holdsFile(path);
  }

  admit(file: ManifestFile): void {
    try {
      this.ledger.admit('file', file.path, file.size);
    } catch (error) {
      throw inManifestWords(error);
    }
    // The empty digest is an empty file's, and only its: no upload could give a file of bytes that has it.
    if (file.size === 0 && file.digest !== EMPTY_DIGEST) throw new ManifestRejected(`an empty file's digest must be ${EMPTY_DIGEST}: ${shownName(file.path)}`);
    if (file.size > 0 && file.digest === EMPTY_DIGEST) throw new ManifestRejected(`a file of bytes cannot have the empty file's digest: ${shownName(file.path)}`);
    if (file.size === 0) return;
    const known = this.objects.get(file.digest);
    // One content has one size: a second size is a lie about one of them.
    if (known !== undefined && known !== file.size) throw new ManifestRejected(`digest listed with two sizes: ${shownName(file.path)}`);
    this.objects.set(file.digest, file.size);
  }
}

/** A site made of entries already well formed (a base release's with the changes to it), checked whole; at least one file. */
function checkedSite(files: readonly ManifestFile[], limits: ArchiveLimits): Manifest {
  const tally = new SiteTally(limits);
  for (const file of files) tally.admit(file);
  if (files.length === 0) throw new ManifestRejected('site contains no files');
  return { files, objects: tally.objects, bytes: tally.bytes };
}

/**
 * A manifest read entry by entry as its body arrives, in the body's order: each entry is
 * checked when it comes against every rule it can break with those before it (its path,
 * a duplicate, a file/directory clash, MAX_FILES counting the directories paths imply,
 * MAX_EXTRACTED_BYTES, the empty file's digest, one size per content), so a body is
 * refused at its first entry over a limit, and what the reader holds is at most
 * MAX_FILES entries that passed. The entries of a manifest relative to a base are held
 * to the same rules: the site they make holds every one of them, so what they break it
 * would break too. Whether there is a base is told at the end: `whole()` or `changes()`.
 */
export class ManifestReader {
  private readonly tally: SiteTally;
  /** The files so far, in the order they came. */
  private readonly files: ManifestFile[] = [];
  private readonly gone = new Set<string>();
  private filesGiven = false;
  /** How `removed` came: a list, null (none, with a base), something else, or not at all. */
  private removedGiven: 'list' | 'null' | 'other' | undefined;
  private fileCount = 0;
  private removedCount = 0;

  constructor(private readonly limits: ArchiveLimits) {
    this.tally = new SiteTally(limits);
  }

  /** The body's `files`: an array stands for the list whose entries `file` then takes one by one (a reader of a stream passes an empty one). */
  filesField(value: unknown): void {
    if (!Array.isArray(value)) throw new ManifestRejected(FILES_NOT_A_LIST);
    this.filesGiven = true;
  }

  file(entry: unknown): void {
    const index = this.fileCount++;
    // No site has more: refused before the entry is looked at.
    if (index >= this.limits.maxFiles) throw new ManifestRejected(`more than ${this.limits.maxFiles} files and directories`);
    const raw = parseFile(entry, index);
    const path = sitePath(raw.path);
    // Before the tally, which would name the path as the rules write it, not as the entry does.
    if (this.tally.holdsFile(path)) throw new ManifestRejected(`duplicate path: ${shownName(raw.path)}`);
    const file = { path, size: raw.size, digest: raw.digest };
    this.tally.admit(file);
    this.files.push(file);
  }

  /** The body's `removed`, as `filesField` takes `files`; only a manifest with a base may have it. */
  removedField(value: unknown): void {
    this.removedGiven = Array.isArray(value) ? 'list' : value === null ? 'null' : 'other';
  }

  removed(raw: unknown): void {
    const index = this.removedCount++;
    if (index >= this.limits.maxFiles) throw new ManifestRejected(`removed lists more than ${this.limits.maxFiles} paths`);
    if (typeof raw !== 'string') throw new ManifestRejected(`removed[${index}] is not a string`);
    const path = differencePath(raw);
    if (this.gone.has(path)) throw new ManifestRejected(`path removed twice: ${shownName(raw)}`);
    this.gone.add(path);
  }

  /** The manifest is the whole site: it needs no `removed` and at least one file. */
  whole(): Manifest {
    if (this.removedGiven !== undefined) throw new ManifestRejected('removed needs a base');
    this.assertFilesGiven();
    if (this.files.length === 0) throw new ManifestRejected('site contains no files');
    return { files: this.files, objects: this.tally.objects, bytes: this.tally.bytes };
  }

  /** The manifest changes a base: its entries added or changed and the paths removed, for `applyManifestChanges`. */
  changes(): ManifestChanges {
    this.assertFilesGiven();
    if (this.removedGiven === 'other') throw new ManifestRejected(REMOVED_NOT_A_LIST);
    // Here, not as they come: without a base, `removed` is refused whole whatever it names.
    for (const path of this.gone) if (this.tally.holdsFile(path)) throw new ManifestRejected(`path both changed and removed: ${shownName(path)}`);
    return { files: this.files, removed: [...this.gone] };
  }

  private assertFilesGiven(): void {
    if (!this.filesGiven) throw new ManifestRejected(FILES_NOT_A_LIST);
  }
}

/** `files` and `removed` as JSON.parse gives them, read as a streamed body of that order would be. */
export function readParsedManifest(reader: ManifestReader, files: unknown, removed?: unknown): ManifestReader {
  reader.filesField(files);
  for (const entry of files as unknown[]) reader.file(entry);
  if (removed === undefined) return reader;
  reader.removedField(removed);
  if (Array.isArray(removed)) for (const raw of removed) reader.removed(raw);
  return reader;
}

/** The release a manifest is relative to, and the digest (manifest-digest.ts) of its files as the client believes them. */
export interface ManifestBase {
  readonly release: ReleaseId;
  readonly digest: Digest;
}

/** A base as the client sent it (parsed JSON of any shape). */
export function parseManifestBase(base: unknown): ManifestBase {
  if (typeof base !== 'object' || base === null || Array.isArray(base)) throw new ManifestRejected('base must be an object {release, digest}');
  const { release, digest } = base as Record<string, unknown>;
  if (typeof release !== 'string' || !ReleaseId.isReleaseId(release)) throw new ManifestRejected('base.release must be a release id (YYYYMMDDTHHMMSS)');
  if (!isDigest(digest)) throw new ManifestRejected('base.digest must be 64 lowercase hex digits (SHA-256)');
  return { release, digest };
}

/** A manifest relative to a base as the client sent it, its shape checked: entries added or changed, paths removed. */
export interface ManifestChanges {
  readonly files: readonly ManifestFile[];
  readonly removed: readonly string[];
}

/**
 * The entries and removed paths of a manifest relative to a base, checked on their own:
 * arrays, lengths within MAX_FILES, every entry well formed, every path one the path
 * rules take, none listed twice, none both changed and removed, and every rule over a
 * site the entries can break among themselves (ManifestReader). All of it before the
 * server reads a byte of the base, so a malformed request costs nothing but its parse.
 */
export function parseManifestChanges(files: unknown, removed: unknown, limits: ArchiveLimits): ManifestChanges {
  if (!Array.isArray(files)) throw new ManifestRejected(FILES_NOT_A_LIST);
  if (!Array.isArray(removed)) throw new ManifestRejected(REMOVED_NOT_A_LIST);
  // Before any entry is walked: a difference longer than any site it could make is refused.
  if (files.length > limits.maxFiles) throw new ManifestRejected(`more than ${limits.maxFiles} files and directories`);
  if (removed.length > limits.maxFiles) throw new ManifestRejected(`removed lists more than ${limits.maxFiles} paths`);
  return readParsedManifest(new ManifestReader(limits), files, removed).changes();
}

/**
 * A manifest relative to `base` (the files of a release the server has) made whole. A
 * removed path the base lacks is refused: it is a client whose idea of the base is wrong.
 * The site that results is then checked whole, exactly as a full manifest is. The
 * definition of the rule: the service applies changes to a packed base instead
 * (packed-changes.ts, checking only where they touch it), and a property test holds that
 * to this, byte for byte.
 */
export function applyManifestChanges(base: readonly ManifestFile[], changes: ManifestChanges, limits: ArchiveLimits): Manifest {
  const site = new Map(base.map((file) => [file.path, file]));
  for (const path of changes.removed) {
    if (!site.delete(path)) throw new ManifestRejected(`removed path is not in the base release: ${shownName(path)}`);
  }
  // Map order: a changed file keeps its place, an added one comes last.
  for (const file of changes.files) site.set(file.path, file);
  // Every entry is well formed already (the base's are a release's, the changes were
  // parsed): only the rules over the whole site are left to check.
  if (site.size > limits.maxFiles) throw new ManifestRejected(`more than ${limits.maxFiles} files and directories`);
  return checkedSite([...site.values()], limits);
}

/** Both steps at once, for a caller that has the base already. */
export function applyManifestDifference(base: readonly ManifestFile[], files: unknown, removed: unknown, limits: ArchiveLimits): Manifest {
  return applyManifestChanges(base, parseManifestChanges(files, removed, limits), limits);
}

/** A path of a difference as the base's are written; the path rules' refusals in a manifest's words. */
function differencePath(raw: string): string {
  try {
    return normaliseEntryPath(raw);
  } catch (error) {
    if (error instanceof ArchiveRejected) throw new ManifestRejected(error.reason);
    throw error;
  }
}

function parseFile(entry: unknown, index: number): { path: string; size: number; digest: Digest } {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new ManifestRejected(`files[${index}] is not an object`);
  const { path, size, digest } = entry as Record<string, unknown>;
  if (typeof path !== 'string') throw new ManifestRejected(`files[${index}].path is not a string`);
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) {
    throw new ManifestRejected(`size must be a whole number of bytes: ${shownName(path)}`);
  }
  if (!isDigest(digest)) throw new ManifestRejected(`digest must be 64 lowercase hex digits (SHA-256): ${shownName(path)}`);
  return { path, size, digest };
}

/** A manifest checked when its session opened, read back: its objects and bytes again. */
export function manifestOf(files: readonly ManifestFile[]): Manifest {
  const objects = new Map<Digest, number>();
  let bytes = 0;
  for (const file of files) {
    bytes += file.size;
    if (file.size > 0) objects.set(file.digest, file.size);
  }
  return { files, objects, bytes };
}
