import { lstat, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Readable } from 'node:stream';
import { create } from 'tar';

/** A problem with what the user asked to deploy, found before anything is sent (exit code 2). */
export class UsageError extends Error {}

export interface PackedSite {
  readonly stream: Readable;
  readonly warnings: string[];
}

/**
 * Checks a build folder the way the server will, so mistakes are named here: links are
 * refused (the server rejects them), an empty folder is refused, a missing index.html
 * is worth a warning. Nothing is skipped silently.
 */
async function inspect(root: string): Promise<{ entries: string[]; warnings: string[] }> {
  const entries = (await readdir(root)).sort();
  if (entries.length === 0) throw new UsageError(`${root} is empty: there is nothing to deploy`);
  const walk = async (dir: string): Promise<void> => {
    for (const name of await readdir(dir)) {
      const path = join(dir, name);
      const info = await lstat(path);
      if (info.isSymbolicLink()) throw new UsageError(`${relative(root, path)} is a symbolic link: the server refuses links, replace it with the file it points to`);
      if (info.isDirectory()) await walk(path);
      else if (!info.isFile()) throw new UsageError(`${relative(root, path)} is not a regular file or directory`);
    }
  };
  await walk(root);
  const warnings = entries.includes('index.html') ? [] : [`${root} has no index.html at its root: the site's address will show no page`];
  return { entries, warnings };
}

/**
 * A gzip-compressed tar of the folder's contents (never the folder itself), produced as
 * it is read: nothing is written to a temporary file.
 */
export async function packFolder(root: string): Promise<PackedSite> {
  const { entries, warnings } = await inspect(root);
  const stream = create({ gzip: true, cwd: root, portable: true }, entries) as unknown as Readable;
  return { stream, warnings };
}
