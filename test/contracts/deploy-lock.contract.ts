import { describe, expect, it } from 'vitest';
import type { DeployLock } from '../../src/application/ports/deploy-lock.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Username } from '../../src/domain/username.js';

const u = 'u' as Username;
const v = 'v' as Username;
const p = (name: string) => name as ProjectName;
const tick = (ms = 15) => new Promise((r) => setTimeout(r, ms));

/**
 * What every DeployLock must do. `open` may return two handles on one lock (two
 * replicas); a single-process lock returns the same handle twice.
 */
export function deployLockContract(name: string, open: () => Promise<{ a: DeployLock; b: DeployLock; close(): Promise<void> }>): void {
  describe(`DeployLock contract: ${name}`, () => {
    const withLocks = (test: (a: DeployLock, b: DeployLock) => Promise<void>) => async () => {
      const locks = await open();
      try {
        await test(locks.a, locks.b);
      } finally {
        await locks.close();
      }
    };

    it('runs one project at a time across handles', withLocks(async (a, b) => {
      let inside = 0;
      let most = 0;
      const job = (lock: DeployLock) => lock.withProject(u, p('site'), async () => {
        inside += 1;
        most = Math.max(most, inside);
        await tick();
        inside -= 1;
      });
      await Promise.all([job(a), job(b), job(a), job(b)]);
      expect(most).toBe(1);
    }));

    it('runs different projects side by side', withLocks(async (a, b) => {
      // Each holds its project's lock until the other holds its own: were they one lock,
      // this never ends. (Overlapping 40 ms sleeps missed each other on a loaded machine.)
      const inside = [0, 1].map(() => {
        let enter!: () => void;
        return { entered: new Promise<void>((r) => (enter = r)), enter };
      });
      const job = (lock: DeployLock, name: string, me: number) => lock.withProject(u, p(name), async () => {
        inside[me]!.enter();
        await inside[1 - me]!.entered;
      });
      await Promise.all([job(a, 'one', 0), job(b, 'two', 1)]);
    }));

    it('a user-wide job excludes that user\'s projects', withLocks(async (a, b) => {
      const log: string[] = [];
      let holding!: () => void;
      const held = new Promise<void>((r) => (holding = r));
      const project = a.withProject(u, p('site'), async () => {
        log.push('deploy start');
        holding();
        await tick(40);
        log.push('deploy end');
      });
      // Once the project's lock is held, not after a fixed 10 ms, which a loaded machine
      // could take to grant it.
      await held;
      const wipe = b.withUser(u, async () => {
        log.push('wipe');
      });
      await Promise.all([project, wipe]);
      expect(log).toEqual(['deploy start', 'deploy end', 'wipe']);
    }));

    it('a user\'s storage lock admits one of their projects at a time, across handles', withLocks(async (a, b) => {
      let inside = 0;
      let most = 0;
      const job = (lock: DeployLock, name: string) => lock.withProject(u, p(name), async (held) => {
        await held.lockUserStorage();
        inside += 1;
        most = Math.max(most, inside);
        await tick();
        inside -= 1;
      });
      await Promise.all([job(a, 'one'), job(b, 'two'), job(a, 'three'), job(b, 'four')]);
      expect(most).toBe(1);
    }));

    it('storage locks of different users do not wait for each other', withLocks(async (a, b) => {
      // Each holds its storage lock until the other holds its own: were they one lock, this never ends.
      const inside = [0, 1].map(() => {
        let enter!: () => void;
        return { entered: new Promise<void>((r) => (enter = r)), enter };
      });
      const job = (lock: DeployLock, user: Username, me: number) => lock.withProject(user, p('site'), async (held) => {
        await held.lockUserStorage();
        inside[me]!.enter();
        await inside[1 - me]!.entered;
      });
      await Promise.all([job(a, u, 0), job(b, v, 1)]);
    }));

    it('the storage lock goes with the project lock, also when the work throws; taking it twice is harmless', withLocks(async (a, b) => {
      await expect(a.withProject(u, p('one'), async (held) => {
        await held.lockUserStorage();
        await held.lockUserStorage();
        throw new Error('boom');
      })).rejects.toThrow('boom');
      await expect(b.withProject(u, p('two'), async (held) => {
        await held.lockUserStorage();
        return 'ok';
      })).resolves.toBe('ok');
    }));

    it('projects waiting for the storage lock and a user-wide job queued behind them all finish', withLocks(async (a, b) => {
      const log: string[] = [];
      let holding!: () => void;
      const held = new Promise<void>((r) => (holding = r));
      const first = a.withProject(u, p('one'), async (lock) => {
        await lock.lockUserStorage();
        holding();
        await tick(40);
        log.push('one');
      });
      await held;
      const second = b.withProject(u, p('two'), async (lock) => {
        await lock.lockUserStorage();
        log.push('two');
      });
      const wipe = b.withUser(u, async () => {
        log.push('wipe');
      });
      await Promise.all([first, second, wipe]);
      expect(log[0]).toBe('one');
      expect([...log].sort()).toEqual(['one', 'two', 'wipe']);
    }));

    it('releases the lock when the work throws, and passes results through', withLocks(async (a, b) => {
      await expect(a.withProject(u, p('site'), async () => { throw new Error('boom'); })).rejects.toThrow('boom');
      await expect(b.withProject(u, p('site'), async () => 'ok')).resolves.toBe('ok');
    }));
  });
}
