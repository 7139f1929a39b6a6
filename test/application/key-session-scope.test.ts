import { describe, expect, it } from 'vitest';
import { DeploySessionAccess } from '../../src/application/deploy-session-access.js';
import { OpenDeploySession } from '../../src/application/open-deploy-session.js';
import { PruneReleases } from '../../src/application/prune-releases.js';
import { PublishDeploySession } from '../../src/application/publish-deploy-session.js';
import { PublishRelease } from '../../src/application/publish-release.js';
import { ShowDeploySession } from '../../src/application/show-deploy-session.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { ObjectsMissing } from '../../src/domain/errors.js';
import { readParsedManifest, type ManifestFile } from '../../src/domain/manifest.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import { InMemoryDeployRecords, InMemoryDeploys, InMemoryDeploySessions, InMemoryPreviewLinks, InMemoryWebServer, QueuedPrecompression } from '../support/fakes.js';
import { ALICE, KEY, keyedUser, OWNER } from '../support/keyed-user.js';
import { sha256 } from '../support/sha256.js';

const alice = ALICE;
const fileOf = (path: string, content: string): ManifestFile => ({ path, size: Buffer.byteLength(content), digest: sha256(content) });

/** alice's `docs` and `internal`, each with a release, and a deploy key of `docs`. */
async function world() {
  const { tokens, keys, clock, keyId } = await keyedUser();
  const disk = new InMemoryDeploys();
  for (const [project, content] of [['docs', 'docs page'], ['internal', 'the pin']] as const) {
    disk.tree.set(`alice/${project}`, new Map([['20261123T120000' as ReleaseId, [{ path: 'index.html', content }]]]));
    disk.storeOf(alice).set(sha256(content), content);
  }
  const settings = { releasesKeep: 3, archiveLimits: { maxFiles: 10, maxBytes: 1000 }, sessions: { maxPerSigner: 8, ttlSeconds: 60 } };
  const previews = new InMemoryPreviewLinks(clock);
  const records = new InMemoryDeployRecords();
  const publisher = new PublishRelease(tokens, disk.store, disk.staging, new InProcessDeployLock(), clock, settings, new PruneReleases(disk.store, settings, previews, clock, records), records, keys, previews, disk.rules, new InMemoryWebServer(), new QueuedPrecompression());
  const sessions = new InMemoryDeploySessions();
  const access = new DeploySessionAccess(sessions, disk.objects, tokens, keys, clock, settings, disk.store);
  return {
    disk,
    open: (token: string, files: ManifestFile[]) => {
      const opener = new OpenDeploySession(sessions, disk.objects, disk.store, tokens, keys, clock, settings, disk.staging);
      return opener.execute({
        user: alice,
        token,
        ...(token === KEY && { keyId }),
        project: 'docs',
        preview: undefined,
        manifest: readParsedManifest(opener.reader(), files),
      });
    },
    show: (token: string, id: string) => new ShowDeploySession(access).execute({ user: alice, token, id }),
    publish: (token: string, id: string) => new PublishDeploySession(access, sessions, disk.staging, disk.objects, publisher, clock).execute({ user: alice, token, id }),
  };
}

describe("a deploy key's session draws on its project's content alone (objectScope)", () => {
  it("is told another project's content is missing, at the open, later, and at the publish; the owner's token is not", async () => {
    const w = await world();
    const files = [fileOf('index.html', 'docs page'), fileOf('pin.txt', 'the pin')];
    const byKey = await w.open(KEY, files);
    expect(byKey.missing).toEqual([sha256('the pin')]);
    expect((await w.show(KEY, byKey.session.id)).missing).toEqual([sha256('the pin')]);
    await expect(w.publish(KEY, byKey.session.id)).rejects.toBeInstanceOf(ObjectsMissing);
    const byOwner = await w.open(OWNER, files);
    expect(byOwner.missing).toEqual([]);
    await w.publish(OWNER, byOwner.session.id);
  });

  it("keeps what the key's earlier sessions uploaded, and nothing the owner's did", async () => {
    const w = await world();
    const earlier = await w.open(KEY, [fileOf('a.txt', 'uploaded by the key')]);
    w.disk.uploads.set(earlier.session.id, new Map([[sha256('uploaded by the key'), 'uploaded by the key']]));
    const owners = await w.open(OWNER, [fileOf('b.txt', 'uploaded by the owner')]);
    w.disk.uploads.set(owners.session.id, new Map([[sha256('uploaded by the owner'), 'uploaded by the owner']]));
    const later = await w.open(KEY, [fileOf('a.txt', 'uploaded by the key'), fileOf('b.txt', 'uploaded by the owner')]);
    expect(later.missing).toEqual([sha256('uploaded by the owner')]);
    w.disk.uploads.delete(earlier.session.id);
    expect((await w.show(KEY, later.session.id)).missing).toEqual([sha256('uploaded by the owner')]);
  });
});
