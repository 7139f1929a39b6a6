import { closeSync, constants, fchmodSync, mkdirSync, openSync, readFileSync, renameSync, rmdirSync, unlinkSync, writeSync } from 'node:fs';
import { PUBLISHED_DIRECTORY_MODE, PUBLISHED_FILE_MODE } from '../../../domain/archive-policy.js';
import { DIGEST_BYTES, OP_CLOSE, OP_CREATE, OP_LINK, OP_LINK_UPLOADED, OP_MKDIR, OP_PUT, OP_RMDIR, OP_UNLINK, OP_WRITE } from '../threads/fs-ops.js';
import { UPLOADS_MARK, type StagingObjects } from '../threads/fs-protocol.js';
import { isMissing } from '../threads/fs-errors.js';
import { legacyObjectPath, objectPath } from '../store/object-names.js';
import { ManifestRecords } from './manifest-records.js';
import { NewObjects } from './new-objects.js';
import { isIntact, linkIfThere, linkOrCopy, listStore, ObjectHints } from './object-links.js';

/** O_CREAT|O_EXCL: never follows a link or truncates anything already there. */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** One archive being written, from its batches of operations (fs-ops.ts). */
export class Target {
  private openFd: number | undefined;
  private openPath = '';
  /** The bytes written to the open file so far. */
  private openBytes = 0;
  /** A tarball's files as they are put in place, for its release to be a base without a walk. */
  private records: ManifestRecords | undefined;
  failed = false;
  /**
   * Objects the store holds and those the session uploaded, each listed once, at the
   * first file that looks, as hints: asking link(2) for every file instead would make a
   * failed call, and a thrown error, for every new one. A hint that is wrong (the store
   * changed meanwhile, or two digests share their first 30 bits) only costs a link that
   * fails or a copy not shared; nothing here trusts a hint further.
   */
  private stored: ObjectHints | undefined;
  private uploaded: ObjectHints | undefined;
  /** Uploads read and hashed already (an untrusted session's, linkUploaded), by name: a hint could pass one unread. */
  private readonly checked = new Set<string>();
  /** A tarball's new objects, or the uploads an assembly linked: the store adopts them from the release after the publish. */
  private readonly adoptLater: NewObjects | undefined;
  /** Whether the uploads are as they were checked (StagingObjects.boot): read once they are listed. */
  private uploadsTrusted: boolean | undefined;
  private spares = 0;
  /** Objects a LINK found in neither the store nor the uploads: the release cannot be built. */
  readonly missing = new Set<string>();

  constructor(
    private readonly root: string,
    /**
     * Where the job's files find bytes to share: the user's store (only read while
     * staging: a deploy refused later must leave it as it was), a session's uploads, the
     * job's own new objects; and what the files it writes are (docs/content-store.md).
     */
    private readonly objects: StagingObjects,
    /** The umask would strip the published modes: set them explicitly. */
    private readonly chmod: boolean,
  ) {
    this.adoptLater = objects.writes === 'release' || objects.uploads !== undefined ? new NewObjects() : undefined;
    if (objects.writes === 'release') this.records = ManifestRecords.open(root, objects.fresh);
  }

  /** A tarball's new objects or the uploads an assembly linked, packed, for the store to adopt after the publish; undefined for any other job. */
  newObjects(): Uint8Array | undefined {
    return this.adoptLater?.packed();
  }

  apply(batch: Uint8Array): void {
    const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
    let at = 0;
    while (at < batch.length) {
      const op = batch[at]!;
      if (op === OP_MKDIR || op === OP_CREATE || op === OP_PUT || op === OP_LINK || op === OP_LINK_UPLOADED || op === OP_UNLINK || op === OP_RMDIR) {
        const length = view.getUint16(at + 1);
        const path = `${this.root}/${utf8.decode(batch.subarray(at + 3, at + 3 + length))}`;
        at += 3 + length;
        if (op === OP_MKDIR) this.mkdir(path);
        // Neither follows a link: unlink(2) removes the name, rmdir(2) only an empty directory.
        else if (op === OP_UNLINK) unlinkSync(path);
        else if (op === OP_RMDIR) rmdirSync(path);
        else if (op === OP_CREATE) this.create(path);
        else if (op === OP_LINK || op === OP_LINK_UPLOADED) {
          this.linkObject(path, batch.subarray(at, at + DIGEST_BYTES), op === OP_LINK);
          at += DIGEST_BYTES;
        } else {
          const digest = batch.subarray(at, at + DIGEST_BYTES);
          const size = view.getUint32(at + DIGEST_BYTES);
          at += DIGEST_BYTES + 4;
          this.put(path, digest, batch.subarray(at, at + size));
          at += size;
        }
      } else if (op === OP_WRITE) {
        const length = view.getUint32(at + 1);
        if (this.openFd === undefined) throw new Error('file data arrived with no file open');
        writeFully(this.openFd, batch.subarray(at + 5, at + 5 + length));
        this.openBytes += length;
        at += 5 + length;
      } else if (op === OP_CLOSE) {
        this.closeAndShare(batch.subarray(at + 1, at + 1 + DIGEST_BYTES));
        at += 1 + DIGEST_BYTES;
      } else {
        throw new Error(`unknown file-system operation ${op}`);
      }
    }
  }

  /** The job is over: closes its open file, and finishes its records (those of a job the writer failed are left without a head: no manifest). */
  end(): void {
    const records = this.records;
    this.records = undefined;
    try {
      this.close();
    } catch (error) {
      records?.abandon();
      throw error;
    }
    if (this.failed) records?.abandon();
    else records?.finish();
  }

  private close(): void {
    const fd = this.openFd;
    this.openFd = undefined;
    if (fd !== undefined) closeSync(fd);
  }

  private mkdir(path: string): void {
    mkdirSync(path, PUBLISHED_DIRECTORY_MODE);
    if (!this.chmod) return;
    const fd = openSync(path, 'r');
    try {
      fchmodSync(fd, PUBLISHED_DIRECTORY_MODE);
    } finally {
      closeSync(fd);
    }
  }

  private create(path: string): void {
    if (this.openFd !== undefined) throw new Error('a file was created while another was open');
    this.openFd = openSync(path, CREATE_NEW, PUBLISHED_FILE_MODE);
    this.openPath = path;
    this.openBytes = 0;
    if (this.chmod) fchmodSync(this.openFd, PUBLISHED_FILE_MODE);
  }

  /**
   * A whole small file: one link(2) to the same bytes, stored or new in this deploy,
   * or, if there are none, written and kept as a new object.
   */
  private put(path: string, digest: Uint8Array, bytes: Uint8Array): void {
    // Empty files share nothing worth a link: each is an inode, as tar makes it. A batch's file is its object already.
    const name = bytes.length > 0 && this.objects.writes !== 'objects' ? objectPath(digest) : undefined;
    this.records?.add(path.slice(this.root.length + 1), digest, bytes.length);
    if (name !== undefined && this.linkShared(name, digest, path)) return;
    this.create(path);
    writeFully(this.openFd!, bytes);
    this.close();
    if (name !== undefined) this.keepAsNew(path, digest);
  }

  /**
   * Closes the open (large, so never empty) file and shares it: if its bytes are stored
   * already, or new in this deploy already, it is replaced by a link to them (rename(2)
   * over it, so the path is never missing), which frees its own copy; otherwise it
   * becomes a new object.
   */
  private closeAndShare(digest: Uint8Array): void {
    const path = this.openPath;
    if (this.openFd === undefined) throw new Error('a file was closed with none open');
    this.close();
    if (this.objects.writes === 'objects') return;
    this.records?.add(path.slice(this.root.length + 1), digest, this.openBytes);
    const name = objectPath(digest);
    const spare = this.spare();
    if (this.linkShared(name, digest, spare)) {
      renameSync(spare, path);
      return;
    }
    this.keepAsNew(path, digest);
  }

  /**
   * A file of an incremental deploy, from bytes the user already has: the session's
   * uploads (which join the store after the publish) or the store's. Not `fromStore`: a
   * deploy key's object its project does not hold, which only the session's uploads may give.
   */
  private linkObject(path: string, digest: Uint8Array, fromStore: boolean): void {
    // Once missing, missing for the whole job: an object that came back midway would
    // leave some of its files linked and some not, and the second part of a prepared
    // assembly, which links every file of an object this one missed, would find those
    // already there (EEXIST).
    if (this.missing.size > 0 && this.missing.has(Buffer.from(digest).toString('hex'))) return;
    const name = objectPath(digest);
    if (this.linkUploaded(name, digest, path)) return;
    const store = fromStore ? this.objects.store : undefined;
    if (store !== undefined && linkOrCopy(`${store}/${name}`, path)) return;
    // A store start-up has not renamed yet (object-names.ts) holds it under its old
    // name: a release relative to a base of before the upgrade links its files from there.
    // Looked for last, so that only an object about to be reported missing costs the look.
    if (store !== undefined && linkOrCopy(`${store}/${legacyObjectPath(digest)}`, path)) return;
    this.missing.add(Buffer.from(digest).toString('hex'));
  }

  /**
   * Links the session's uploaded object `name` as `path`, if the uploads hold it (listed
   * once, as hints: most files of a redeploy are the store's, and a failed link(2) for
   * each would cost a thrown error), and lists the first file of each for the store. An
   * upload not known to be of this boot may have lost bytes with the power: it is read
   * and hashed once before any file links it. The mark is read after the listing: a batch
   * of another machine's clears it before its objects land (upload-trust.ts).
   */
  private linkUploaded(name: string, digest: Uint8Array, path: string): boolean {
    const uploads = this.objects.uploads;
    if (uploads === undefined) return false;
    if (this.uploaded === undefined) {
      this.uploaded = listStore(uploads);
      this.uploadsTrusted = this.objects.boot !== undefined && readMark(uploads) === this.objects.boot;
    }
    if (!this.uploaded.has(digest)) return false;
    const object = `${uploads}/${name}`;
    if (!this.uploadsTrusted && !this.checked.has(name)) {
      if (!isIntact(object, digest)) return false;
      this.checked.add(name);
    }
    if (!linkOrCopy(object, path)) return false;
    if (this.adoptLater!.pathOf(digest) === undefined) this.adoptLater!.add(digest, path.slice(this.root.length + 1));
    return true;
  }

  /** Lists a file just written as a new object, where the release has it, for the store to adopt after the publish. */
  private keepAsNew(path: string, digest: Uint8Array): void {
    if (!this.adoptLater) throw new Error("a job that writes no release's new objects wrote a file");
    this.adoptLater.add(digest, path.slice(this.root.length + 1));
  }

  /** Links the object `name` as `path`, from this job's new objects or the store (if the job has one), if either has it. */
  private linkShared(name: string, digest: Uint8Array, path: string): boolean {
    const written = this.adoptLater?.pathOf(digest);
    if (written !== undefined && linkIfThere(`${this.root}/${written}`, path)) return true;
    const store = this.objects.store;
    if (store === undefined) return false;
    this.stored ??= listStore(store);
    return this.stored.has(digest) && linkIfThere(`${store}/${name}`, path);
  }

  /** A name for a temporary link, unique within the job's own directory beside its area (StagingObjects.fresh), which no other job uses. */
  private spare(): string {
    return `${this.objects.fresh}/tmp+${(this.spares += 1)}`;
  }
}

/** The uploads' mark (UPLOADS_MARK), or undefined if there is none. */
function readMark(uploads: string): string | undefined {
  try {
    return readFileSync(`${uploads}/${UPLOADS_MARK}`, 'utf8');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

function writeFully(fd: number, data: Uint8Array): void {
  let offset = 0;
  while (offset < data.length) offset += writeSync(fd, data, offset, data.length - offset);
}

