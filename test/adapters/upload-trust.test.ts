import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openUploads, uploadsTrusted } from '../../src/adapters/fs/staging/upload-trust.js';
import { alice, digestOf, expecting, going, objectsOf } from '../contracts/deploys-under-test.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { file, tgz } from '../support/tar-builder.js';

const S1 = '11111111111111111111111111111111';
const S2 = '22222222222222222222222222222222';
const ANOTHER_BOOT = '00000000-0000-4000-8000-000000000000';
const thisBoot = async (): Promise<string> => (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();

async function* once(bytes: Buffer): AsyncGenerator<Uint8Array> {
  yield bytes;
}
const batch = (...contents: string[]) => once(tgz(contents.map((content) => file(digestOf(content), content))));

describe("a session's uploads are trusted only in the boot that wrote them (real directories)", () => {
  let d: RealDeploys;
  beforeEach(async () => {
    d = await realDeploys('sitedrop-upload-trust-');
  });
  afterEach(async () => {
    await d.close();
  });

  it('a new uploads directory is made whole with this boot\'s mark, nothing left of its scratch; one there already keeps only this boot\'s mark', async () => {
    const made = join(d.root, 'made');
    const scratch = join(d.root, 'scratch');
    await openUploads(made, scratch);
    expect(await readFile(join(made, '.boot'), 'utf8')).toBe(await thisBoot());
    await expect(stat(scratch)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await uploadsTrusted(made)).toBe(true);
    await openUploads(made, scratch);
    expect(await uploadsTrusted(made)).toBe(true);

    // Made by a crash's leftovers, or by anything else: no mark, never trusted.
    const before = join(d.root, 'before');
    await mkdir(before);
    await openUploads(before, scratch);
    expect(await readdir(before)).toEqual([]);
    expect(await uploadsTrusted(before)).toBe(false);

    // Another boot's (this machine before a power loss, or another replica's machine): its mark goes before any object of ours lands.
    await writeFile(join(made, '.boot'), ANOTHER_BOOT);
    expect(await uploadsTrusted(made)).toBe(false);
    await openUploads(made, scratch);
    expect(await readdir(made)).toEqual([]);
    expect(await uploadsTrusted(made)).toBe(false);
    expect(await uploadsTrusted(join(d.root, 'nowhere'))).toBe(false);
  });

  it("a batch's uploads are marked with this boot; a batch into another boot's uploads leaves them unmarked", async () => {
    await d.objects.receive(alice, S1, batch('a', 'bb'), expecting(objectsOf('a', 'bb')), going());
    expect(await uploadsTrusted(d.tree.uploadsDir(S1))).toBe(true);
    await writeFile(join(d.tree.uploadsDir(S1), '.boot'), ANOTHER_BOOT);
    await d.objects.receive(alice, S1, batch('ccc'), expecting(objectsOf('ccc')), going());
    expect(await readdir(d.tree.uploadsDir(S1))).not.toContain('.boot');
    expect(await d.objects.missing(alice, S1, objectsOf('a', 'bb', 'ccc'))).toEqual([]);
    expect(await readdir(join(d.deploysRoot, '.fresh'))).toEqual([]);
  });

  it("another session's uploads of another boot are not shared: they are asked for again", async () => {
    await d.objects.receive(alice, S1, batch('a', 'bb'), expecting(objectsOf('a', 'bb')), going());
    await writeFile(join(d.tree.uploadsDir(S1), '.boot'), ANOTHER_BOOT);
    expect(await d.objects.shareUploads([S1], S2, objectsOf('a', 'bb'))).toEqual([]);
    await writeFile(join(d.tree.uploadsDir(S1), '.boot'), await thisBoot());
    expect((await d.objects.shareUploads([S1], S2, objectsOf('a', 'bb'))).sort()).toEqual([digestOf('a'), digestOf('bb')].sort());
    expect(await uploadsTrusted(d.tree.uploadsDir(S2))).toBe(true);
  });
});
