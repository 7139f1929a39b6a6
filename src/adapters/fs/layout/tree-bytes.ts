import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isGeneratedSibling } from '../store/generated-siblings.js';
import { isMissing } from '../threads/fs-errors.js';


/** Files measured at once: enough to keep a disk busy, few enough not to exhaust descriptors. */
const PARALLEL = 32;

/**
 * The sizes of the regular files below `root`, added up: what a release's files hold, as a
 * deploy counts it (directories and their blocks are not counted, and links are never
 * followed). Whatever disappears while it is measured counts as nothing.
 */
export async function treeBytes(root: string): Promise<number> {
  let total = 0;
  const dirs = [root];
  for (let dir = dirs.pop(); dir !== undefined; dir = dirs.pop()) {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if (isMissing(error)) continue;
      throw error;
    }
    const files: string[] = [];
    for (const entry of entries) {
      if (entry.isDirectory()) dirs.push(join(dir, entry.name));
      else if (entry.isFile()) files.push(join(dir, entry.name));
    }
    for (let i = 0; i < files.length; i += PARALLEL) {
      // Compressed siblings sitedrop made are not the site's: a release counts what was uploaded.
      const sizes = await Promise.all(files.slice(i, i + PARALLEL).map((file) => lstat(file).then((s) => (isGeneratedSibling(file, s.mode) ? 0 : s.size), (error: unknown) => {
        if (isMissing(error)) return 0;
        throw error;
      })));
      for (const size of sizes) total += size;
    }
  }
  return total;
}
