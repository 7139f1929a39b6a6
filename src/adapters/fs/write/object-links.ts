import { createHash } from 'node:crypto';
import { closeSync, constants, copyFileSync, linkSync, openSync, readdirSync, readSync, unlinkSync } from 'node:fs';
import { isMissing } from '../threads/fs-errors.js';
import { first30BitsOfName, isShard, NAME_LENGTH } from '../store/object-names.js';

export const errorCode = (error: unknown): string | undefined => (error as NodeJS.ErrnoException).code;

/**
 * Which objects there may be, by the first 30 bits of each digest: a small integer per
 * object. A set of the names themselves took some 110 bytes per object of the writer's
 * heap (40,000 objects: 4-5 MiB, and as much again for a first deploy's new ones), kept
 * at its high-water mark in the process's memory after the deploy (docs/performance.md).
 * 30 bits keep every key a small integer; a miss is certain, a hit only likely.
 */
export class ObjectHints {
  private readonly keys = new Set<number>();

  add(digest: Uint8Array): void {
    this.keys.add(hintOf(digest));
  }

  has(digest: Uint8Array): boolean {
    return this.keys.has(hintOf(digest));
  }

  addName(name: string): void {
    const hint = first30BitsOfName(name);
    if (!Number.isNaN(hint)) this.keys.add(hint);
  }
}

/** The first 30 bits of a digest, a small integer. */
export const hintOf = (digest: Uint8Array): number => ((digest[0]! << 22) | (digest[1]! << 14) | (digest[2]! << 6) | (digest[3]! >>> 2)) >>> 0;

/** Every object of a store, as hints; none if it does not exist yet. */
export function listStore(store: string): ObjectHints {
  const hints = new ObjectHints();
  let shards: string[];
  try {
    shards = readdirSync(store);
  } catch (error) {
    if (isMissing(error)) return hints;
    throw error;
  }
  for (const shard of shards) {
    // Objects still under their old names, or in a shard set aside while they are
    // renamed, are not looked for: missing them costs only their sharing.
    if (!isShard(shard)) continue;
    for (const name of readdirSync(`${store}/${shard}`)) if (name.length === NAME_LENGTH) hints.addName(name);
  }
  return hints;
}

/** Links `object` as `path`; false if there is no such object, or it has all the links it may. */
export function linkIfThere(object: string, path: string): boolean {
  try {
    linkSync(object, path);
    return true;
  } catch (error) {
    // ENOENT: not stored (or just collected); EMLINK: shared as often as the filesystem allows.
    if (errorCode(error) === 'ENOENT' || errorCode(error) === 'EMLINK') return false;
    throw error;
  }
}

/**
 * Whether an uploaded object still holds the bytes its name says. Batches are not
 * flushed to disk when they are taken (the publish's one flush covers them), so a
 * machine that lost power since may have left an object short or empty: it is read and
 * hashed again here, once, before any release links it, and one that fails is removed
 * and asked for again. Only new bytes are read: what the store has is flushed already.
 */
export function isIntact(object: string, digest: Uint8Array): boolean {
  let fd: number;
  try {
    fd = openSync(object, 'r');
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
  const sha256 = createHash('sha256');
  try {
    for (let read = readSync(fd, PIECE); read > 0; read = readSync(fd, PIECE)) sha256.update(PIECE.subarray(0, read));
  } finally {
    closeSync(fd);
  }
  if (sha256.digest().equals(digest)) return true;
  unlinkSync(object);
  return false;
}

/** isIntact reads a piece at a time into this: an uploaded video read whole would be its size again in the writer's heap. */
const PIECE = Buffer.allocUnsafe(1024 * 1024);

/**
 * Links `object` as `path`, or copies it when it has all the links the filesystem
 * allows (ext4: 65,000); false if there is no such object.
 */
export function linkOrCopy(object: string, path: string): boolean {
  try {
    linkSync(object, path);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    if (errorCode(error) !== 'EMLINK') throw error;
  }
  copyFileSync(object, path, constants.COPYFILE_EXCL);
  return true;
}

