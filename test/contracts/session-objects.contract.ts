import { describe, expect, it } from 'vitest';
import { ManifestRejected, ObjectsRejected } from '../../src/domain/errors.js';
import type { Digest } from '../../src/domain/manifest.js';
import { alice, blog, expecting, packed, bob, digestOf, docs, going, LIMITS, manifestOf, objectsOf, over, R1, R2, release, type DeploysUnderTest } from './deploys-under-test.js';

const S1 = '11111111111111111111111111111111';
const S2 = '22222222222222222222222222222222';
const sorted = (digests: readonly Digest[]): Digest[] => [...digests].sort();
const digests = (...contents: string[]): Digest[] => sorted(contents.map(digestOf));

/**
 * What every SessionObjects must do for the incremental deploy: tell what a user's store
 * lacks and nothing of another's, keep a session's uploads apart from the store until a
 * release built from them is committed, and keep nothing of a refused batch.
 */
export function sessionObjectsContract(name: string, open: () => Promise<DeploysUnderTest>): void {
  describe(`SessionObjects contract: ${name}`, () => {
    it("a new user's store lacks everything", over(open, async (d) => {
      expect(sorted(await d.objects.missing(alice, undefined, objectsOf('a', 'bb')))).toEqual(digests('a', 'bb'));
    }));

    it("a release's bytes join the store at its commit; a discarded one's never", over(open, async (d) => {
      const staged = await d.staging.stage(alice, d.archive(['one', 'two']), LIMITS, going());
      expect(sorted(await d.objects.missing(alice, undefined, objectsOf('one', 'two')))).toEqual(digests('one', 'two'));
      await d.store.commit(staged, alice, docs, R1);
      expect(await d.objects.missing(alice, undefined, objectsOf('one', 'two'))).toEqual([]);
      await d.staging.discard(await d.staging.stage(alice, d.archive(['three']), LIMITS, going()));
      expect(await d.objects.missing(alice, undefined, objectsOf('three'))).toEqual(digests('three'));
    }));

    it("one user's store never answers for another's", over(open, async (d) => {
      await release(d, alice, docs, R1, ['private']);
      expect(await d.objects.missing(bob, undefined, objectsOf('private'))).toEqual(digests('private'));
    }));

    it('refuses a size the store contradicts as a lie: ManifestRejected', over(open, async (d) => {
      await release(d, alice, docs, R1, ['four']);
      await expect(d.objects.missing(alice, undefined, new Map([[digestOf('four'), 5]]))).rejects.toBeInstanceOf(ManifestRejected);
    }));

    it('keeps a batch with its session, apart from the store and from other sessions', over(open, async (d) => {
      const wanted = objectsOf('a', 'bb', 'ccc');
      expect(await d.objects.receive(alice, S1, d.batch([[digestOf('a'), 'a'], [digestOf('bb'), 'bb']]), expecting(wanted), going())).toBe(2);
      expect(await d.objects.missing(alice, S1, wanted)).toEqual(digests('ccc'));
      expect(sorted(await d.objects.missing(alice, undefined, wanted))).toEqual(digests('a', 'bb', 'ccc'));
      expect(sorted(await d.objects.missing(alice, S2, wanted))).toEqual(digests('a', 'bb', 'ccc'));
      expect(await d.objects.sessionsWithUploads()).toEqual([S1]);
    }));

    it('counts an upload held at another size than now asked as missing, not as a lie: it was taken at the size asked then', over(open, async (d) => {
      await d.objects.receive(alice, S1, d.batch([[digestOf('taken'), 'taken']]), expecting(objectsOf('taken')), going());
      const other = new Map([[digestOf('taken'), 1]]);
      expect(await d.objects.missing(alice, S1, other)).toEqual(digests('taken'));
      expect(await d.objects.missing(alice, S1, other, { project: docs })).toEqual(digests('taken'));
    }));

    it("refuses a batch holding an object whose bytes are not its name, keeping none of the batch's", over(open, async (d) => {
      const wanted = objectsOf('a', 'b');
      const lying = d.batch([[digestOf('a'), 'a'], [digestOf('b'), 'c']]);
      await expect(d.objects.receive(alice, S1, lying, expecting(wanted), going())).rejects.toBeInstanceOf(ObjectsRejected);
      expect(sorted(await d.objects.missing(alice, S1, wanted))).toEqual(digests('a', 'b'));
      expect(await d.objects.sessionsWithUploads()).toEqual([]);
    }));

    it('refuses an object the manifest does not list, or at another size, and an empty batch', over(open, async (d) => {
      await expect(d.objects.receive(alice, S1, d.batch([[digestOf('z'), 'z']]), expecting(objectsOf('a')), going())).rejects.toBeInstanceOf(ObjectsRejected);
      await expect(d.objects.receive(alice, S1, d.batch([[digestOf('a'), 'a']]), expecting(new Map([[digestOf('a'), 2]])), going())).rejects.toBeInstanceOf(ObjectsRejected);
      await expect(d.objects.receive(alice, S1, d.batch([]), expecting(objectsOf('a')), going())).rejects.toBeInstanceOf(ObjectsRejected);
      expect(await d.objects.sessionsWithUploads()).toEqual([]);
    }));

    it("removeUploads takes the session's uploads", over(open, async (d) => {
      await d.objects.receive(alice, S1, d.batch([[digestOf('a'), 'a']]), expecting(objectsOf('a')), going());
      await d.objects.removeUploads(S1);
      expect(await d.objects.missing(alice, S1, objectsOf('a'))).toEqual(digests('a'));
      expect(await d.objects.sessionsWithUploads()).toEqual([]);
      expect(await d.leftovers()).toEqual([]);
    }));

    it('uploads a committed release was built from join the store, and stay once the session is gone; one it did not use never does', over(open, async (d) => {
      await d.objects.receive(alice, S1, d.batch([[digestOf('sent'), 'sent'], [digestOf('spare'), 'spare']]), expecting(objectsOf('sent', 'spare')), going());
      const staged = await d.staging.assemble(alice, S1, packed(manifestOf('sent')));
      expect(await d.objects.missing(alice, undefined, objectsOf('sent'))).toEqual(digests('sent'));
      await d.store.commit(staged, alice, docs, R1);
      await d.objects.removeUploads(S1);
      expect(await d.objects.missing(alice, undefined, objectsOf('sent', 'spare'))).toEqual(digests('spare'));
      expect(await d.served(alice, docs, R1)).toEqual(['sent']);
      expect(await d.leftovers()).toEqual([]);
    }));

    it("with a project's scope, only that project's releases answer, every one of them; another project's content is missing and no size is held against it", over(open, async (d) => {
      await release(d, alice, docs, R1, ['older']);
      await release(d, alice, docs, R2, ['live']);
      await release(d, alice, blog, R1, ['secret']);
      const asked = objectsOf('secret', 'older', 'nowhere', 'live');
      expect(sorted(await d.objects.missing(alice, undefined, asked, { project: docs }))).toEqual(digests('secret', 'nowhere'));
      expect(sorted(await d.objects.missing(alice, undefined, asked))).toEqual(digests('nowhere'));
      // Listed where the same object absent from the store would be, whichever comes first.
      const places = async (...contents: string[]) => {
        const missing = await d.objects.missing(alice, undefined, objectsOf(...contents), { project: docs });
        return missing.map((digest) => contents.map(digestOf).indexOf(digest));
      };
      expect(await places('nowhere', 'secret')).toEqual(await places('nowhere', 'nowhere either'));
      expect(await places('secret', 'nowhere')).toEqual(await places('nowhere either', 'nowhere'));
      expect(await d.objects.missing(alice, undefined, new Map([[digestOf('secret'), 99]]), { project: docs })).toEqual([digestOf('secret')]);
      await expect(d.objects.missing(alice, undefined, new Map([[digestOf('older'), 99]]), { project: docs })).rejects.toBeInstanceOf(ManifestRejected);
      expect(await d.objects.missing(alice, undefined, objectsOf('older'), { project: 'none' as typeof docs })).toEqual(digests('older'));
    }));

    it("with a project's scope, the session's own uploads answer too", over(open, async (d) => {
      await release(d, alice, blog, R1, ['secret']);
      await d.objects.receive(alice, S1, d.batch([[digestOf('sent'), 'sent']]), expecting(objectsOf('sent')), going());
      expect(await d.objects.missing(alice, S1, objectsOf('sent', 'secret'), { project: docs })).toEqual(digests('secret'));
    }));

    it('keeps an upload with its session even when the store has the object, and the store losing it changes nothing', over(open, async (d) => {
      await release(d, alice, blog, R1, ['z']);
      await d.objects.receive(alice, S1, d.batch([[digestOf('z'), 'z']]), expecting(objectsOf('z')), going());
      await d.store.removeRelease(alice, blog, R1);
      expect(await d.leftovers()).toEqual([]);
      expect(await d.objects.missing(alice, S1, objectsOf('z'))).toEqual([]);
      const staged = await d.staging.assemble(alice, S1, packed(manifestOf('z')));
      await d.store.commit(staged, alice, docs, R1);
      expect(await d.served(alice, docs, R1)).toEqual(['z']);
    }));

    it('shareUploads keeps with a session what others uploaded of the objects asked, at their sizes, whatever becomes of those', over(open, async (d) => {
      const S3 = '33333333333333333333333333333333';
      await d.objects.receive(alice, S1, d.batch([[digestOf('a'), 'a'], [digestOf('bb'), 'bb']]), expecting(objectsOf('a', 'bb')), going());
      await d.objects.receive(alice, S2, d.batch([[digestOf('ccc'), 'ccc']]), expecting(objectsOf('ccc')), going());
      const asked = new Map([...objectsOf('a', 'ccc', 'dddd'), [digestOf('bb'), 3]]);
      expect(sorted(await d.objects.shareUploads([S1, S2], S3, asked))).toEqual(digests('a', 'ccc'));
      await d.objects.removeUploads(S1);
      await d.objects.removeUploads(S2);
      expect(await d.objects.missing(alice, S3, objectsOf('a', 'ccc', 'dddd'))).toEqual(digests('dddd'));
      expect(await d.objects.sessionsWithUploads()).toEqual([S3]);
      expect(await d.objects.shareUploads([S1], S3, objectsOf('bb'))).toEqual([]);
    }));

    it("removing a user's files removes their store", over(open, async (d) => {
      await release(d, alice, docs, R1, ['x']);
      await d.store.removeUserFiles(alice);
      expect(await d.objects.missing(alice, undefined, objectsOf('x'))).toEqual(digests('x'));
    }));
  });
}
