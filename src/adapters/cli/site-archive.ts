import type { Readable } from 'node:stream';
import type { SiteFolder } from './folder-manifest.js';
import { packTar } from './tar-packer.js';

/**
 * A gzip-compressed tar of the folder's contents (never the folder itself), produced as
 * it is read: nothing is written to a temporary file. Empty directories travel too.
 * Packed by tar-packer.ts rather than node-tar's writer, whose asynchronous calls per
 * file took several times as long (docs/performance.md).
 */
export function packFolder(folder: SiteFolder): Readable {
  return packTar(folder.root, folder.directories, folder.files.map((path) => ({ name: path, path })));
}
