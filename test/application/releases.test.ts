import { describe, expect, it } from 'vitest';
import { DeleteProject } from '../../src/application/delete-project.js';
import { DeployRelease } from '../../src/application/deploy-release.js';
import { PublishRelease } from '../../src/application/publish-release.js';
import { ListProjects } from '../../src/application/list-projects.js';
import { ListReleases } from '../../src/application/list-releases.js';
import { ListUsers } from '../../src/application/list-users.js';
import { PruneReleases } from '../../src/application/prune-releases.js';
import { RollbackRelease } from '../../src/application/rollback-release.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { InvalidProjectName, InvalidReleaseId, NothingToRollBackTo, ProjectNotFound, ReleaseNotFound } from '../../src/domain/errors.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import { bytes, FixedClock, InMemoryDeployKeyStore, InMemoryPreviewLinks, InMemoryDeployRecords, InMemoryDeploys, InMemoryDeploySessions, InMemoryTokenStore, InMemoryWebServer, QueuedPrecompression } from '../support/fakes.js';
import { InMemoryDomainLinks, InMemoryDomainStore } from '../support/domain-fakes.js';

const alice = 'alice' as Username;

async function world() {
  const tokens = new InMemoryTokenStore();
  await tokens.save(alice, 'A'.repeat(32) as Token);
  await tokens.save('bob' as Username, 'B'.repeat(32) as Token);
  const disk = new InMemoryDeploys();
  const precompression = new QueuedPrecompression();
  const releases = disk.store;
  const records = new InMemoryDeployRecords();
  const lock = new InProcessDeployLock();
  const clock = new FixedClock();
  const keys = new InMemoryDeployKeyStore();
  const previews = new InMemoryPreviewLinks(clock);
  const settings = { releasesKeep: 5, archiveLimits: { maxFiles: 100, maxBytes: 1000 } };
  const webServer = new InMemoryWebServer();
  const deployer = new DeployRelease(disk.staging, clock, settings, new PublishRelease(tokens, releases, disk.staging, lock, clock, settings, new PruneReleases(releases, settings, previews, clock, records), records, keys, previews, disk.rules, webServer, precompression), tokens, keys);
  const deploy = async (project: string, at: string) => {
    clock.current = new Date(at);
    return (await deployer.execute({ user: alice, token: 'A'.repeat(32), project: Promise.resolve(project), archive: bytes(`site ${at}`), signal: new AbortController().signal })).release;
  };
  return {
    releases,
    disk,
    precompression,
    deploy,
    deployer,
    listProjects: new ListProjects(releases),
    listReleases: new ListReleases(releases, records),
    rollback: new RollbackRelease(releases, lock, records, disk.rules, webServer, precompression),
    deleteProject: new DeleteProject(releases, lock, keys, previews, new InMemoryDeploySessions(), disk.objects, disk.staging, webServer, new InMemoryDomainStore(), new InMemoryDomainLinks()),
    listUsers: new ListUsers(tokens, releases),
  };
}

describe('listing', () => {
  it('lists projects with live release, count and last deploy time', async () => {
    const w = await world();
    await w.deploy('docs', '2026-05-01T10:00:00Z');
    await w.deploy('docs', '2026-05-01T11:00:00Z');
    await w.deploy('blog', '2026-05-02T09:00:00Z');
    expect(await w.listProjects.execute(alice)).toEqual([
      { project: 'blog', live: '20260502T090000', releases: 1, lastDeployAt: new Date('2026-05-02T09:00:00Z') },
      { project: 'docs', live: '20260501T110000', releases: 2, lastDeployAt: new Date('2026-05-01T11:00:00Z') },
    ]);
  });

  it('lists releases newest first with their records, and knows an unknown project', async () => {
    const w = await world();
    await w.deploy('docs', '2026-05-01T10:00:00Z');
    await w.deploy('docs', '2026-05-01T11:00:00Z');
    const list = await w.listReleases.execute(alice, 'docs');
    expect(list.map((r) => [r.release, r.live, r.files])).toEqual([['20260501T110000', true, 1], ['20260501T100000', false, 1]]);
    await expect(w.listReleases.execute(alice, 'nope')).rejects.toBeInstanceOf(ProjectNotFound);
    await expect(w.listReleases.execute(alice, 'No Pe')).rejects.toBeInstanceOf(InvalidProjectName);
  });

  it('lists users with project counts, never tokens', async () => {
    const w = await world();
    await w.deploy('docs', '2026-05-01T10:00:00Z');
    expect(await w.listUsers.execute()).toEqual([{ username: 'alice', projects: 1 }, { username: 'bob', projects: 0 }]);
  });
});

describe('RollbackRelease', () => {
  it('goes back to the previous release by default, then to a named one', async () => {
    const w = await world();
    const first = await w.deploy('docs', '2026-05-01T10:00:00Z');
    const second = await w.deploy('docs', '2026-05-01T11:00:00Z');
    const third = await w.deploy('docs', '2026-05-01T12:00:00Z');
    expect(await w.rollback.execute(alice, 'docs')).toEqual({ release: second, previous: third });
    expect(await w.rollback.execute(alice, 'docs', first)).toEqual({ release: first, previous: second });
    expect(await w.rollback.execute(alice, 'docs', third)).toEqual({ release: third, previous: first });
    // Each release made live gets its compressed siblings queued: the deploys', then the rollbacks'.
    expect(w.precompression.queued).toEqual([first, second, third, second, first, third].map((id) => `alice/docs/${id}`));
    expect((await w.releases.releases(alice, 'docs' as never)).length).toBe(3);
  });

  it('refuses a missing release, an unknown project, a bad id, and a project with one release', async () => {
    const w = await world();
    const only = await w.deploy('docs', '2026-05-01T10:00:00Z');
    await expect(w.rollback.execute(alice, 'docs', '20200101T000000')).rejects.toBeInstanceOf(ReleaseNotFound);
    await expect(w.rollback.execute(alice, 'docs', 'yesterday')).rejects.toBeInstanceOf(InvalidReleaseId);
    await expect(w.rollback.execute(alice, 'nope')).rejects.toBeInstanceOf(ProjectNotFound);
    await expect(w.rollback.execute(alice, 'docs')).rejects.toBeInstanceOf(NothingToRollBackTo);
    expect(w.disk.live.get('alice/docs')).toBe(only);
  });

  it('a rollback racing a deploy: both run under the lock, and the live link ends on one of them', async () => {
    const w = await world();
    const first = await w.deploy('docs', '2026-05-01T10:00:00Z');
    await w.deploy('docs', '2026-05-01T11:00:00Z');
    const [rolled, deployed] = await Promise.all([w.rollback.execute(alice, 'docs'), w.deploy('docs', '2026-05-01T12:00:00Z')]);
    expect(rolled.release).toBe(first);
    const live = w.disk.live.get('alice/docs');
    // Whichever took the lock second decided what is live, and it is a real release.
    expect([first, deployed]).toContain(live);
    expect(await w.releases.releases(alice, 'docs' as never)).toContain(live);
  });
});

describe('DeleteProject', () => {
  it('removes the live link and every release, and then the project is unknown', async () => {
    const w = await world();
    await w.deploy('docs', '2026-05-01T10:00:00Z');
    await w.deploy('blog', '2026-05-01T10:00:01Z');
    await w.deleteProject.execute(alice, 'docs');
    expect(w.disk.live.has('alice/docs')).toBe(false);
    expect(await w.listProjects.execute(alice)).toEqual([expect.objectContaining({ project: 'blog' })]);
    await expect(w.deleteProject.execute(alice, 'docs')).rejects.toBeInstanceOf(ProjectNotFound);
  });
});
