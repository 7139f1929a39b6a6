import { describe, expect, it } from 'vitest';
import { ArchiveRejected, DeployAborted, MissingArchive, ObjectsMissing } from '../../src/domain/errors.js';
import { EMPTY_DIGEST } from '../../src/domain/manifest.js';
import { alice, blog, expecting, packed, bob, digestOf, docs, going, LIMITS, manifestOf, objectsOf, over, pathOf, R1, R2, release, type DeploysUnderTest } from './deploys-under-test.js';

const SESSION = '0123456789abcdef0123456789abcdef';

async function* nothing(): AsyncGenerator<Uint8Array> {}

/**
 * What every Staging must do for the use cases: a staged release counts its files and
 * bytes; a refused, empty, given-up or discarded one leaves nothing behind.
 */
export function stagingContract(name: string, open: () => Promise<DeploysUnderTest>): void {
  describe(`Staging contract: ${name}`, () => {
    it('stages an archive, counting its files and bytes', over(open, async (d) => {
      const staged = await d.staging.stage(alice, d.archive(['hello', 'world!', '']), LIMITS, going());
      expect(staged).toMatchObject({ files: 3, bytes: 11 });
    }));

    it('refuses an archive the policy refuses with ArchiveRejected, leaving nothing', over(open, async (d) => {
      await expect(d.staging.stage(alice, d.refusedArchive(), LIMITS, going())).rejects.toBeInstanceOf(ArchiveRejected);
      expect(await d.leftovers()).toEqual([]);
    }));

    it('refuses an empty upload with MissingArchive, leaving nothing', over(open, async (d) => {
      await expect(d.staging.stage(alice, nothing(), LIMITS, going())).rejects.toBeInstanceOf(MissingArchive);
      expect(await d.leftovers()).toEqual([]);
    }));

    it('gives up a stalled upload with DeployAborted as soon as the signal fires, leaving nothing', over(open, async (d) => {
      const archive = d.archive(['never finished']);
      const stop = new AbortController();
      // Given up once the upload has stalled: everything sent, the rest never coming.
      async function* stalled(): AsyncGenerator<Uint8Array> {
        yield* archive;
        stop.abort();
        await new Promise(() => undefined);
      }
      const staging = d.staging.stage(alice, stalled(), LIMITS, stop.signal);
      await expect(staging).rejects.toBeInstanceOf(DeployAborted);
      expect(await d.leftovers()).toEqual([]);
    }));

    it('discard leaves nothing, and nothing of it is ever served', over(open, async (d) => {
      const staged = await d.staging.stage(alice, d.archive(['gone']), LIMITS, going());
      await d.staging.discard(staged);
      expect(await d.leftovers()).toEqual([]);
      expect(await d.store.projects(alice)).toEqual([]);
    }));

    it('removeLeftovers removes a staging area a crash left, and names it', over(open, async (d) => {
      const staged = await d.staging.stage(alice, d.archive(['abandoned']), LIMITS, going());
      expect(await d.staging.removeLeftovers()).toEqual([staged.handle]);
      expect(await d.leftovers()).toEqual([]);
      expect(await d.staging.removeLeftovers()).toEqual([]);
    }));

    it('keeps stagings at once apart: one committed, the other discarded', over(open, async (d) => {
      const [kept, dropped] = await Promise.all([
        d.staging.stage(alice, d.archive(['kept']), LIMITS, going()),
        d.staging.stage(alice, d.archive(['dropped']), LIMITS, going()),
      ]);
      await d.store.commit(kept, alice, docs, R1);
      await d.staging.discard(dropped);
      expect(await d.served(alice, docs, R1)).toEqual(['kept']);
      expect(await d.leftovers()).toEqual([]);
    }));

    it("assembles a release from the user's store and the session's uploads, empty files made", over(open, async (d) => {
      await release(d, alice, docs, R1, ['stored']);
      expect(await d.objects.receive(alice, SESSION, d.batch([[digestOf('sent'), 'sent']]), expecting(objectsOf('sent')), going())).toBe(1);
      const staged = await d.staging.assemble(alice, SESSION, packed(manifestOf('stored', 'sent', '')));
      expect(staged).toMatchObject({ files: 3, bytes: 10 });
      await d.store.commit(staged, alice, docs, R2);
      expect(await d.served(alice, docs, R2)).toEqual(['stored', 'sent', '']);
    }));

    it('refuses to assemble with an object in neither, naming it: ObjectsMissing, leaving nothing', over(open, async (d) => {
      await release(d, alice, docs, R1, ['stored']);
      const assembling = d.staging.assemble(alice, SESSION, packed(manifestOf('stored', 'absent')));
      await expect(assembling).rejects.toBeInstanceOf(ObjectsMissing);
      await expect(assembling).rejects.toMatchObject({ digests: [digestOf('absent')] });
      expect(await d.leftovers()).toEqual([]);
    }));

    it("never assembles from another user's store", over(open, async (d) => {
      await release(d, bob, docs, R1, ['bob only']);
      await expect(d.staging.assemble(alice, SESSION, packed(manifestOf('bob only')))).rejects.toBeInstanceOf(ObjectsMissing);
      expect(await d.leftovers()).toEqual([]);
    }));

    it("a prepared release is finished by assemble with what was uploaded since, the store's files and empty ones kept", over(open, async (d) => {
      await release(d, alice, docs, R1, ['stored']);
      const manifest = packed(manifestOf('stored', 'sent', '', 'sent'));
      d.preparation.prepare(alice, SESSION, manifest, [digestOf('sent')]);
      expect(d.preparation.preparedSessions()).toEqual([SESSION]);
      expect(await d.objects.receive(alice, SESSION, d.batch([[digestOf('sent'), 'sent']]), expecting(objectsOf('sent')), going())).toBe(1);
      const staged = await d.staging.assemble(alice, SESSION, manifest);
      expect(d.preparation.preparedSessions()).toEqual([]);
      expect(staged).toMatchObject({ files: 4, bytes: 14 });
      await d.store.commit(staged, alice, docs, R2);
      expect(await d.served(alice, docs, R2)).toEqual(['stored', 'sent', '', 'sent']);
      expect(await d.leftovers()).toEqual([]);
    }));

    it('a prepared release whose object is in neither the store nor the uploads is refused at assemble like any: ObjectsMissing, leaving nothing', over(open, async (d) => {
      await release(d, alice, docs, R1, ['stored']);
      // Told nothing was missing, as when the store lost an object after the session opened.
      const manifest = packed(manifestOf('stored', 'absent'));
      d.preparation.prepare(alice, SESSION, manifest, []);
      const assembling = d.staging.assemble(alice, SESSION, manifest);
      await expect(assembling).rejects.toBeInstanceOf(ObjectsMissing);
      await expect(assembling).rejects.toMatchObject({ digests: [digestOf('absent')] });
      expect(await d.leftovers()).toEqual([]);
      // Uploaded, the next publish builds it whole.
      await d.objects.receive(alice, SESSION, d.batch([[digestOf('absent'), 'absent']]), expecting(objectsOf('absent')), going());
      const staged = await d.staging.assemble(alice, SESSION, manifest);
      await d.store.commit(staged, alice, docs, R2);
      expect(await d.served(alice, docs, R2)).toEqual(['stored', 'absent']);
    }));

    it('a prepared object the store had but the session was told was missing is linked all the same', over(open, async (d) => {
      await release(d, alice, docs, R1, ['stored', 'also stored']);
      const manifest = packed(manifestOf('stored', 'also stored'));
      d.preparation.prepare(alice, SESSION, manifest, [digestOf('also stored')]);
      const staged = await d.staging.assemble(alice, SESSION, manifest);
      await d.store.commit(staged, alice, docs, R2);
      expect(await d.served(alice, docs, R2)).toEqual(['stored', 'also stored']);
    }));

    it('forgetPrepared throws away what was prepared, leaving nothing; a later assemble builds the whole release', over(open, async (d) => {
      await release(d, alice, docs, R1, ['stored']);
      const manifest = packed(manifestOf('stored', ''));
      d.preparation.prepare(alice, SESSION, manifest, []);
      await d.preparation.forgetPrepared(SESSION);
      expect(d.preparation.preparedSessions()).toEqual([]);
      expect(await d.leftovers()).toEqual([]);
      await d.preparation.forgetPrepared(SESSION);
      const staged = await d.staging.assemble(alice, SESSION, manifest);
      await d.store.commit(staged, alice, docs, R2);
      expect(await d.served(alice, docs, R2)).toEqual(['stored', '']);
    }));

    it("forgetPreparedFor throws away what was prepared for the user's sessions, and only theirs", over(open, async (d) => {
      await release(d, alice, docs, R1, ['stored']);
      await release(d, bob, docs, R1, ['stored']);
      const manifest = packed(manifestOf('stored'));
      const bobs = 'b'.repeat(32);
      d.preparation.prepare(alice, SESSION, manifest, []);
      d.preparation.prepare(bob, bobs, manifest, []);
      await d.preparation.forgetPreparedFor(alice);
      expect(d.preparation.preparedSessions()).toEqual([bobs]);
      await d.preparation.forgetPrepared(bobs);
      expect(await d.leftovers()).toEqual([]);
    }));

    it("a release prepared for one user never takes another's store, nor serves another user's assemble", over(open, async (d) => {
      await release(d, bob, docs, R1, ['bob only']);
      const manifest = packed(manifestOf('bob only'));
      d.preparation.prepare(alice, SESSION, manifest, []);
      await expect(d.staging.assemble(alice, SESSION, manifest)).rejects.toBeInstanceOf(ObjectsMissing);
      // Prepared for bob (his store has it), assembled as alice (hers has not): refused.
      d.preparation.prepare(bob, SESSION, manifest, []);
      await expect(d.staging.assemble(alice, SESSION, manifest)).rejects.toBeInstanceOf(ObjectsMissing);
      d.preparation.prepare(alice, SESSION, manifest, []);
      const staged = await d.staging.assemble(bob, SESSION, manifest);
      await d.store.commit(staged, bob, blog, R2);
      expect(await d.served(bob, blog, R2)).toEqual(['bob only']);
      expect(await d.leftovers()).toEqual([]);
    }));

    it("with a project's scope, assembles from that project's releases and the session's uploads only: another project's object is ObjectsMissing, leaving nothing", over(open, async (d) => {
      await release(d, alice, docs, R1, ['ours']);
      await release(d, alice, blog, R1, ['theirs']);
      await d.objects.receive(alice, SESSION, d.batch([[digestOf('sent'), 'sent']]), expecting(objectsOf('sent')), going());
      const theirs = d.staging.assemble(alice, SESSION, packed(manifestOf('ours', 'theirs', 'sent')), { project: docs });
      await expect(theirs).rejects.toBeInstanceOf(ObjectsMissing);
      await expect(theirs).rejects.toMatchObject({ digests: [digestOf('theirs')] });
      expect(await d.leftovers()).toEqual([]);
      // Uploaded by the session, the same bytes are its own; and the owner's own token takes them from the store.
      await d.objects.receive(alice, SESSION, d.batch([[digestOf('theirs'), 'theirs']]), expecting(objectsOf('theirs')), going());
      const staged = await d.staging.assemble(alice, SESSION, packed(manifestOf('ours', 'theirs', 'sent')), { project: docs });
      await d.store.commit(staged, alice, docs, R2);
      expect(await d.served(alice, docs, R2)).toEqual(['ours', 'theirs', 'sent']);
      await d.staging.discard(await d.staging.assemble(alice, 'f'.repeat(32), packed(manifestOf('theirs'))));
    }));

    it("with a project's scope, a release prepared while the project held an object is built whole once it no longer does: ObjectsMissing", over(open, async (d) => {
      await release(d, alice, docs, R1, ['shared']);
      await release(d, alice, blog, R1, ['shared']);
      const manifest = packed(manifestOf('shared'));
      d.preparation.prepare(alice, SESSION, manifest, []);
      await d.store.removeRelease(alice, docs, R1);
      await d.leftovers();
      const assembling = d.staging.assemble(alice, SESSION, manifest, { project: docs });
      await expect(assembling).rejects.toBeInstanceOf(ObjectsMissing);
      await expect(assembling).rejects.toMatchObject({ digests: [digestOf('shared')] });
      expect(d.preparation.preparedSessions()).toEqual([]);
      expect(await d.leftovers()).toEqual([]);
    }));

    it('assembles a site of empty files from nothing stored', over(open, async (d) => {
      const staged = await d.staging.assemble(alice, SESSION, packed([{ path: pathOf(0), size: 0, digest: EMPTY_DIGEST }]));
      expect(staged).toMatchObject({ files: 1, bytes: 0 });
    }));
  });
}
