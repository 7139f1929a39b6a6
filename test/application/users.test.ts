import { describe, expect, it } from 'vitest';
import { AuthenticateUser } from '../../src/application/authenticate-user.js';
import { CreateOrRerollUser } from '../../src/application/create-or-reroll-user.js';
import { DeleteUser } from '../../src/application/delete-user.js';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import { InvalidUsername, Unauthorized, UserNotFound } from '../../src/domain/errors.js';
import { manifestOf, type Digest } from '../../src/domain/manifest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { InMemoryDeployKeyStore, InMemoryDeploySessions, InMemoryPreviewLinks, InMemoryDeploys, InMemoryTokenStore, SequenceTokenGenerator, InMemoryWebServer } from '../support/fakes.js';
import { InMemoryDomainLinks, InMemoryDomainStore } from '../support/domain-fakes.js';

function world() {
  const tokens = new InMemoryTokenStore();
  const disk = new InMemoryDeploys();
  const releases = disk.store;
  const lock = new InProcessDeployLock();
  const sessions = new InMemoryDeploySessions();
  return {
    sessions,
    tokens,
    releases,
    disk,
    lock,
    create: new CreateOrRerollUser(tokens, new SequenceTokenGenerator(), lock),
    remove: new DeleteUser(tokens, releases, lock, new InMemoryDeployKeyStore(), new InMemoryPreviewLinks(), sessions, disk.objects, disk.staging, new InMemoryWebServer(), new InMemoryDomainStore(), new InMemoryDomainLinks()),
    authenticate: new AuthenticateUser(tokens),
  };
}

describe('CreateOrRerollUser', () => {
  it('creates a user whose token authenticates', async () => {
    const w = world();
    const issued = await w.create.execute({ username: 'alice' });
    expect(issued.outcome).toBe('created');
    expect(issued.token).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(await w.authenticate.execute(issued.token)).toBe('alice');
  });

  it('a reroll waits for the user\'s deploy that is publishing, so none publishes with the old token after it', async () => {
    const w = world();
    const first = await w.create.execute({ username: 'alice' });
    let finish!: () => void;
    const publishing = w.lock.withProject('alice' as Username, 'docs' as ProjectName, () => new Promise<void>((r) => (finish = r)));
    let rerolled = false;
    const reroll = w.create.execute({ username: 'alice' }).then((issued) => {
      rerolled = true;
      return issued;
    });
    for (let i = 0; i < 10; i += 1) await Promise.resolve();
    await new Promise((r) => setImmediate(r));
    expect(rerolled).toBe(false);
    expect(await w.authenticate.execute(first.token)).toBe('alice');
    finish();
    await publishing;
    await reroll;
    await expect(w.authenticate.execute(first.token)).rejects.toBeInstanceOf(Unauthorized);
  });

  it('rerolls an existing user: the old token stops working', async () => {
    const w = world();
    const first = await w.create.execute({ username: 'alice' });
    const second = await w.create.execute({ username: 'alice' });
    expect(second.outcome).toBe('rerolled');
    expect(second.token).not.toBe(first.token);
    await expect(w.authenticate.execute(first.token)).rejects.toBeInstanceOf(Unauthorized);
    expect(await w.authenticate.execute(second.token)).toBe('alice');
  });

  it('refuses a bad username and stores nothing', async () => {
    const w = world();
    await expect(w.create.execute({ username: 'Alice' })).rejects.toBeInstanceOf(InvalidUsername);
    expect(w.tokens.users.size).toBe(0);
  });
});

describe('AuthenticateUser', () => {
  it('rejects missing, malformed and unknown tokens', async () => {
    const w = world();
    await w.create.execute({ username: 'alice' });
    for (const token of [undefined, '', 'short', 'x'.repeat(33), 'T'.padEnd(32, '9')]) {
      await expect(w.authenticate.execute(token)).rejects.toBeInstanceOf(Unauthorized);
    }
  });
});

describe('DeleteUser', () => {
  async function withSite() {
    const w = world();
    const { token } = await w.create.execute({ username: 'alice' });
    const staged = await w.disk.staging.stage('alice' as Username, (async function* () { yield Buffer.from('site'); })(), { maxFiles: 1, maxBytes: 9 }, new AbortController().signal);
    await w.releases.commit(staged, 'alice' as Username, 'docs' as ProjectName, '20260101T000000' as ReleaseId);
    await w.releases.activate('alice' as Username, 'docs' as ProjectName, '20260101T000000' as ReleaseId);
    return { ...w, token };
  }

  it('persist (the default) keeps the files, and the token dies', async () => {
    const w = await withSite();
    await w.remove.execute({ username: 'alice', files: 'persist' });
    await expect(w.authenticate.execute(w.token)).rejects.toBeInstanceOf(Unauthorized);
    expect(w.disk.live.get('alice/docs')).toBe('20260101T000000');
  });

  it('delete removes the files too', async () => {
    const w = await withSite();
    await w.remove.execute({ username: 'alice', files: 'delete' });
    expect(w.disk.live.size).toBe(0);
    expect(w.disk.tree.size).toBe(0);
  });

  it("closes the user's open deploy sessions and forgets what was prepared for them, whichever files mode, and no one else's", async () => {
    for (const files of ['persist', 'delete'] as const) {
      const w = await withSite();
      const session = { project: 'docs' as ProjectName, preview: undefined, keyId: undefined, manifest: PackedManifest.pack(manifestOf([])), unconfirmed: [], uploadBytes: 0, createdAt: new Date(0), expiresAt: new Date(8.64e15) };
      const mine = (await w.sessions.open({ user: 'alice' as Username, ...session }, { maxPerSigner: 8, userMaxBytes: undefined }, new Date()))!;
      const theirs = (await w.sessions.open({ user: 'bob' as Username, ...session }, { maxPerSigner: 8, userMaxBytes: undefined }, new Date()))!;
      w.disk.staging.prepare('alice' as Username, mine);
      w.disk.staging.prepare('bob' as Username, theirs);
      for (const id of [mine, theirs]) w.disk.uploads.set(id, new Map([['a'.repeat(64) as Digest, 'uploaded']]));
      await w.remove.execute({ username: 'alice', files });
      expect(await w.sessions.stillOpen([mine, theirs])).toEqual(new Set([theirs]));
      expect(w.disk.staging.preparedSessions()).toEqual([theirs]);
      expect([...w.disk.uploads.keys()]).toEqual([theirs]);
    }
  });

  it('a failure while its files go leaves the user, whose token still works, and a delete again finishes', async () => {
    const w = await withSite();
    const removeUserFiles = w.releases.removeUserFiles.bind(w.releases);
    w.releases.removeUserFiles = () => Promise.reject(new Error('the disk went away'));
    await expect(w.remove.execute({ username: 'alice', files: 'delete' })).rejects.toThrow('the disk went away');
    expect(await w.authenticate.execute(w.token)).toBe('alice');
    w.releases.removeUserFiles = removeUserFiles;
    await w.remove.execute({ username: 'alice', files: 'delete' });
    await expect(w.authenticate.execute(w.token)).rejects.toBeInstanceOf(Unauthorized);
    expect(w.disk.live.size).toBe(0);
  });

  it('an unknown user is UserNotFound and nothing changes', async () => {
    const w = await withSite();
    await expect(w.remove.execute({ username: 'bob', files: 'delete' })).rejects.toBeInstanceOf(UserNotFound);
    expect(w.disk.live.get('alice/docs')).toBe('20260101T000000');
    await expect(w.remove.execute({ username: 'B@d', files: 'delete' })).rejects.toBeInstanceOf(InvalidUsername);
  });
});
