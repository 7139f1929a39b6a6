import { RESERVED_DIRECTORY } from '../../../domain/archive-policy.js';
import { PRECOMPRESSED_CODINGS, type PrecompressedCoding } from '../../../domain/precompressible.js';
import { objectPath } from './object-names.js';

/**
 * The compressed siblings sitedrop makes (`X.br`, `X.gz` beside a release's `X`) are hard
 * links to derived objects in the user's store, `<shard>/<name of X's object>.<coding>`:
 * keyed by the source's digest, in its shard, so any release of any project holding
 * those bytes links the sibling already made, and the store's collection (one link
 * left: no release uses it) takes it with everything else. The store's readers look at
 * 52-character names only, so a derived entry never passes for an object.
 *
 * Their mode, 0444, tells them from the site's own files, which are all 0644
 * (archive-policy.ts): a release's manifest and its counted bytes leave them out, so an
 * incremental deploy compares the uploaded files only, and an uploaded `X.br` is kept.
 */
export const GENERATED_SIBLING_MODE = 0o444;

/** Where the store keeps `coding`'s compression of the object of `digest`. */
export const derivedObjectPath = (digest: Uint8Array, coding: PrecompressedCoding): string => `${objectPath(digest)}.${coding}`;

/** A file sitedrop generated beside a release's file, not one the site holds. */
export function isGeneratedSibling(path: string, mode: number): boolean {
  return (mode & 0o7777) === GENERATED_SIBLING_MODE && PRECOMPRESSED_CODINGS.some((coding) => path.endsWith(`.${coding}`));
}

/** The release's own directory of what sitedrop adds (compiled rules): never part of the site's manifest. */
export const SITEDROP_DIR = RESERVED_DIRECTORY;
