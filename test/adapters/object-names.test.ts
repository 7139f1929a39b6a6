import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  digestOfEntry,
  digestOfName,
  first30BitsOfName,
  isLegacyName,
  legacyObjectPath,
  NAME_LENGTH,
  objectName,
  objectPath,
} from '../../src/adapters/fs/store/object-names.js';
import { sha256Bytes } from '../support/sha256.js';

const digests = fc.uint8Array({ minLength: 32, maxLength: 32 });
const hex = (digest: Uint8Array): string => Buffer.from(digest).toString('hex');
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

/** RFC 4648 base32 written the slow way, one bit at a time, to hold the fast one to. */
function base32BitByBit(bytes: Uint8Array): string {
  const bits = [...bytes].map((b) => b.toString(2).padStart(8, '0')).join('');
  const padded = bits.padEnd(Math.ceil(bits.length / 5) * 5, '0');
  return (padded.match(/.{5}/g) ?? []).map((five) => ALPHABET[Number.parseInt(five, 2)]).join('');
}

describe('object names: a SHA-256 digest in lowercase base32, under a shard of its first hex digit', () => {
  it('is 52 characters of a-z2-7, RFC 4648 base32 without padding, and decodes to the same 32 bytes', () => {
    fc.assert(
      fc.property(digests, (digest) => {
        const name = objectName(digest);
        expect(name).toMatch(/^[a-z2-7]{52}$/);
        expect(name).toHaveLength(NAME_LENGTH);
        expect(name).toBe(base32BitByBit(digest));
        expect(hex(digestOfName(name)!)).toBe(hex(digest));
      }),
    );
  });

  it('RFC 4648 test vector, and the empty file', () => {
    // RFC 4648 section 10, lowercased: BASE32("foobar") = "MZXW6YTBOI======".
    expect(base32BitByBit(Buffer.from('foobar'))).toBe('mzxw6ytboi');
    const empty = sha256Bytes('');
    expect(objectName(empty)).toBe('4oymiquy7qobjgx36tejs35zeqt24qpemsnzgtfeswmrw6csxbkq');
  });

  it('two digests never share a name, whatever the case of the directory (no name differs from another only by case)', () => {
    fc.assert(
      fc.property(digests, digests, (a, b) => {
        fc.pre(hex(a) !== hex(b));
        expect(objectName(a).toLowerCase()).not.toBe(objectName(b).toLowerCase());
      }),
    );
  });

  it('takes no other name for a digest: wrong length, a character outside a-z2-7 (upper case too), padding bits set', () => {
    fc.assert(
      fc.property(digests, fc.nat({ max: NAME_LENGTH - 1 }), fc.constantFrom('A', 'Z', '0', '1', '8', '9', '=', '-', 'é', '/'), (digest, at, bad) => {
        const name = objectName(digest);
        expect(digestOfName(name.slice(0, at) + bad + name.slice(at + 1))).toBeUndefined();
      }),
    );
    fc.assert(
      fc.property(digests, (digest) => {
        const name = objectName(digest);
        expect(digestOfName(name.slice(1))).toBeUndefined();
        expect(digestOfName(`${name}a`)).toBeUndefined();
        // The last character carries one bit: only 'a' (0) and 'q' (16) leave the four padding bits zero.
        expect(name.at(-1)).toMatch(/^[aq]$/);
        for (const last of ALPHABET.replace(/[aq]/g, '')) expect(digestOfName(name.slice(0, -1) + last), last).toBeUndefined();
      }),
    );
  });

  it('the path: the shard is the first hex digit; from bytes or from hex the same', () => {
    fc.assert(
      fc.property(digests, (digest) => {
        const path = objectPath(digest);
        expect(path).toBe(`${hex(digest)[0]}/${objectName(digest)}`);
        expect(objectPath(hex(digest))).toBe(path);
      }),
    );
  });

  it('a store entry names its digest under the new name or the old, in its shard or the shard set aside; nothing else names one', () => {
    fc.assert(
      fc.property(digests, (digest) => {
        const h = hex(digest);
        const [shard, name] = objectPath(digest).split('/') as [string, string];
        const [oldShard, oldName] = legacyObjectPath(digest).split('/') as [string, string];
        expect(oldShard).toBe(shard);
        expect(isLegacyName(oldName)).toBe(true);
        expect(isLegacyName(name)).toBe(false);
        for (const dir of [shard, `${shard}.old`]) {
          expect(digestOfEntry(dir, name)).toBe(h);
          expect(digestOfEntry(dir, oldName)).toBe(h);
        }
        const otherShard = ((Number.parseInt(shard, 16) + 1) % 16).toString(16);
        expect(digestOfEntry(otherShard, name)).toBeUndefined();
        expect(digestOfEntry('tmp+1', name)).toBeUndefined();
        expect(digestOfEntry(`${shard}.new`, name)).toBeUndefined();
        expect(digestOfEntry(shard, oldName.slice(1))).toBeUndefined();
        expect(digestOfEntry(shard, `${name}.copy`)).toBeUndefined();
      }),
    );
  });

  it("the first six characters are the digest's first 30 bits (the writer's hints)", () => {
    fc.assert(
      fc.property(digests, (digest) => {
        const first30 = ((digest[0]! << 22) | (digest[1]! << 14) | (digest[2]! << 6) | (digest[3]! >>> 2)) >>> 0;
        expect(first30BitsOfName(objectName(digest))).toBe(first30);
      }),
    );
    expect(first30BitsOfName('0123456789abcdef')).toBeNaN();
  });
});
