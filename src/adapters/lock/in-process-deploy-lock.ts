import { injectable } from 'inversify';
import type { DeployLock, HeldProjectLock } from '../../application/ports/deploy-lock.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { Username } from '../../domain/username.js';

type Waiter = { shared: boolean; wake: () => void };

/** A fair (first come, first served) readers-writer lock on one key. */
class RwLock {
  private readers = 0;
  private writer = false;
  private readonly queue: Waiter[] = [];

  get idle(): boolean {
    return this.readers === 0 && !this.writer && this.queue.length === 0;
  }

  acquire(shared: boolean): Promise<void> {
    return new Promise((wake) => {
      this.queue.push({ shared, wake });
      this.drain();
    });
  }

  release(shared: boolean): void {
    if (shared) this.readers -= 1;
    else this.writer = false;
    this.drain();
  }

  private drain(): void {
    while (this.queue.length > 0 && !this.writer) {
      const next = this.queue[0]!;
      if (!next.shared && this.readers > 0) return;
      this.queue.shift();
      if (next.shared) this.readers += 1;
      else this.writer = true;
      next.wake();
      if (!next.shared) return;
    }
  }
}

class KeyedLocks {
  private readonly locks = new Map<string, RwLock>();

  async run<T>(key: string, shared: boolean, work: () => Promise<T>): Promise<T> {
    const release = await this.hold(key, shared);
    try {
      return await work();
    } finally {
      release();
    }
  }

  /** Waits for the lock on `key`; returns what releases it. */
  async hold(key: string, shared: boolean): Promise<() => void> {
    let lock = this.locks.get(key);
    if (!lock) {
      lock = new RwLock();
      this.locks.set(key, lock);
    }
    await lock.acquire(shared);
    const held = lock;
    return () => {
      held.release(shared);
      if (held.idle) this.locks.delete(key);
    };
  }
}

/**
 * One process's deploy lock: a project holds its user's lock shared and its own
 * exclusively; deleting a user holds the user's lock exclusively. The user's storage
 * lock is a third, exclusive one, only ever taken inside a project's.
 */
@injectable()
export class InProcessDeployLock implements DeployLock {
  private readonly users = new KeyedLocks();
  private readonly projects = new KeyedLocks();
  private readonly storage = new KeyedLocks();

  withProject<T>(user: Username, project: ProjectName, work: (held: HeldProjectLock) => Promise<T>): Promise<T> {
    return this.users.run(user, true, () =>
      this.projects.run(`${user}/${project}`, false, async () => {
        let storage: Promise<() => void> | undefined;
        const held: HeldProjectLock = {
          lockUserStorage: async () => {
            storage ??= this.storage.hold(user, false);
            await storage;
          },
        };
        try {
          return await work(held);
        } finally {
          if (storage) (await storage)();
        }
      }),
    );
  }

  withUser<T>(user: Username, work: () => Promise<T>): Promise<T> {
    return this.users.run(user, false, work);
  }
}
