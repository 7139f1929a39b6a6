import { randomUUID } from 'node:crypto';
import type { Clock } from '../../src/application/ports/clock.js';
import type { DeployKey, DeployKeyStore, NewDeployKey } from '../../src/application/ports/deploy-key-store.js';
import type { Precompression } from '../../src/application/ports/precompression.js';
import type { PreviewLinks } from '../../src/application/ports/preview-links.js';
import type { Preview, PreviewName } from '../../src/domain/preview.js';
import type { DeployRecord, DeployRecords } from '../../src/application/ports/deploy-records.js';
import type { DeploySession, DeploySessions, DeploySessionSummary, NewDeploySession, HoldingChange, SessionLimits } from '../../src/application/ports/deploy-sessions.js';
import type { ReleaseRules, RuleFiles, RulesOf } from '../../src/application/ports/release-rules.js';
import type { ReleaseStore } from '../../src/application/ports/release-store.js';
import type { ServedSite, SiteScope, WebServer } from '../../src/application/ports/web-server.js';
import { compileSiteRules, hasNoRules, type SiteRules } from '../../src/domain/site-rules.js';
import type { SessionObjects } from '../../src/application/ports/session-objects.js';
import type { ReleasePreparation } from '../../src/application/ports/release-preparation.js';
import type { StagedRelease, Staging } from '../../src/application/ports/staging.js';
import type { TokenGenerator } from '../../src/application/ports/token-generator.js';
import type { TokenStore } from '../../src/application/ports/token-store.js';
import type { ArchiveLimits } from '../../src/domain/archive-policy.js';
import type { ProjectScope } from '../../src/domain/deploy-session.js';
import { ArchiveRejected, DeployAborted, DeploySessionChanged, ManifestRejected, MissingArchive, ObjectsMissing, ObjectsRejected, SessionUploadedAlready, SiteRulesRejected, WebServerFailed } from '../../src/domain/errors.js';
import { holdsBase, sameSigner, type HeldManifest } from '../../src/domain/deploy-session.js';
import { manifestOf, type Digest } from '../../src/domain/manifest.js';
import { assertExpectedObject, assertObjectBytes } from '../../src/domain/object-batch.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import { assertUploadsFit } from '../../src/domain/storage-quota.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import { sha256 } from './sha256.js';

export class InMemoryTokenStore implements TokenStore {
  readonly users = new Map<Username, Token>();

  async save(user: Username, token: Token): Promise<'created' | 'rerolled'> {
    const existed = this.users.has(user);
    this.users.set(user, token);
    return existed ? 'rerolled' : 'created';
  }

  async findUser(token: Token): Promise<Username | undefined> {
    for (const [user, t] of this.users) if (t === token) return user;
    return undefined;
  }

  async exists(user: Username): Promise<boolean> {
    return this.users.has(user);
  }

  async remove(user: Username): Promise<boolean> {
    return this.users.delete(user);
  }

  async usernames(): Promise<Username[]> {
    return [...this.users.keys()].sort();
  }
}

const sizeOf = (files: readonly SiteFile[]): number => files.reduce((sum, f) => sum + Buffer.byteLength(f.content), 0);

/** A file of a fake release: where it is, and its bytes as text. */
export interface SiteFile {
  readonly path: string;
  readonly content: string;
}

/** The names an archive's lines get, in order (as the real contract's archives name them): they sort in the order given. */
export const pathOf = (i: number): string => `f${String(i).padStart(3, '0')}.txt`;

/** A line `@<path> <content>` of a fake archive names its file (a rule file, say). */
function namedLine(line: string): SiteFile | undefined {
  const named = /^@(\S+) ([\s\S]*)$/.exec(line);
  return named ? { path: named[1]!, content: named[2]!.replaceAll('\\n', '\n') } : undefined;
}

/** The whole upload as text; a stalled one is given up as soon as `signal` fires, as the real unpacking is. */
async function textOf(source: AsyncIterable<Uint8Array>, signal: AbortSignal): Promise<string> {
  const iterator = source[Symbol.asyncIterator]();
  let giveUp!: (error: Error) => void;
  const aborted = new Promise<never>((_, reject) => (giveUp = reject));
  aborted.catch(() => undefined);
  const onAbort = (): void => giveUp(new DeployAborted());
  if (signal.aborted) onAbort();
  signal.addEventListener('abort', onAbort, { once: true });
  const chunks: Buffer[] = [];
  try {
    for (let next = await Promise.race([iterator.next(), aborted]); !next.done; next = await Promise.race([iterator.next(), aborted])) {
      chunks.push(Buffer.from(next.value));
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
  return Buffer.concat(chunks).toString();
}

/**
 * DEPLOYS_ROOT in memory: what staging, the release store and session objects share, as
 * the real adapters share one directory tree. A file is its content; each user's store
 * holds contents by SHA-256, as the real one does.
 *
 * An "archive" is its text: empty is missing, text starting REJECT is refused, anything
 * else is a site whose files are its lines, in path order (`site` is one file of 4 bytes).
 * A batch of objects is lines `<name> <content>`.
 */
export class InMemoryDeploys {
  /** Staging areas by handle: whose, and their files' contents. */
  readonly staged = new Map<string, { readonly user: Username; readonly files: readonly SiteFile[] }>();
  /** Releases by `user/project`, each its files. */
  readonly tree = new Map<string, Map<ReleaseId, readonly SiteFile[]>>();
  readonly live = new Map<string, ReleaseId>();
  /** Compiled rules, by staging handle or `user/project/release`. */
  readonly compiledRules = new Map<string, SiteRules>();
  /** Each user's store: contents by digest. */
  readonly stores = new Map<Username, Map<Digest, string>>();
  /** Each session's uploads: contents by digest. */
  readonly uploads = new Map<string, Map<Digest, string>>();
  failActivate = false;
  readonly staging = new InMemoryStaging(this);
  readonly store = new InMemoryReleaseStore(this);
  readonly objects = new InMemorySessionObjects(this);
  readonly rules = new InMemoryReleaseRules(this);
  private handles = 0;

  storeOf(user: Username): Map<Digest, string> {
    const store = this.stores.get(user) ?? new Map<Digest, string>();
    this.stores.set(user, store);
    return store;
  }

  newHandle(): string {
    return `staging-${(this.handles += 1)}`;
  }

  /** The contents a project's releases (live, older, previews') hold, by digest: what a deploy key's session may draw on. */
  projectContents(user: Username, project: ProjectName): Set<Digest> {
    const releases = this.tree.get(`${user}/${project}`)?.values() ?? [];
    return new Set([...releases].flatMap((files) => files.map(({ content }) => sha256(content))));
  }

  /** A release put in place without a deploy (one from before deploy records, say): one file of `bytes` bytes. */
  put(user: Username, project: ProjectName, id: ReleaseId, bytes: number): void {
    const key = `${user}/${project}`;
    this.tree.set(key, (this.tree.get(key) ?? new Map()).set(id, [{ path: pathOf(0), content: 'x'.repeat(bytes) }]));
  }
}

export class InMemoryStaging implements Staging, ReleasePreparation {
  constructor(protected readonly disk: InMemoryDeploys) {}

  async stage(user: Username, archive: AsyncIterable<Uint8Array>, _limits: ArchiveLimits, signal: AbortSignal): Promise<StagedRelease> {
    const text = await textOf(archive, signal);
    if (text === '') throw new MissingArchive();
    if (text.startsWith('REJECT')) throw new ArchiveRejected(text);
    return this.staged(user, text.split('\n').map((line, i) => namedLine(line) ?? { path: pathOf(i), content: line }));
  }

  /** Sessions prepare() was told of, by user: there is nothing to build ahead in memory. */
  readonly prepared = new Map<string, Username>();

  prepare(user: Username, session: string): void {
    this.prepared.set(session, user);
  }

  /** Sessions revise() was told of, and how many times. */
  readonly revised = new Map<string, number>();

  revise(user: Username, session: string): void {
    this.prepared.set(session, user);
    this.revised.set(session, (this.revised.get(session) ?? 0) + 1);
  }

  preparedSessions(): string[] {
    return [...this.prepared.keys()];
  }

  async forgetPrepared(session: string): Promise<void> {
    this.prepared.delete(session);
  }

  async forgetPreparedFor(user: Username): Promise<void> {
    for (const [session, owner] of this.prepared) if (owner === user) this.prepared.delete(session);
  }

  async assemble(user: Username, session: string, manifest: PackedManifest, scope?: ProjectScope): Promise<StagedRelease> {
    this.prepared.delete(session);
    const { files } = manifest.manifest();
    const store = this.disk.storeOf(user);
    const ours = scope && this.disk.projectContents(user, scope.project);
    const uploads = this.disk.uploads.get(session);
    const stored = (digest: Digest) => (ours === undefined || ours.has(digest) ? store.get(digest) : undefined);
    const contents = files.map((f) => (f.size === 0 ? '' : (stored(f.digest) ?? uploads?.get(f.digest))));
    const missing = new Set(files.filter((_, i) => contents[i] === undefined).map((f) => f.digest));
    if (missing.size > 0) throw new ObjectsMissing([...missing]);
    return this.staged(user, files.map((f, i) => ({ path: f.path, content: contents[i]! })));
  }

  async discard(staged: StagedRelease): Promise<void> {
    this.disk.staged.delete(staged.handle);
  }

  async removeLeftovers(): Promise<string[]> {
    const removed = [...this.disk.staged.keys()];
    this.disk.staged.clear();
    return removed;
  }

  private staged(user: Username, files: readonly SiteFile[]): StagedRelease {
    const handle = this.disk.newHandle();
    this.disk.staged.set(handle, { user, files });
    return { handle, files: files.length, bytes: sizeOf(files) };
  }
}

export class InMemoryReleaseRules implements ReleaseRules {
  constructor(private readonly disk: InMemoryDeploys) {}

  async files(of: RulesOf, maxBytes: number): Promise<RuleFiles> {
    const files = 'staged' in of ? this.disk.staged.get(of.staged.handle)?.files : this.disk.tree.get(`${of.user}/${of.project}`)?.get(of.release);
    const read = (name: '_redirects' | '_headers'): string | undefined => {
      const content = files?.find((f) => f.path === name)?.content;
      if (content !== undefined && Buffer.byteLength(content) > maxBytes) throw new SiteRulesRejected(name, undefined, `larger than ${maxBytes} bytes`);
      return content;
    };
    const redirects = read('_redirects');
    const headers = read('_headers');
    return { ...(redirects === undefined ? {} : { redirects }), ...(headers === undefined ? {} : { headers }) };
  }

  async isCompiled(of: RulesOf): Promise<boolean> {
    return this.disk.compiledRules.has(this.keyOf(of));
  }

  async write(of: RulesOf, rules: SiteRules): Promise<void> {
    if (!hasNoRules(rules)) this.disk.compiledRules.set(this.keyOf(of), rules);
  }

  async compiled(of: RulesOf): Promise<SiteRules> {
    return this.disk.compiledRules.get(this.keyOf(of)) ?? compileSiteRules({});
  }

  private keyOf(of: RulesOf): string {
    return 'staged' in of ? of.staged.handle : `${of.user}/${of.project}/${of.release}`;
  }
}

/** What a web server configured per site was told it serves, by site. */
export class InMemoryWebServer implements WebServer {
  readonly serving = new Map<string, ServedSite>();
  failing = false;

  async willServe(served: ServedSite): Promise<void> {
    if (this.failing) throw new WebServerFailed('reload refused');
    this.serving.set(siteKey(served.site), served);
  }

  async forget(scope: SiteScope): Promise<void> {
    const prefix = siteKey(scope);
    for (const key of [...this.serving.keys()]) if (key === prefix || key.startsWith(`${prefix}/`)) this.serving.delete(key);
  }

  async reconcile(sites: readonly ServedSite[]): Promise<void> {
    this.serving.clear();
    for (const served of sites) this.serving.set(siteKey(served.site), served);
  }
}

const siteKey = (scope: SiteScope): string => [scope.user, scope.project, scope.preview].filter((part) => part !== undefined).join('/');

export class InMemoryReleaseStore implements ReleaseStore {
  constructor(private readonly disk: InMemoryDeploys) {}

  async commit(staged: StagedRelease, user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    const area = this.disk.staged.get(staged.handle);
    if (area === undefined) throw new Error(`no staging area ${staged.handle}`);
    const key = `${user}/${project}`;
    const releases = this.disk.tree.get(key) ?? new Map<ReleaseId, readonly SiteFile[]>();
    if (releases.has(id)) throw new Error(`release ${id} exists`);
    this.disk.staged.delete(staged.handle);
    this.disk.tree.set(key, releases.set(id, area.files));
    const rules = this.disk.compiledRules.get(staged.handle);
    this.disk.compiledRules.delete(staged.handle);
    if (rules) this.disk.compiledRules.set(`${key}/${id}`, rules);
    const store = this.disk.storeOf(user);
    for (const { content } of area.files) if (content !== '') store.set(sha256(content), content);
  }

  async activate(user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    if (this.disk.failActivate) throw new Error('disk on fire');
    if (!this.disk.tree.get(`${user}/${project}`)?.has(id)) throw new Error(`no release ${id}`);
    this.disk.live.set(`${user}/${project}`, id);
  }

  async releases(user: Username, project: ProjectName): Promise<ReleaseId[]> {
    return [...(this.disk.tree.get(`${user}/${project}`)?.keys() ?? [])].sort();
  }

  async liveRelease(user: Username, project: ProjectName): Promise<ReleaseId | undefined> {
    return this.disk.live.get(`${user}/${project}`);
  }

  async removeRelease(user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    this.disk.tree.get(`${user}/${project}`)?.delete(id);
  }

  async releaseBytes(user: Username, project: ProjectName, id: ReleaseId): Promise<number> {
    return sizeOf(this.disk.tree.get(`${user}/${project}`)?.get(id) ?? []);
  }

  async releasePackedManifest(user: Username, project: ProjectName, id: ReleaseId): Promise<PackedManifest | undefined> {
    const files = this.disk.tree.get(`${user}/${project}`)?.get(id);
    return files && PackedManifest.pack(manifestOf(files.map(({ path, content }) => ({ path, size: Buffer.byteLength(content), digest: sha256(content) }))));
  }

  async projects(user: Username): Promise<ProjectName[]> {
    const names = new Set<string>();
    for (const key of [...this.disk.tree.keys(), ...this.disk.live.keys()]) if (key.startsWith(`${user}/`)) names.add(key.slice(user.length + 1));
    return [...names].sort() as ProjectName[];
  }

  async removeProject(user: Username, project: ProjectName): Promise<void> {
    this.disk.live.delete(`${user}/${project}`);
    this.disk.tree.delete(`${user}/${project}`);
  }

  async removeUserFiles(user: Username): Promise<void> {
    for (const key of [...this.disk.tree.keys()]) if (key.startsWith(`${user}/`)) this.disk.tree.delete(key);
    for (const key of [...this.disk.live.keys()]) if (key.startsWith(`${user}/`)) this.disk.live.delete(key);
    this.disk.stores.delete(user);
  }

  async removeLeftovers(): Promise<string[]> {
    return [];
  }
}

export class InMemorySessionObjects implements SessionObjects {
  constructor(private readonly disk: InMemoryDeploys) {}

  async missing(user: Username, session: string | undefined, objects: ReadonlyMap<Digest, number>, scope?: ProjectScope): Promise<Digest[]> {
    const store = this.disk.storeOf(user);
    const ours = scope && this.disk.projectContents(user, scope.project);
    const uploads = session === undefined ? undefined : this.disk.uploads.get(session);
    const missing: Digest[] = [];
    for (const [digest, size] of objects) {
      // An upload was taken at the size asked then: at another now, it is asked for again, not held against the manifest.
      const uploaded = uploads?.get(digest);
      if (uploaded !== undefined && Buffer.byteLength(uploaded) === size) continue;
      const stored = ours === undefined || ours.has(digest) ? store.get(digest) : undefined;
      if (stored === undefined) missing.push(digest);
      else if (Buffer.byteLength(stored) !== size) throw new ManifestRejected(`size does not match the object's: ${digest} is not ${size} bytes`);
    }
    return missing;
  }

  async receive(_user: Username, session: string, batch: AsyncIterable<Uint8Array>, expected: PackedManifest, signal: AbortSignal): Promise<number> {
    const text = await textOf(batch, signal);
    if (text === '') throw new ObjectsRejected('the batch is empty');
    const received = new Map<Digest, string>();
    try {
      for (const line of text.split('\n')) {
        const [name = '', content = ''] = line.split(/ (.*)/s);
        assertExpectedObject(expected, 'file', name, Buffer.byteLength(content));
        assertObjectBytes(name, sha256(content));
        received.set(name as Digest, content);
      }
    } catch (error) {
      if (error instanceof ArchiveRejected) throw new ObjectsRejected(error.reason);
      throw error;
    }
    this.disk.uploads.set(session, new Map([...(this.disk.uploads.get(session) ?? []), ...received]));
    return received.size;
  }

  async shareUploads(from: readonly string[], session: string, objects: ReadonlyMap<Digest, number>): Promise<Digest[]> {
    const shared = new Map<Digest, string>();
    for (const other of from) {
      for (const [digest, content] of this.disk.uploads.get(other) ?? []) if (objects.get(digest) === Buffer.byteLength(content)) shared.set(digest, content);
    }
    if (shared.size > 0) this.disk.uploads.set(session, new Map([...(this.disk.uploads.get(session) ?? []), ...shared]));
    return [...shared.keys()];
  }

  async removeUploads(session: string): Promise<void> {
    this.disk.uploads.delete(session);
  }

  async sessionsWithUploads(): Promise<string[]> {
    return [...this.disk.uploads.keys()];
  }
}

export class InMemoryDeployRecords implements DeployRecords {
  readonly entries: DeployRecord[] = [];
  failing = false;

  async record(entry: DeployRecord): Promise<void> {
    if (this.failing) throw new Error('database gone');
    const same = this.entries.findIndex((e) => e.user === entry.user && e.project === entry.project && e.release === entry.release);
    if (same >= 0) this.entries.splice(same, 1);
    this.entries.push(entry);
  }

  async forProject(user: Username, project: ProjectName): Promise<DeployRecord[]> {
    return this.entries.filter((e) => e.user === user && e.project === project).sort((a, b) => b.release.localeCompare(a.release));
  }

  async markLive(user: Username, project: ProjectName, release: ReleaseId): Promise<void> {
    if (this.failing) throw new Error('database gone');
    const at = this.entries.findIndex((e) => e.user === user && e.project === project && e.release === release);
    if (at >= 0) this.entries[at] = { ...this.entries[at]!, preview: undefined };
  }
}

/** As the database keeps them: a session holding its base has no object unconfirmed (its objects are the base's files). */
const held = (manifest: HeldManifest, unconfirmed: readonly Digest[] | undefined): readonly Digest[] | undefined => (holdsBase(manifest) ? [] : unconfirmed);

/** Deploy sessions in a map: the unit tests' stand-in for the database (contract: test/contracts/deploy-sessions.test.ts). */
export class InMemoryDeploySessions implements DeploySessions {
  readonly sessions = new Map<string, DeploySession>();
  /** The sessions a batch of objects has begun for (beginUploads). */
  private readonly uploading = new Set<string>();

  async open(session: NewDeploySession, limits: SessionLimits, now: Date, superseding: readonly string[] = []): Promise<string | undefined> {
    // Judged as if the superseded were gone, and they go only if it opens.
    const others = [...this.sessions.values()].filter((s) => !(superseding.includes(s.id) && s.user === session.user));
    assertUploadsFit(others.filter((s) => s.user === session.user).reduce((sum, s) => sum + s.uploadBytes, 0), session.uploadBytes, limits.userMaxBytes);
    const live = others.filter((s) => sameSigner(s, session) && s.expiresAt > now).length;
    if (live >= limits.maxPerSigner) return undefined;
    for (const older of superseding) if (this.sessions.get(older)?.user === session.user) this.sessions.delete(older);
    const id = randomUUID().replaceAll('-', '');
    this.sessions.set(id, { id, ...session, unconfirmed: held(session.manifest, session.unconfirmed), version: 0 });
    return id;
  }

  async find(id: string): Promise<DeploySession | undefined> {
    return this.sessions.get(id);
  }

  async listUser(user: Username): Promise<DeploySessionSummary[]> {
    const of = [...this.sessions.values()].filter((s) => s.user === user);
    return of.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id)).map(({ manifest: _, unconfirmed: __, version: ___, ...summary }) => summary);
  }

  async closeOpenedByKeys(user: Username, project: ProjectName, keyId?: string): Promise<string[]> {
    const closing = [...this.sessions.values()].filter((s) => s.user === user && s.project === project && s.keyId !== undefined && (keyId === undefined || s.keyId === keyId));
    for (const { id } of closing) this.sessions.delete(id);
    return closing.map((s) => s.id);
  }

  async replaceManifest(id: string, { holding, from, expiresAt, now, userMaxBytes }: HoldingChange): Promise<boolean> {
    const session = this.sessions.get(id);
    if (session === undefined || session.expiresAt <= now) return false;
    assertUploadsFit(this.uploadsHeld(session.user, id), holding.uploadBytes, userMaxBytes);
    if (from.beforeUploads && this.uploading.has(id)) throw new SessionUploadedAlready();
    if (session.version !== from.version) throw new DeploySessionChanged();
    this.sessions.set(id, { ...session, ...holding, unconfirmed: held(holding.manifest, holding.unconfirmed), expiresAt, version: from.version + 1 });
    return true;
  }

  async beginUploads(id: string): Promise<number | undefined> {
    const session = this.sessions.get(id);
    if (session !== undefined) this.uploading.add(id);
    return session?.version;
  }

  /** What the user's sessions (but `except`) may upload between them, expired ones too. */
  private uploadsHeld(user: Username, except?: string): number {
    return [...this.sessions.values()].filter((s) => s.user === user && s.id !== except).reduce((sum, s) => sum + s.uploadBytes, 0);
  }

  async extend(id: string, expiresAt: Date, ifStill?: Date): Promise<void> {
    const session = this.sessions.get(id);
    if (session && (ifStill === undefined || session.expiresAt.getTime() === ifStill.getTime())) this.sessions.set(id, { ...session, expiresAt });
  }

  async close(id: string): Promise<boolean> {
    return this.sessions.delete(id);
  }

  async expired(now: Date): Promise<string[]> {
    return [...this.sessions.values()].filter((s) => s.expiresAt <= now).map((s) => s.id);
  }

  async openedBy(keyId: string, now: Date): Promise<string[]> {
    return [...this.sessions.values()].filter((s) => s.keyId === keyId && s.expiresAt > now).map((s) => s.id);
  }

  async stillOpen(ids: readonly string[]): Promise<Set<string>> {
    return new Set(ids.filter((id) => this.sessions.has(id)));
  }

  async removeUser(user: Username): Promise<void> {
    for (const [id, session] of this.sessions) if (session.user === user) this.sessions.delete(id);
  }
}

export class InMemoryDeployKeyStore implements DeployKeyStore {
  readonly keys = new Map<string, { key: DeployKey; token: Token }>();

  async add(key: NewDeployKey, token: Token): Promise<string> {
    const id = randomUUID();
    this.keys.set(id, { key: { ...key, id, lastUsedAt: undefined }, token });
    return id;
  }

  async findByToken(token: Token): Promise<DeployKey | undefined> {
    return [...this.keys.values()].find((k) => k.token === token)?.key;
  }

  async list(user: Username, project: ProjectName): Promise<DeployKey[]> {
    const of = [...this.keys.values()].map((k) => k.key).filter((k) => k.user === user && k.project === project);
    return of.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));
  }

  async remove(user: Username, project: ProjectName, id: string): Promise<boolean> {
    const found = this.keys.get(id)?.key;
    return found !== undefined && found.user === user && found.project === project && this.keys.delete(id);
  }

  async removeProject(user: Username, project: ProjectName): Promise<void> {
    for (const { key } of [...this.keys.values()]) if (key.user === user && key.project === project) this.keys.delete(key.id);
  }

  async removeUser(user: Username): Promise<void> {
    for (const { key } of [...this.keys.values()]) if (key.user === user) this.keys.delete(key.id);
  }

  async touch(id: string, at: Date): Promise<void> {
    const entry = this.keys.get(id);
    if (entry) entry.key = { ...entry.key, lastUsedAt: at };
  }
}

/** Preview links in memory; a link is stamped with the clock's time, as a file's mtime would be. */
export class InMemoryPreviewLinks implements PreviewLinks {
  readonly links = new Map<string, Map<PreviewName, Preview>>();

  constructor(private readonly clock: Clock = { now: () => new Date() }) {}

  async link(user: Username, project: ProjectName, name: PreviewName, release: ReleaseId): Promise<void> {
    const key = `${user}/${project}`;
    this.links.set(key, (this.links.get(key) ?? new Map()).set(name, { name, release, linkedAt: this.clock.now() }));
  }

  async list(user: Username, project: ProjectName): Promise<Preview[]> {
    return [...(this.links.get(`${user}/${project}`)?.values() ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  }

  async unlink(user: Username, project: ProjectName, name: PreviewName): Promise<boolean> {
    return this.links.get(`${user}/${project}`)?.delete(name) ?? false;
  }

  async removeProject(user: Username, project: ProjectName): Promise<void> {
    this.links.delete(`${user}/${project}`);
  }

  async removeUser(user: Username): Promise<void> {
    for (const key of [...this.links.keys()]) if (key.startsWith(`${user}/`)) this.links.delete(key);
  }

  async projectsWithPreviews(): Promise<{ user: Username; project: ProjectName }[]> {
    return [...this.links.entries()]
      .filter(([, previews]) => previews.size > 0)
      .map(([key]) => key.split('/') as [Username, ProjectName])
      .map(([user, project]) => ({ user, project }))
      .sort((a, b) => `${a.user}/${a.project}`.localeCompare(`${b.user}/${b.project}`));
  }

  async removeLeftovers(): Promise<string[]> {
    return [];
  }
}

/** Keeps the releases queued, in order, as `user/project/release`; makes nothing. */
export class QueuedPrecompression implements Precompression {
  readonly queued: string[] = [];

  queue(user: Username, project: ProjectName, release: ReleaseId): void {
    this.queued.push(`${user}/${project}/${release}`);
  }

  async idle(): Promise<void> {}
}

export class FixedClock implements Clock {
  constructor(public current = new Date('2026-05-01T12:00:00Z')) {}

  now(): Date {
    return this.current;
  }
}

export class SequenceTokenGenerator implements TokenGenerator {
  private n = 0;

  generate(): Token {
    this.n += 1;
    return `T${String(this.n).padStart(31, '0')}` as Token;
  }
}

export async function* bytes(text: string): AsyncGenerator<Uint8Array> {
  if (text !== '') yield Buffer.from(text);
}
