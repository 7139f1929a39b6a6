import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { file, tgz, type RawEntry } from './tar-builder.js';

/**
 * A site whose every file names its version, so a test can tell a complete release
 * (all `files` present, one version throughout) from a partial or mixed one.
 */
export function versionedSite(version: string, files: number, bodyBytes = 64): Buffer {
  const entries: RawEntry[] = [];
  for (let i = 0; i < files; i += 1) {
    const filler = randomBytes(bodyBytes).toString('hex');
    entries.push(file(`d${i % 20}/page-${i}.html`, `${version}\n${filler}\n`));
  }
  entries.push(file('index.html', `${version}\n`));
  return tgz(entries);
}

/** The version a release directory holds throughout, or a description of what is wrong. */
export async function releaseVersion(dir: string, files: number): Promise<string> {
  const index = (await readFile(join(dir, 'index.html'), 'utf8')).split('\n')[0]!;
  let count = 0;
  for (const sub of await readdir(dir)) {
    if (sub === 'index.html') continue;
    for (const name of await readdir(join(dir, sub))) {
      const first = (await readFile(join(dir, sub, name), 'utf8')).split('\n')[0];
      if (first !== index) return `mixed: ${sub}/${name} is ${first}, index is ${index}`;
      count += 1;
    }
  }
  return count === files ? index : `partial: ${count} of ${files} files`;
}
