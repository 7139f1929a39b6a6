import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Whether a session's uploads can be linked into a release as they are. An upload is
 * hashed as it is received, but not flushed to disk then (the publish's one syncfs covers
 * every batch), so only a machine that lost power since can have lost its bytes. The
 * uploads directory is marked with the boot it was made in (Linux's boot_id, new at each
 * start); while the machine runs that boot, every object in it is as it was checked. Any
 * other mark, or none, and the publish reads and hashes each object once before linking it.
 */

/** Written when the directory is made, before any object enters it; never changed. */
const MARK = '.boot';
const BOOT_ID = '/proc/sys/kernel/random/boot_id';

let boot: Promise<string | undefined> | undefined;

/** This machine's current boot; undefined where the system does not say (never trusted then). */
function machineBoot(): Promise<string | undefined> {
  boot ??= readFile(BOOT_ID, 'utf8').then(
    (id) => id.trim() || undefined,
    () => undefined,
  );
  return boot;
}

/**
 * Makes the uploads directory `dir`, marked with this boot, unless it is there already:
 * one made in another boot, or by anything else first, stays unmarked or marked otherwise.
 */
export async function openUploads(dir: string): Promise<void> {
  // Resolves to undefined when `dir` was there already.
  if ((await mkdir(dir, { recursive: true, mode: 0o755 })) === undefined) return;
  const id = await machineBoot();
  if (id !== undefined) await writeFile(join(dir, MARK), id, { flag: 'wx' });
}

/** Whether every object in the uploads `dir` was written during this boot of the machine. */
export async function uploadsTrusted(dir: string): Promise<boolean> {
  const id = await machineBoot();
  if (id === undefined) return false;
  try {
    return (await readFile(join(dir, MARK), 'utf8')) === id;
  } catch {
    return false;
  }
}
