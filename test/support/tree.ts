import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { sha256 } from './sha256.js';

/** Every path below `root` with what it is: a file's hash and mode, a link's target. */
export async function snapshot(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(dir: string): Promise<void> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    for (const name of names.sort()) {
      // SQLite's shared-memory index changes on reads (reader marks); it holds no data.
      if (name.endsWith('.db-shm')) continue;
      const path = join(dir, name);
      const info = await lstat(path);
      const key = relative(root, path);
      if (info.isSymbolicLink()) out[key] = `link -> ${await readlink(path)}`;
      else if (info.isDirectory()) {
        out[key] = `dir ${(info.mode & 0o7777).toString(8)}`;
        await walk(path);
      } else if (info.isFile()) {
        out[key] = `file ${(info.mode & 0o7777).toString(8)} ${sha256(await readFile(path)).slice(0, 16)}`;
      } else out[key] = 'special';
    }
  }
  await walk(root);
  return out;
}
