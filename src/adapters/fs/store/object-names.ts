/**
 * An object's name on disk, in a user's store, a staging area's new objects and a
 * session's uploads (docs/content-store.md): `<shard>/<name>`, the name the whole SHA-256
 * digest in lowercase RFC 4648 base32 without padding (52 characters of a-z2-7), the shard
 * the digest's first hex digit (its first 4 bits: sixteen shards). The API and the wire
 * keep hex digests; only names on disk are base32.
 *
 * Why base32: ext4 charges a directory entry 8 bytes plus its name rounded up to 4, so a
 * 52-character name costs 60 bytes where 63 hex digits cost 72. Base64 would be shorter
 * but tells digests apart by case, and in a casefolded directory two would collide.
 * The name keeps the shard's 4 bits: without them it would be 51 characters, which cost
 * the same 52, and a name alone says its digest wherever it is. Sixteen shards: a few
 * blocks more on disk than one directory (docs/performance.md has the table), but a
 * store is listed a shard at a time, and sixteen keep the writer's listing of a large
 * store to a sixteenth of its names at once.
 *
 * Stores made before held names of 63 hex digits (the digest less its shard's digit);
 * start-up renames them (store-migration.ts, ObjectNameMigration), setting each such shard
 * aside as `<shard>.old` first, and until then the readers below take either.
 */

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const VALUES = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i += 1) VALUES[ALPHABET.charCodeAt(i)] = i;

const DIGEST_BYTES = 32;
export const NAME_LENGTH = 52;
const SHARD = /^[0-9a-f]$/;
const ASIDE = /^[0-9a-f]\.old$/;
const LEGACY_NAME = /^[0-9a-f]{63}$/;

/** The store name of a digest (32 bytes). */
export function objectName(digest: Uint8Array): string {
  if (digest.length !== DIGEST_BYTES) throw new Error(`a SHA-256 digest has ${DIGEST_BYTES} bytes, not ${digest.length}`);
  let name = '';
  let value = 0;
  let bits = 0;
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      name += ALPHABET[(value >>> bits) & 31];
    }
    value &= (1 << bits) - 1;
  }
  // 256 bits are 51 characters and one bit over, which a 52nd carries, zero-padded.
  return name + ALPHABET[(value << (5 - bits)) & 31];
}

/** The digest a store name says, or undefined if it is not one (each digest has exactly one name). */
export function digestOfName(name: string): Buffer | undefined {
  if (name.length !== NAME_LENGTH) return undefined;
  const digest = Buffer.allocUnsafe(DIGEST_BYTES);
  let value = 0;
  let bits = 0;
  let at = 0;
  for (let i = 0; i < NAME_LENGTH; i += 1) {
    const v = VALUES[name.charCodeAt(i)] ?? -1;
    if (v < 0) return undefined;
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      digest[at++] = value >>> bits;
      value &= (1 << bits) - 1;
    }
  }
  // The last character's four padding bits: any but zeros would be a second name for the digest.
  return value === 0 ? digest : undefined;
}

/** Where the object of a digest (bytes, or hex as the API has it) lives below a store: `<shard>/<name>`. */
export function objectPath(digest: Uint8Array | string): string {
  const bytes = typeof digest === 'string' ? Buffer.from(digest, 'hex') : digest;
  return `${shardOf(bytes)}/${objectName(bytes)}`;
}

/** Where a store made before base32 names keeps the object: `<shard>/<the other 63 hex digits>`. */
export function legacyObjectPath(digest: Uint8Array): string {
  const hex = Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength).toString('hex');
  return `${hex.slice(0, 1)}/${hex.slice(1)}`;
}

const shardOf = (digest: Uint8Array): string => (digest[0]! >>> 4).toString(16);

/** A shard of a store: objects under either name. */
export const isShard = (dir: string): boolean => SHARD.test(dir);

/** A shard the name migration set aside, to be emptied into a fresh directory of its name. */
export const isAsideShard = (dir: string): boolean => ASIDE.test(dir);

export const asideOf = (shard: string): string => `${shard}.old`;

/** An old object name: the 63 hex digits after its shard's. */
export const isLegacyName = (name: string): boolean => LEGACY_NAME.test(name);

/**
 * The hex digest a store entry (in a shard, or in a shard set aside) names, under the old
 * name or the new; undefined for anything else, including a new name in another shard
 * than its own: a reader that cannot name a file must find its digest another way.
 */
export function digestOfEntry(shard: string, name: string): string | undefined {
  if (!isShard(shard) && !isAsideShard(shard)) return undefined;
  const digit = shard.slice(0, 1);
  if (isLegacyName(name)) return digit + name;
  const hex = digestOfName(name)?.toString('hex');
  return hex?.startsWith(digit) ? hex : undefined;
}

/**
 * The first 30 bits of the digest a store name says, from its first six characters (30
 * bits exactly) without decoding the rest: the writer's hints of which objects a store
 * holds. NaN if those characters are not base32.
 */
export function first30BitsOfName(name: string): number {
  let bits = 0;
  for (let i = 0; i < 6; i += 1) {
    const v = VALUES[name.charCodeAt(i)] ?? -1;
    if (v < 0) return Number.NaN;
    bits = bits * 32 + v;
  }
  return bits;
}
