import { describe, expect, it } from 'vitest';
import { DeletePreview } from '../../src/application/delete-preview.js';
import { DeleteProject } from '../../src/application/delete-project.js';
import { DeployRelease } from '../../src/application/deploy-release.js';
import { PromotePreview } from '../../src/application/promote-preview.js';
import { PruneReleases } from '../../src/application/prune-releases.js';
import { PublishRelease } from '../../src/application/publish-release.js';
import { RollbackRelease } from '../../src/application/rollback-release.js';
import { ServeSiteRules } from '../../src/application/serve-site-rules.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { SiteRulesRejected, WebServerFailed } from '../../src/domain/errors.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import type { ServedSite } from '../../src/application/ports/web-server.js';
import {
  bytes,
  FixedClock,
  InMemoryDeployKeyStore,
  InMemoryDeployRecords,
  InMemoryDeploys,
  InMemoryDeploySessions,
  InMemoryPreviewLinks,
  InMemoryTokenStore,
  InMemoryWebServer,
  QueuedPrecompression,
} from '../support/fakes.js';
import { InMemoryDomainLinks, InMemoryDomainStore } from '../support/domain-fakes.js';

const alice = 'alice' as Username;
const docs = 'docs' as ProjectName;
const TOKEN = 'A'.repeat(32);

/** A web server that notes, at each willServe, which release the live link still shows. */
class WatchingWebServer extends InMemoryWebServer {
  readonly liveWhenTold: (ReleaseId | undefined)[] = [];
  constructor(private readonly disk: InMemoryDeploys) {
    super();
  }
  override async willServe(served: ServedSite): Promise<void> {
    this.liveWhenTold.push(this.disk.live.get(`${served.site.user}/${served.site.project}`));
    await super.willServe(served);
  }
}

async function world() {
  const tokens = new InMemoryTokenStore();
  await tokens.save(alice, TOKEN as Token);
  const disk = new InMemoryDeploys();
  const clock = new FixedClock();
  const lock = new InProcessDeployLock();
  const records = new InMemoryDeployRecords();
  const previews = new InMemoryPreviewLinks(clock);
  const settings = { releasesKeep: 5, archiveLimits: { maxFiles: 100, maxBytes: 100_000 }, previews: { max: 5, ttlSeconds: 3600 } };
  const webServer = new WatchingWebServer(disk);
  const keys = new InMemoryDeployKeyStore();
  const prune = new PruneReleases(disk.store, settings, previews, clock, records);
  const deployer = new DeployRelease(disk.staging, clock, settings, new PublishRelease(tokens, disk.store, disk.staging, lock, clock, settings, prune, records, keys, previews, disk.rules, webServer, new QueuedPrecompression()), tokens, keys);
  // A fake archive's line `@<path> <content>` names a file; `\n` in it is a newline.
  const deploy = async (lines: string[], preview?: string) => {
    clock.current = new Date(clock.current.getTime() + 1000);
    return deployer.execute({ user: alice, token: TOKEN, project: Promise.resolve(docs), ...(preview ? { preview: Promise.resolve(preview) } : {}), archive: bytes(lines.join('\n')), signal: new AbortController().signal });
  };
  return {
    disk,
    webServer,
    deploy,
    previews,
    rollback: new RollbackRelease(disk.store, lock, records, disk.rules, webServer, new QueuedPrecompression()),
    promote: new PromotePreview(disk.store, lock, prune, records, disk.rules, webServer, new QueuedPrecompression()),
    deletePreview: new DeletePreview(previews, lock, prune, webServer),
    deleteProject: new DeleteProject(disk.store, lock, new InMemoryDeployKeyStore(), previews, new InMemoryDeploySessions(), disk.objects, disk.staging, webServer, new InMemoryDomainStore(), new InMemoryDomainLinks()),
    serveAll: new ServeSiteRules(tokens, disk.store, previews, disk.rules, webServer),
  };
}

const told = (w: Awaited<ReturnType<typeof world>>, key = 'alice/docs') => w.webServer.serving.get(key);

describe('site rules at publish', () => {
  it('compiles the rules into the release and tells the web server before the link moves', async () => {
    const w = await world();
    const first = await w.deploy(['home']);
    const second = await w.deploy(['home 2', '@_redirects /old /new 302']);
    expect(w.webServer.liveWhenTold).toEqual([undefined, first.release]);
    expect(told(w)?.release).toBe(second.release);
    expect(told(w)?.rules.redirects).toMatchObject([{ line: 1, to: '/new', status: 302, force: false }]);
    expect(w.disk.compiledRules.get(`alice/docs/${second.release}`)).toEqual(told(w)?.rules);
  });

  it('refuses a bad rule line before anything changes: no release, no stored bytes, the web server untouched', async () => {
    const w = await world();
    const first = await w.deploy(['home']);
    const stored = new Map(w.disk.storeOf(alice));
    await expect(w.deploy(['home 2', '@_redirects /a /b 418'])).rejects.toBeInstanceOf(SiteRulesRejected);
    await expect(w.deploy(['home 2', '@_headers   X-A: b'])).rejects.toThrow(/^invalid _headers: line 1: /);
    expect(w.disk.live.get('alice/docs')).toBe(first.release);
    expect([...(w.disk.tree.get('alice/docs')?.keys() ?? [])]).toEqual([first.release]);
    expect(w.disk.storeOf(alice)).toEqual(stored);
    expect(w.disk.staged.size).toBe(0);
    expect(w.webServer.liveWhenTold).toHaveLength(1);
  });

  it('a web server that cannot be readied fails the deploy: the release goes, the live site and the web server stay as they were', async () => {
    const w = await world();
    const first = await w.deploy(['home', '@_redirects /a /one 302']);
    w.webServer.failing = true;
    await expect(w.deploy(['home 2', '@_redirects /a /two 302'])).rejects.toBeInstanceOf(WebServerFailed);
    w.webServer.failing = false;
    expect(w.disk.live.get('alice/docs')).toBe(first.release);
    expect([...(w.disk.tree.get('alice/docs')?.keys() ?? [])]).toEqual([first.release]);
    expect(told(w)).toMatchObject({ release: first.release, rules: { redirects: [{ to: '/one' }] } });
  });

  it('a link that fails to move after the web server was readied sends the web server back', async () => {
    const w = await world();
    const first = await w.deploy(['home', '@_redirects /a /one 302']);
    w.disk.failActivate = true;
    await expect(w.deploy(['home 2', '@_redirects /a /two 302'])).rejects.toThrow('disk on fire');
    expect(told(w)).toMatchObject({ release: first.release, rules: { redirects: [{ to: '/one' }] } });
  });
});

describe('site rules when a release is served again', () => {
  it("a rollback and a promote serve the release's own rules", async () => {
    const w = await world();
    const one = await w.deploy(['v1', '@_redirects /go /one 302']);
    await w.deploy(['v2', '@_redirects /go /two 302']);
    const pr = await w.deploy(['pr', '@_redirects /go /pr 302'], 'pr-1');
    expect(w.webServer.serving.get('alice/docs/pr-1')).toMatchObject({ release: pr.release, rules: { redirects: [{ to: '/pr' }] } });
    await w.rollback.execute(alice, 'docs');
    expect(told(w)).toMatchObject({ release: one.release, rules: { redirects: [{ to: '/one' }] } });
    await w.promote.execute(alice, 'docs', 'pr-1');
    expect(told(w)).toMatchObject({ release: pr.release, rules: { redirects: [{ to: '/pr' }] } });
  });

  it('a release published before rules were compiled gets them compiled when it is served again, or none if they cannot be honoured', async () => {
    const w = await world();
    const old = await w.deploy(['v1', '@_redirects /go /old 302']);
    const bad = await w.deploy(['v2', '@_redirects /go /x 999']).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(SiteRulesRejected);
    await w.deploy(['v3']);
    // As if published before compiling: raw files only.
    w.disk.compiledRules.delete(`alice/docs/${old.release}`);
    await w.rollback.execute(alice, 'docs', old.release);
    expect(told(w)).toMatchObject({ release: old.release, rules: { redirects: [{ to: '/old' }] } });
    expect(w.disk.compiledRules.has(`alice/docs/${old.release}`)).toBe(true);

    const raw = (w.disk.tree.get('alice/docs')!.get(old.release) ?? []).map((f) => (f.path === '_redirects' ? { ...f, content: '/go /x 999' } : f));
    w.disk.tree.get('alice/docs')!.set(old.release, raw);
    w.disk.compiledRules.delete(`alice/docs/${old.release}`);
    await w.serveAll.execute();
    expect(told(w)).toMatchObject({ release: old.release, rules: { redirects: [], headers: [] } });
  });

  it('at start-up the web server is told every live site and preview; deleting them makes it forget', async () => {
    const w = await world();
    const live = await w.deploy(['v1', '@_headers /*\\n  X-A: b']);
    const pr = await w.deploy(['pr'], 'pr-2');
    w.webServer.serving.clear();
    expect(await w.serveAll.execute()).toBe(2);
    expect(told(w)).toMatchObject({ release: live.release, rules: { headers: [{ headers: [{ name: 'X-A', value: 'b' }] }] } });
    expect(w.webServer.serving.get('alice/docs/pr-2')?.release).toBe(pr.release);
    await w.deletePreview.execute(alice, 'docs', 'pr-2');
    expect(w.webServer.serving.has('alice/docs/pr-2')).toBe(false);
    await w.deleteProject.execute(alice, 'docs');
    expect(w.webServer.serving.size).toBe(0);
  });
});
