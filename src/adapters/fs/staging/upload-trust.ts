import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isMissing } from '../threads/fs-errors.js';
import { UPLOADS_MARK } from '../threads/fs-protocol.js';

/**
 * Whether a session's uploads can be linked into a release as they are. An upload is
 * hashed as it is received, but not flushed to disk then (the publish's one syncfs covers
 * every batch), so only a machine that lost power since can have lost its bytes. The
 * uploads directory is made with a mark naming the boot it was made in (Linux's boot_id,
 * new at each start), and a batch that finds another boot's mark (an older boot of this
 * machine, or another replica's machine on shared storage) clears it before its own
 * objects land. While the mark names this boot, every object in the directory was written
 * in it; otherwise the publish reads and hashes each object once before linking it
 * (write-target.ts, which reads the mark after listing the uploads).
 */

const BOOT_ID = '/proc/sys/kernel/random/boot_id';

let boot: Promise<string | undefined> | undefined;

/** This machine's current boot; undefined where the system does not say (never trusted then). */
export function machineBoot(): Promise<string | undefined> {
  boot ??= readFile(BOOT_ID, 'utf8').then(
    (id) => id.trim() || undefined,
    () => undefined,
  );
  return boot;
}

/**
 * Readies the uploads directory `dir` for objects written now. Made whole with its mark in
 * `scratch` (a new path on the same filesystem) and renamed into place, it is never seen
 * without the mark; found there already with another boot's mark, it loses the mark first.
 */
export async function openUploads(dir: string, scratch: string): Promise<void> {
  const id = await machineBoot();
  if (!(await isThere(dir))) {
    await mkdir(scratch, { mode: 0o755 });
    try {
      if (id !== undefined) await writeFile(join(scratch, UPLOADS_MARK), id);
      await rename(scratch, dir);
      return;
    } catch (error) {
      // Made meanwhile by another batch, mark and all: that one is used.
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }
  const mark = await readMark(dir);
  if (mark !== undefined && mark !== id) await rm(join(dir, UPLOADS_MARK), { force: true });
}

/** Whether every object in the uploads `dir` was written during this boot of the machine. */
export async function uploadsTrusted(dir: string): Promise<boolean> {
  const id = await machineBoot();
  return id !== undefined && (await readMark(dir)) === id;
}

async function readMark(dir: string): Promise<string | undefined> {
  try {
    return await readFile(join(dir, UPLOADS_MARK), 'utf8');
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw error;
  }
}

async function isThere(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}
