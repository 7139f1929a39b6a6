import { RESERVED_DIRECTORY } from '../../../domain/archive-policy.js';
import { PRECOMPRESSED_CODINGS, type PrecompressedCoding } from '../../../domain/precompressible.js';
import { objectPath } from './object-names.js';

/**
 * The compressed siblings sitedrop makes (`X.br`, `X.gz` beside a release's `X`) are hard
 * links to derived objects in the user's store, `<shard>.derived/<name of X's
 * object>.<coding>`: keyed by the source's digest, so any release of any project holding
 * those bytes links the sibling already made, and the store's collection (one link left:
 * no release uses it) walks their shards with the objects' and takes it with everything
 * else. Shards of their own: every deploy lists the objects' shards, and with siblings
 * beside them they held three names for each text file. (Stores from before keep theirs in
 * the objects' shards until their releases go; the readers look at 52-character names
 * only, so a derived entry never passes for an object.)
 *
 * Their mode, 0444, tells them from the site's own files, which are all 0644
 * (archive-policy.ts): a release's manifest and its counted bytes leave them out, so an
 * incremental deploy compares the uploaded files only, and an uploaded `X.br` is kept.
 */
export const GENERATED_SIBLING_MODE = 0o444;

/** Where the store keeps `coding`'s compression of the object of `digest`. */
export function derivedObjectPath(digest: Uint8Array, coding: PrecompressedCoding): string {
  const [shard, name] = objectPath(digest).split('/') as [string, string];
  return `${shard}${DERIVED_SHARD_SUFFIX}/${name}.${coding}`;
}

/** What names a derived objects' shard beside the objects' shard of the same digit: never a shard to the objects' readers. */
export const DERIVED_SHARD_SUFFIX = '.derived';

/** A file sitedrop generated beside a release's file, not one the site holds. */
export function isGeneratedSibling(path: string, mode: number): boolean {
  return (mode & 0o7777) === GENERATED_SIBLING_MODE && PRECOMPRESSED_CODINGS.some((coding) => path.endsWith(`.${coding}`));
}

/** The release's own directory of what sitedrop adds (compiled rules): never part of the site's manifest. */
export const SITEDROP_DIR = RESERVED_DIRECTORY;
