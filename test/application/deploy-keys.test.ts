import { describe, expect, it } from 'vitest';
import { AuthenticateDeployer } from '../../src/application/authenticate-deployer.js';
import { CreateDeployKey } from '../../src/application/create-deploy-key.js';
import { DeployRelease } from '../../src/application/deploy-release.js';
import { PublishRelease } from '../../src/application/publish-release.js';
import { ListDeployKeys } from '../../src/application/list-deploy-keys.js';
import { PruneReleases } from '../../src/application/prune-releases.js';
import { RevokeDeployKey } from '../../src/application/revoke-deploy-key.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { DeployKeyNotFound, InvalidProjectName, Unauthorized } from '../../src/domain/errors.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import { bytes, FixedClock, InMemoryDeployKeyStore, InMemoryPreviewLinks, InMemoryDeployRecords, InMemoryDeploys, InMemoryDeploySessions, InMemoryTokenStore, SequenceTokenGenerator, InMemoryWebServer, QueuedPrecompression } from '../support/fakes.js';

const alice = 'alice' as Username;

async function world() {
  const tokens = new InMemoryTokenStore();
  await tokens.save(alice, 'A'.repeat(32) as Token);
  const keys = new InMemoryDeployKeyStore();
  const sessions = new InMemoryDeploySessions();
  const previews = new InMemoryPreviewLinks();
  const disk = new InMemoryDeploys();
  const releases = disk.store;
  const lock = new InProcessDeployLock();
  const clock = new FixedClock(new Date('2026-12-01T12:00:00Z'));
  const settings = { releasesKeep: 3, archiveLimits: { maxFiles: 100, maxBytes: 1000 } };
  const records = new InMemoryDeployRecords();
  const deploy = new DeployRelease(disk.staging, clock, settings, new PublishRelease(tokens, releases, disk.staging, lock, clock, settings, new PruneReleases(releases, settings, previews, clock, records), records, keys, previews, disk.rules, new InMemoryWebServer(), new QueuedPrecompression()), tokens, keys);
  const deployWith = (token: string, project: string, archive: AsyncIterable<Uint8Array>, preview?: string) =>
    deploy.execute({ user: alice, token, project: Promise.resolve(project), preview: Promise.resolve(preview), archive, signal: new AbortController().signal });
  return {
    keys,
    releases,
    disk,
    lock,
    clock,
    create: new CreateDeployKey(keys, new SequenceTokenGenerator(), clock),
    list: new ListDeployKeys(keys),
    sessions,
    revoke: new RevokeDeployKey(keys, lock, sessions, disk.objects, disk.staging),
    authenticate: new AuthenticateDeployer(tokens, keys, clock),
    deploy: (token: string, project: string) => deployWith(token, project, bytes('site')),
    deployWith,
  };
}

describe('deploy keys (use cases over fakes)', () => {
  it('a key signs in as its owner, with its grant; its use is recorded once a deploy it may make is judged, and only then', async () => {
    const w = await world();
    const { id, token } = await w.create.execute(alice, 'docs', { name: 'ci', scope: 'preview', expiresInDays: 2 });
    expect(await w.authenticate.execute(token)).toEqual({ user: alice, key: { id, project: 'docs', scope: 'preview' } });
    const lastUsed = async () => (await w.list.execute(alice, 'docs'))[0]?.lastUsedAt;
    expect(await lastUsed()).toBeUndefined();
    await expect(w.deploy(token, 'blog')).rejects.toBeInstanceOf(Unauthorized);
    await expect(w.deploy(token, 'docs')).rejects.toBeInstanceOf(Unauthorized);
    expect(await lastUsed()).toBeUndefined();
    const preview = w.deployWith(token, 'docs', bytes('a preview'), 'pr-1');
    expect((await preview).preview).toBe('pr-1');
    expect((await w.list.execute(alice, 'docs'))[0]).toMatchObject({ id, lastUsedAt: w.clock.current, expiresAt: new Date('2026-12-03T12:00:00Z') });
  });

  it('an expired key signs nothing in', async () => {
    const w = await world();
    const { token } = await w.create.execute(alice, 'docs', { name: 'ci', scope: 'deploy', expiresInDays: 1 });
    w.clock.current = new Date('2026-12-02T12:00:00Z');
    await expect(w.authenticate.execute(token)).rejects.toBeInstanceOf(Unauthorized);
  });

  it('refuses a deploy of another project as soon as the name is known, and leaves no staging', async () => {
    const w = await world();
    const { token } = await w.create.execute(alice, 'docs', { name: 'ci', scope: 'deploy' });
    // An upload that would take seconds: the refusal must stop reading it, not wait for its end.
    let pulled = 0;
    async function* long(): AsyncGenerator<Uint8Array> {
      for (; pulled < 400; pulled += 1) {
        await new Promise((r) => setTimeout(r, 5));
        yield Buffer.from('x');
      }
    }
    const refused = w.deployWith(token, 'blog', long());
    await expect(refused).rejects.toBeInstanceOf(Unauthorized);
    expect(pulled).toBeLessThan(20);
    expect(w.disk.staged.size).toBe(0);
    expect(await w.releases.projects(alice)).toEqual([]);
    expect((await w.deploy(token, 'docs')).project).toBe('docs');
  });

  it('a bad project name is reported before the key is judged', async () => {
    const w = await world();
    const { token } = await w.create.execute(alice, 'docs', { name: 'ci', scope: 'deploy' });
    await expect(w.deploy(token, 'Not A Name')).rejects.toBeInstanceOf(InvalidProjectName);
  });

  it('a revoke waits for a deploy the key signed that is publishing, so none publishes after it', async () => {
    const w = await world();
    const { id, token } = await w.create.execute(alice, 'docs', { name: 'ci', scope: 'deploy' });
    let finish!: () => void;
    const publishing = w.lock.withProject(alice, 'docs' as ProjectName, () => new Promise<void>((r) => (finish = r)));
    let revoked = false;
    const revoke = w.revoke.execute(alice, 'docs', id).then(() => (revoked = true));
    await new Promise((r) => setImmediate(r));
    expect(revoked).toBe(false);
    finish();
    await publishing;
    await revoke;
    await expect(w.deploy(token, 'docs')).rejects.toBeInstanceOf(Unauthorized);
    await expect(w.revoke.execute(alice, 'docs', id)).rejects.toBeInstanceOf(DeployKeyNotFound);
  });
});
