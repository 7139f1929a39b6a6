import type { Readable } from 'node:stream';
import { create } from 'tar';
import type { SiteFolder } from './folder-manifest.js';

/**
 * A gzip-compressed tar of the folder's contents (never the folder itself), produced as
 * it is read: nothing is written to a temporary file. Empty directories travel too.
 */
export function packFolder(folder: SiteFolder): Readable {
  return create({ gzip: true, cwd: folder.root, portable: true }, folder.top) as unknown as Readable;
}
