import { createHash, type Hash } from 'node:crypto';
import { closeSync, lstatSync, openSync, readdirSync, readFileSync, readSync, type BigIntStats } from 'node:fs';
import { join } from 'node:path';
import { EMPTY_DIGEST, manifestOf, type ManifestFile } from '../../../domain/manifest.js';
import { PackedManifest } from '../../../domain/packed-manifest.js';
import { originOf } from '../layout/directory-origin.js';
import { isGeneratedSibling, SITEDROP_DIR } from '../store/generated-siblings.js';
import { describes, HEAD_BYTES_MAX, isWhole, parseKeptHead, readRecords, RECORDS_FORMAT } from '../store/kept-manifest-file.js';
import { digestOfEntry, isAsideShard, isShard } from '../store/object-names.js';
import { LOOKUP_BUDGET, type WriterTask } from './writer-task.js';
import { isMissing } from '../threads/fs-errors.js';

/** Bytes of a file read and hashed at a time, in the rare case its digest must come from its bytes. */
const READ_BYTES = 256 * 1024;
/**
 * Bytes hashed that cost about what an lstat does (SHA-256 does some 500 MB/s here): a
 * step of 4,096 units hashes at most 16 MiB, however large the file, so one file of a
 * gigabyte takes many steps, with other work between them.
 */
const BYTES_PER_UNIT = 4 * 1024;
let readBuffer: Buffer | undefined;

/** The release is not there (never was, or it went while it was walked). */
class ReleaseGone extends Error {}

interface Found {
  readonly path: string;
  readonly size: number;
  readonly ino: bigint;
  digest: string | undefined;
}

/**
 * A release's manifest (path, size, SHA-256 of every file), derived from the disk rather
 * than kept beside it: a release's files are hard links into the user's store, whose
 * objects are named by their digests, so a file's digest is the name of the object with
 * its inode. The walk lists the release (lstat each file), then the store until every
 * inode is named (under a new name or, in a store start-up has not finished renaming, an
 * old one: object-names.ts), then hashes the few files no object names (an EMLINK copy, or a file
 * whose object was replaced by such a copy). A few thousand lstats per step, as a probe
 * of the store, on the writer thread, between the batches of the deploys it is writing.
 *
 * The manifest is only ever compared with a client's digest of it before use, so a walk
 * racing another replica can cost a relative deploy its base, never a wrong release.
 */
export class ReleaseManifestWalk implements WriterTask<'manifest'> {
  readonly budget = LOOKUP_BUDGET;
  private phase: 'release' | 'records' | 'store' | 'hash' | 'done' = 'release';
  /** The records' bytes, and where the next to read starts, while phase is `records`. */
  private recorded: { readonly bytes: Buffer; at: number } | undefined;
  private identity: BigIntStats | undefined;
  private readonly dirs: string[] = [''];
  private readonly toMeasure: string[] = [];
  private readonly files: Found[] = [];
  /** Files to name, by inode: several paths of one release may share one. */
  private readonly unnamed = new Map<bigint, Found[]>();
  private shards: string[] | undefined;
  private shard = '';
  private objects: string[] = [];
  private hashing = 0;
  /** The file being hashed, read a piece per call. */
  private reading: { readonly found: Found; readonly fd: number; readonly sha256: Hash } | undefined;
  /**
   * The manifest packed, or undefined when there is no such release; set once `step`
   * returns true. Packed here: one buffer for the main thread, not 40,000 objects cloned
   * into its heap (docs/performance.md, where docs' memory goes).
   */
  private manifest: Uint8Array | undefined;

  constructor(
    private readonly release: string,
    private readonly store: string,
    /** A tarball writer's records (kept-manifest-file.ts): the manifest, without a walk, if they are this release's and whole. */
    private readonly records?: string,
  ) {}

  /** Does up to `budget` syscalls' worth of work; true once the manifest is known. */
  step(budget: number): boolean {
    try {
      for (let left = budget; left > 0 && this.phase !== 'done'; ) {
        if (this.phase === 'release') this.walkRelease();
        else if (this.phase === 'records') left -= this.readSomeRecords(left);
        else if (this.phase === 'store') this.walkStore();
        else left -= this.hashUnnamed();
        left -= 1;
      }
    } catch (error) {
      this.stopReading();
      if (!(error instanceof ReleaseGone)) throw error;
      this.manifest = undefined;
      return true;
    }
    return this.phase === 'done';
  }

  result(): Uint8Array | 'gone' {
    return this.manifest ?? 'gone';
  }

  private walkRelease(): void {
    if (this.identity === undefined) {
      this.identity = this.releaseIdentity();
      const bytes = this.records === undefined ? undefined : recordsOf(this.records, originOf(this.identity));
      if (bytes !== undefined) {
        this.recorded = { bytes, at: 0 };
        this.phase = 'records';
      }
      return;
    }
    const path = this.toMeasure.pop();
    if (path !== undefined) {
      const info = releaseRead(() => lstatSync(join(this.release, path), { bigint: true }));
      if (isGeneratedSibling(path, Number(info.mode))) return;
      const found: Found = { path, size: Number(info.size), ino: info.ino, digest: info.size === 0n ? EMPTY_DIGEST : undefined };
      this.files.push(found);
      if (found.digest === undefined) {
        // Pushed, not copied: a site of thousands of identical files shares one inode.
        const sharing = this.unnamed.get(info.ino);
        if (sharing) sharing.push(found);
        else this.unnamed.set(info.ino, [found]);
      }
      return;
    }
    const dir = this.dirs.pop();
    if (dir === undefined) {
      this.phase = this.unnamed.size > 0 ? 'store' : 'hash';
      return;
    }
    for (const entry of releaseRead(() => readdirSync(join(this.release, dir), { withFileTypes: true }))) {
      const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
      // A release holds directories and files only; anything else is not part of the site.
      if (entry.isDirectory()) {
        if (path !== SITEDROP_DIR) this.dirs.push(path);
      }
      else if (entry.isFile()) this.toMeasure.push(path);
    }
  }

  /** Reads up to `budget` of the records into the files; returns the budget used beyond one. Not whole records: walked instead. */
  private readSomeRecords(budget: number): number {
    const recorded = this.recorded!;
    const at = readRecords(recorded.bytes, recorded.at, budget, ({ path, size, digest }) => this.files.push({ path, size, ino: 0n, digest }));
    if (at === undefined) {
      this.files.length = 0;
      this.recorded = undefined;
      this.phase = 'release';
      return 0;
    }
    recorded.at = at;
    if (at === recorded.bytes.length) {
      this.recorded = undefined;
      // Every file named: straight to the end of the hashing phase, which packs them.
      this.hashing = this.files.length;
      this.phase = 'hash';
    }
    return budget - 1;
  }

  private walkStore(): void {
    if (this.shards === undefined) {
      this.shards = (storeRead(() => readdirSync(this.store)) ?? []).filter((name) => isShard(name) || isAsideShard(name));
      return;
    }
    const name = this.objects.pop();
    if (name === undefined) {
      const shard = this.shards.pop();
      if (shard === undefined) this.phase = 'hash';
      else {
        this.shard = shard;
        this.objects = storeRead(() => readdirSync(join(this.store, shard))) ?? [];
      }
      return;
    }
    const info = storeRead(() => lstatSync(join(this.store, this.shard, name), { bigint: true }));
    if (info === undefined || info.dev !== this.identity!.dev) return;
    const named = this.unnamed.get(info.ino);
    // Decoded only for a release's inode; a name that is no object's says no digest, and
    // the inode is named by another entry or hashed.
    const digest = named && digestOfEntry(this.shard, name);
    if (named === undefined || digest === undefined) return;
    for (const found of named) found.digest = digest;
    this.unnamed.delete(info.ino);
    // Every file named: the rest of the store has nothing more to say.
    if (this.unnamed.size === 0) this.phase = 'hash';
  }

  /** Names the next file by its bytes if nothing else did, a piece per call; returns the step units the reading cost beyond one. */
  private hashUnnamed(): number {
    if (this.reading) return this.readSome(this.reading);
    const found = this.files[this.hashing];
    if (found === undefined) {
      // A release moved away while it was walked (pruned, its project deleted) is gone,
      // even if something else now has its name.
      const now = this.releaseIdentity();
      if (now.ino !== this.identity!.ino || now.dev !== this.identity!.dev) throw new ReleaseGone();
      this.manifest = PackedManifest.pack(manifestOf(this.files.map(({ path, size, digest }) => ({ path, size, digest: digest! }) as ManifestFile))).packed;
      this.phase = 'done';
      return 0;
    }
    if (found.digest !== undefined) {
      this.hashing += 1;
      return 0;
    }
    const fd = releaseRead(() => openSync(join(this.release, found.path), 'r'));
    this.reading = { found, fd, sha256: createHash('sha256') };
    return 0;
  }

  private readSome(reading: { readonly found: Found; readonly fd: number; readonly sha256: Hash }): number {
    readBuffer ??= Buffer.allocUnsafe(READ_BYTES);
    let read: number;
    try {
      read = readSync(reading.fd, readBuffer);
    } catch (error) {
      this.stopReading();
      throw error;
    }
    if (read > 0) {
      reading.sha256.update(readBuffer.subarray(0, read));
      return Math.floor(read / BYTES_PER_UNIT);
    }
    reading.found.digest = reading.sha256.digest('hex');
    this.stopReading();
    this.hashing += 1;
    return 0;
  }

  private stopReading(): void {
    if (this.reading) closeSync(this.reading.fd);
    this.reading = undefined;
  }

  private releaseIdentity(): BigIntStats {
    const info = releaseRead(() => lstatSync(this.release, { bigint: true }));
    if (!info.isDirectory()) throw new ReleaseGone();
    return info;
  }
}

/**
 * The records `path` holds of the release of origin `origin` (kept-manifest-file.ts), or
 * undefined if it holds none: another release's, unfinished, damaged, not there, or not
 * readable (a walk stands in).
 */
function recordsOf(path: string, origin: string): Buffer | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch {
    return undefined;
  }
  const found = parseKeptHead(bytes.subarray(0, HEAD_BYTES_MAX));
  if (found?.head.format !== RECORDS_FORMAT || !describes(found.head, origin)) return undefined;
  const records = bytes.subarray(found.length);
  return isWhole(found.head, records) ? records : undefined;
}

/** A read of the release: a path that is not there means the release is not (or no longer) whole. */
function releaseRead<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (isMissing(error) || (error as NodeJS.ErrnoException).code === 'ENOTDIR') throw new ReleaseGone();
    throw error;
  }
}

/** A read of the store: an object collected meanwhile, or a store not made yet, is simply not there. */
function storeRead<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}
