import { createHash } from 'node:crypto';
import { closeSync, lstatSync, openSync, readdirSync, readSync, type BigIntStats } from 'node:fs';
import { join } from 'node:path';
import { EMPTY_DIGEST, type ManifestFile } from '../../domain/manifest.js';

const isMissing = (error: unknown): boolean => (error as NodeJS.ErrnoException).code === 'ENOENT';
const OBJECT_REST = /^[0-9a-f]{63}$/;
/** Bytes of a file hashed per read, in the rare case its digest must come from its bytes. */
const READ_BYTES = 1024 * 1024;
/** Bytes hashed that cost a step as much as an lstat: a step of hashing stays as short as one of walking. */
const BYTES_PER_UNIT = 64 * 1024;

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
 * inode is named, then hashes the few files no object names (an EMLINK copy, or a file
 * whose object was replaced by such a copy). A few thousand lstats per step, as a probe
 * of the store, on the writer thread, between the batches of the deploys it is writing.
 *
 * The manifest is only ever compared with a client's digest of it before use, so a walk
 * racing another replica can cost a relative deploy its base, never a wrong release.
 */
export class ReleaseManifestWalk {
  private phase: 'release' | 'store' | 'hash' | 'done' = 'release';
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
  /** The manifest, or undefined when there is no such release; set once `step` returns true. */
  manifest: ManifestFile[] | undefined;

  constructor(
    private readonly release: string,
    private readonly store: string,
  ) {}

  /** Does up to `budget` syscalls' worth of work; true once the manifest is known. */
  step(budget: number): boolean {
    try {
      for (let left = budget; left > 0 && this.phase !== 'done'; ) {
        if (this.phase === 'release') this.walkRelease();
        else if (this.phase === 'store') this.walkStore();
        else left -= this.hashUnnamed();
        left -= 1;
      }
    } catch (error) {
      if (!(error instanceof ReleaseGone)) throw error;
      this.manifest = undefined;
      return true;
    }
    return this.phase === 'done';
  }

  private walkRelease(): void {
    if (this.identity === undefined) {
      this.identity = this.releaseIdentity();
      return;
    }
    const path = this.toMeasure.pop();
    if (path !== undefined) {
      const info = releaseRead(() => lstatSync(join(this.release, path), { bigint: true }));
      const found: Found = { path, size: Number(info.size), ino: info.ino, digest: info.size === 0n ? EMPTY_DIGEST : undefined };
      this.files.push(found);
      if (found.digest === undefined) this.unnamed.set(info.ino, [...(this.unnamed.get(info.ino) ?? []), found]);
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
      if (entry.isDirectory()) this.dirs.push(path);
      else if (entry.isFile()) this.toMeasure.push(path);
    }
  }

  private walkStore(): void {
    if (this.shards === undefined) {
      this.shards = (storeRead(() => readdirSync(this.store)) ?? []).filter((name) => /^[0-9a-f]$/.test(name));
      return;
    }
    const rest = this.objects.pop();
    if (rest === undefined) {
      const shard = this.shards.pop();
      if (shard === undefined) this.phase = 'hash';
      else {
        this.shard = shard;
        this.objects = (storeRead(() => readdirSync(join(this.store, shard))) ?? []).filter((name) => OBJECT_REST.test(name));
      }
      return;
    }
    const info = storeRead(() => lstatSync(join(this.store, this.shard, rest), { bigint: true }));
    if (info === undefined || info.dev !== this.identity!.dev) return;
    const named = this.unnamed.get(info.ino);
    if (named === undefined) return;
    for (const found of named) found.digest = this.shard + rest;
    this.unnamed.delete(info.ino);
    // Every file named: the rest of the store has nothing more to say.
    if (this.unnamed.size === 0) this.phase = 'hash';
  }

  /** Names the next file by its bytes if nothing else did; returns the step units the reading cost beyond one. */
  private hashUnnamed(): number {
    const found = this.files[this.hashing++];
    if (found === undefined) {
      // A release moved away while it was walked (pruned, its project deleted) is gone,
      // even if something else now has its name.
      const now = this.releaseIdentity();
      if (now.ino !== this.identity!.ino || now.dev !== this.identity!.dev) throw new ReleaseGone();
      this.manifest = this.files.map(({ path, size, digest }) => ({ path, size, digest: digest! }) as ManifestFile);
      this.phase = 'done';
      return 0;
    }
    if (found.digest !== undefined) return 0;
    found.digest = releaseRead(() => digestOf(join(this.release, found.path)));
    return Math.floor(found.size / BYTES_PER_UNIT);
  }

  private releaseIdentity(): BigIntStats {
    const info = releaseRead(() => lstatSync(this.release, { bigint: true }));
    if (!info.isDirectory()) throw new ReleaseGone();
    return info;
  }
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

function digestOf(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const sha256 = createHash('sha256');
    const buffer = Buffer.allocUnsafe(READ_BYTES);
    for (let read = readSync(fd, buffer); read > 0; read = readSync(fd, buffer)) sha256.update(buffer.subarray(0, read));
    return sha256.digest('hex');
  } finally {
    closeSync(fd);
  }
}
