import { randomBytes } from 'node:crypto';
import { rename, symlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDirectory, mkdirDurable } from '../layout/durability.js';

/**
 * Points the symlink `dir/name` at `target`, durably, for the live sites and previews
 * alike: a temporary link, then rename(2) over the old one, which replaces it atomically,
 * so the address never blanks. The temporary name carries the replica's, so a replica
 * starting up removes only its own leftovers (`isTemporaryLink`).
 */
export async function swapLink(dir: string, name: string, target: string, replica: string): Promise<void> {
  await mkdirDurable(dir);
  const temporary = join(dir, `.${name}.tmp+${replica}+${randomBytes(6).toString('hex')}`);
  await symlink(target, temporary);
  try {
    await rename(temporary, join(dir, name));
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  await fsyncDirectory(dir);
}

/** Whether `name` is a temporary link `swapLink` made for `replica` and a crash left. */
export function temporaryLinkOf(replica: string): RegExp {
  return new RegExp(`^\\..+\\.tmp\\+${replica.replace(/[.]/g, '\\.')}\\+[0-9a-f]+$`);
}
