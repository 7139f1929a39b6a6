import { describe, expect, it } from 'vitest';
import { DeploySessionAccess } from '../../src/application/deploy-session-access.js';
import { OpenDeploySession } from '../../src/application/open-deploy-session.js';
import { BaseReleaseChanged, ManifestRejected } from '../../src/domain/errors.js';
import { readParsedManifest, type ManifestFile } from '../../src/domain/manifest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { manifestDigest } from '../../src/domain/manifest-digest.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import { FixedClock, InMemoryDeployKeyStore, InMemoryDeploys, InMemoryDeploySessions, InMemoryTokenStore } from '../support/fakes.js';
import { sha256 } from '../support/sha256.js';

const alice = 'alice' as Username;
const bob = 'bob' as Username;
const TOKENS = { alice: 'A'.repeat(32), bob: 'B'.repeat(32) };
const R1 = '20260401T000000' as ReleaseId;
const fileOf = (path: string, content: string): ManifestFile => ({ path, size: Buffer.byteLength(content), digest: sha256(content) });

async function world() {
  const tokens = new InMemoryTokenStore();
  await tokens.save(alice, TOKENS.alice as Token);
  await tokens.save(bob, TOKENS.bob as Token);
  const disk = new InMemoryDeploys();
  const clock = new FixedClock();
  const settings = { releasesKeep: 3, archiveLimits: { maxFiles: 10, maxBytes: 1000 } };
  const keys = new InMemoryDeployKeyStore();
  const sessions = new InMemoryDeploySessions();
  const open = new OpenDeploySession(sessions, disk.objects, disk.store, tokens, keys, clock, settings, disk.staging);
  // alice's docs has release R1: index.html and a.css.
  const base = [fileOf('index.html', 'home'), fileOf('a.css', 'body{}')];
  disk.tree.set('alice/docs', new Map([[R1, [{ path: 'index.html', content: 'home' }, { path: 'a.css', content: 'body{}' }]]]));
  for (const content of ['home', 'body{}']) disk.storeOf(alice).set(sha256(content), content);
  const run = (user: Username, project: string, body: { files: unknown; base?: unknown; removed?: unknown }) =>
    open.execute({ user, token: TOKENS[user as 'alice' | 'bob'], project, preview: undefined, base: body.base, manifest: readParsedManifest(open.reader(), body.files, body.removed) });
  const access = new DeploySessionAccess(sessions, disk.objects, tokens, keys, clock, settings, disk.store);
  return { run, base, sessions, access, disk, clock };
}

describe('OpenDeploySession with a base', () => {
  it("opens a session holding the whole site: the base's files, changed, added and removed", async () => {
    const w = await world();
    const state = await w.run(alice, 'docs', { base: { release: R1, digest: manifestDigest(w.base) }, files: [fileOf('new.html', 'new')], removed: ['a.css'] });
    expect((state.session.manifest as PackedManifest).manifest().files).toEqual([fileOf('index.html', 'home'), fileOf('new.html', 'new')]);
    expect(state.missing).toEqual([sha256('new')]);
  });

  it("keeps a session opened on its base with nothing changed as the base's name, and refuses its use once that release is gone", async () => {
    const w = await world();
    const base = { release: R1, digest: manifestDigest(w.base) };
    const state = await w.run(alice, 'docs', { base, files: [] });
    expect(state.session.manifest).toEqual(base);
    expect([state.files, state.bytes, state.missing]).toEqual([2, 10, []]);
    const session = await w.access.find(alice, TOKENS.alice, state.session.id);
    const byPath = (files: readonly ManifestFile[]) => [...files].sort((a, b) => (a.path < b.path ? -1 : 1));
    const { manifest } = await w.access.useWithManifest(alice, TOKENS.alice, state.session.id);
    expect(byPath(manifest.manifest().files)).toEqual(byPath(w.base));
    w.disk.tree.get('alice/docs')!.delete(R1);
    // Refused before the session is kept alive: it expires as it would have.
    w.clock.current = new Date(w.clock.current.getTime() + 30_000);
    await expect(w.access.useWithManifest(alice, TOKENS.alice, state.session.id)).rejects.toBeInstanceOf(BaseReleaseChanged);
    expect((await w.sessions.find(state.session.id))!.expiresAt).toEqual(session.expiresAt);
  });

  it('refuses a wrong digest, a release of another project or user, or none, all alike', async () => {
    const w = await world();
    const base = { release: R1, digest: manifestDigest(w.base) };
    await expect(w.run(alice, 'docs', { base: { ...base, digest: sha256('other') }, files: [] })).rejects.toBeInstanceOf(BaseReleaseChanged);
    await expect(w.run(alice, 'blog', { base, files: [] })).rejects.toBeInstanceOf(BaseReleaseChanged);
    await expect(w.run(bob, 'docs', { base, files: [] })).rejects.toBeInstanceOf(BaseReleaseChanged);
    await expect(w.run(alice, 'docs', { base: { ...base, release: '20260402T000000' }, files: [] })).rejects.toBeInstanceOf(BaseReleaseChanged);
    expect(w.sessions.sessions.size).toBe(0);
  });

  it('refuses a malformed base, and removed without a base, as manifest errors', async () => {
    const w = await world();
    await expect(w.run(alice, 'docs', { base: { release: 'latest', digest: manifestDigest(w.base) }, files: [] })).rejects.toBeInstanceOf(ManifestRejected);
    await expect(w.run(alice, 'docs', { files: w.base, removed: [] })).rejects.toThrow('removed needs a base');
  });
});
