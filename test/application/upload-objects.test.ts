import { describe, expect, it } from 'vitest';
import { DeploySessionAccess } from '../../src/application/deploy-session-access.js';
import { OpenDeploySession } from '../../src/application/open-deploy-session.js';
import { ReviseDeploySession } from '../../src/application/revise-deploy-session.js';
import { UploadObjects } from '../../src/application/upload-objects.js';
import { ObjectsRejected, SessionUploadedAlready } from '../../src/domain/errors.js';
import { readParsedManifest, type Digest, type ManifestFile } from '../../src/domain/manifest.js';
import type { PackedManifest } from '../../src/domain/packed-manifest.js';
import { InMemoryDeploys, InMemoryDeploySessions } from '../support/fakes.js';
import { ALICE, KEY, keyedUser, OWNER } from '../support/keyed-user.js';
import { sha256 } from '../support/sha256.js';

const alice = ALICE;
const fileOf = (path: string, content: string): ManifestFile => ({ path, size: Buffer.byteLength(content), digest: sha256(content) });
/** A batch as the fake session objects read it: a line of digest and content per object. */
const batchOf = (...contents: string[]) =>
  (async function* () {
    yield Buffer.from(contents.map((content) => `${sha256(content)} ${content}`).join('\n'));
  })();

/** The fake, with a request of another's landing just before a batch's (or a share's) mark. */
class Meanwhile extends InMemoryDeploySessions {
  before: (() => Promise<void>) | undefined;

  override async beginUploads(id: string): Promise<number | undefined> {
    const before = this.before;
    this.before = undefined;
    await before?.();
    return super.beginUploads(id);
  }
}

async function world() {
  const { tokens, keys, clock, keyId } = await keyedUser();
  const disk = new InMemoryDeploys();
  disk.storeOf(alice).set(sha256('stored'), 'stored');
  const settings = { releasesKeep: 3, archiveLimits: { maxFiles: 10, maxBytes: 1000 }, sessions: { maxPerSigner: 8, ttlSeconds: 60 } };
  const sessions = new Meanwhile();
  const access = new DeploySessionAccess(sessions, disk.objects, tokens, keys, clock, settings, disk.store);
  const opener = new OpenDeploySession(sessions, disk.objects, disk.store, tokens, keys, clock, settings, disk.staging);
  const reviser = new ReviseDeploySession(access, sessions, disk.objects, disk.store, clock, settings, disk.staging);
  return {
    disk,
    sessions,
    open: (token: string, files: ManifestFile[]) =>
      opener.execute({ user: alice, token, ...(token === KEY && { keyId }), project: 'docs', preview: undefined, manifest: readParsedManifest(opener.reader(), files) }),
    revise: (token: string, id: string, files: ManifestFile[]) =>
      reviser.execute({ user: alice, token, id, project: undefined, preview: undefined, manifest: readParsedManifest(reviser.reader(), files) }),
    upload: (id: string, batch: AsyncIterable<Uint8Array>) => new UploadObjects(access, disk.objects, sessions).execute({ user: alice, token: OWNER, id, batch, signal: new AbortController().signal }),
  };
}

describe('a batch of objects, and uploads shared from a key\'s earlier sessions (with fakes)', () => {
  it('takes what its session may upload as it is once the batch has begun: objects found missing between its read and its mark', async () => {
    const w = await world();
    const opened = await w.open(OWNER, [fileOf('new.txt', 'new'), fileOf('stored.txt', 'stored')]);
    const { id } = opened.session;
    expect(opened.missing).toEqual([sha256('new')]);
    await expect(w.upload(id, batchOf('stored'))).rejects.toBeInstanceOf(ObjectsRejected);
    // A GET found the stored object lost, and its widening lands as the batch begins.
    w.sessions.before = async () => {
      const session = (await w.sessions.find(id))!;
      const unconfirmed = [sha256('new'), sha256('stored')] as Digest[];
      const holding = { manifest: session.manifest as PackedManifest, unconfirmed, uploadBytes: 9 };
      await w.sessions.replaceManifest(id, { holding, from: { version: session.version, beforeUploads: false }, expiresAt: session.expiresAt, now: new Date(0), userMaxBytes: undefined });
    };
    expect((await w.upload(id, batchOf('stored'))).stored).toBe(1);
  });

  it("a key's session that took the key's earlier uploads takes no other manifest: they were counted in the one it holds", async () => {
    const w = await world();
    const earlier = await w.open(KEY, [fileOf('a.txt', 'uploaded by the key')]);
    w.disk.uploads.set(earlier.session.id, new Map([[sha256('uploaded by the key') as Digest, 'uploaded by the key']]));
    const later = await w.open(KEY, [fileOf('a.txt', 'uploaded by the key')]);
    expect(later.missing).toEqual([]);
    await expect(w.revise(KEY, later.session.id, [fileOf('b.txt', 'another')])).rejects.toBeInstanceOf(SessionUploadedAlready);
  });

  it('shares nothing into a session a revision replaced before the mark', async () => {
    const w = await world();
    const earlier = await w.open(KEY, [fileOf('a.txt', 'uploaded by the key')]);
    const base = await w.open(KEY, [fileOf('c.txt', 'stored')]);
    w.disk.uploads.set(earlier.session.id, new Map([[sha256('uploaded by the key') as Digest, 'uploaded by the key']]));
    w.sessions.before = () => w.revise(KEY, base.session.id, [fileOf('c.txt', 'stored')]).then(() => undefined);
    const revised = await w.revise(KEY, base.session.id, [fileOf('a.txt', 'uploaded by the key')]);
    expect(revised.missing).toEqual([sha256('uploaded by the key')]);
    expect(w.disk.uploads.get(base.session.id)?.size ?? 0).toBe(0);
  });
});
