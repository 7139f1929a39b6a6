import { randomUUID } from 'node:crypto';
import type { Clock } from '../../src/application/ports/clock.js';
import type { DeployKey, DeployKeyStore, NewDeployKey } from '../../src/application/ports/deploy-key-store.js';
import type { PreviewLinks } from '../../src/application/ports/preview-links.js';
import type { Preview, PreviewName } from '../../src/domain/preview.js';
import type { DeployRecord, DeployRecords } from '../../src/application/ports/deploy-records.js';
import type { ReleaseFs, StagedRelease } from '../../src/application/ports/release-fs.js';
import type { TokenGenerator } from '../../src/application/ports/token-generator.js';
import type { TokenStore } from '../../src/application/ports/token-store.js';
import type { ArchiveLimits } from '../../src/domain/archive-policy.js';
import { ArchiveRejected, DeployAborted, MissingArchive } from '../../src/domain/errors.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';

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

/**
 * Releases as sets in memory. An "archive" is its text: empty is missing, text
 * starting REJECT is refused, anything else is a site with that many bytes.
 */
export class InMemoryReleaseFs implements ReleaseFs {
  readonly staged = new Set<string>();
  readonly tree = new Map<string, Set<ReleaseId>>();
  readonly live = new Map<string, ReleaseId>();
  /** Bytes per release, by `user/project/release`. */
  readonly sizes = new Map<string, number>();
  failActivate = false;
  private next = 0;

  async stage(_user: Username, archive: AsyncIterable<Uint8Array>, _limits: ArchiveLimits, signal: AbortSignal): Promise<StagedRelease> {
    const handle = `staging-${(this.next += 1)}`;
    this.staged.add(handle);
    try {
      let text = '';
      for await (const chunk of archive) {
        if (signal.aborted) throw new DeployAborted();
        text += Buffer.from(chunk).toString();
      }
      if (signal.aborted) throw new DeployAborted();
      if (text === '') throw new MissingArchive();
      if (text.startsWith('REJECT')) throw new ArchiveRejected(text);
      return { handle, files: 1, bytes: text.length };
    } catch (error) {
      this.staged.delete(handle);
      throw error;
    }
  }

  async discard(staged: StagedRelease): Promise<void> {
    this.staged.delete(staged.handle);
  }

  async commit(staged: StagedRelease, user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    if (!this.staged.delete(staged.handle)) throw new Error(`no staging area ${staged.handle}`);
    const key = `${user}/${project}`;
    const set = this.tree.get(key) ?? new Set();
    if (set.has(id)) throw new Error(`release ${id} exists`);
    set.add(id);
    this.tree.set(key, set);
    this.sizes.set(`${key}/${id}`, staged.bytes);
  }

  /** A release put in place without a deploy (one from before deploy records, say). */
  put(user: Username, project: ProjectName, id: ReleaseId, bytes: number): void {
    const key = `${user}/${project}`;
    this.tree.set(key, (this.tree.get(key) ?? new Set()).add(id));
    this.sizes.set(`${key}/${id}`, bytes);
  }

  async activate(user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    if (this.failActivate) throw new Error('disk on fire');
    if (!this.tree.get(`${user}/${project}`)?.has(id)) throw new Error(`no release ${id}`);
    this.live.set(`${user}/${project}`, id);
  }

  async releases(user: Username, project: ProjectName): Promise<ReleaseId[]> {
    return [...(this.tree.get(`${user}/${project}`) ?? [])].sort();
  }

  async liveRelease(user: Username, project: ProjectName): Promise<ReleaseId | undefined> {
    return this.live.get(`${user}/${project}`);
  }

  async removeRelease(user: Username, project: ProjectName, id: ReleaseId): Promise<void> {
    this.tree.get(`${user}/${project}`)?.delete(id);
    this.sizes.delete(`${user}/${project}/${id}`);
  }

  async releaseBytes(user: Username, project: ProjectName, id: ReleaseId): Promise<number> {
    return this.tree.get(`${user}/${project}`)?.has(id) ? (this.sizes.get(`${user}/${project}/${id}`) ?? 0) : 0;
  }

  async projects(user: Username): Promise<ProjectName[]> {
    const names = new Set<string>();
    for (const key of [...this.tree.keys(), ...this.live.keys()]) if (key.startsWith(`${user}/`)) names.add(key.slice(user.length + 1));
    return [...names].sort() as ProjectName[];
  }

  async removeProject(user: Username, project: ProjectName): Promise<void> {
    this.live.delete(`${user}/${project}`);
    this.tree.delete(`${user}/${project}`);
  }

  async removeUserFiles(user: Username): Promise<void> {
    for (const key of [...this.tree.keys()]) if (key.startsWith(`${user}/`)) this.tree.delete(key);
    for (const key of [...this.live.keys()]) if (key.startsWith(`${user}/`)) this.live.delete(key);
  }

  async removeLeftovers(): Promise<string[]> {
    const removed = [...this.staged];
    this.staged.clear();
    return removed;
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
