import { injectable } from 'inversify';
import type { DeployLock } from '../../application/ports/deploy-lock.js';
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
    let lock = this.locks.get(key);
    if (!lock) {
      lock = new RwLock();
      this.locks.set(key, lock);
    }
    await lock.acquire(shared);
    try {
      return await work();
    } finally {
      lock.release(shared);
      if (lock.idle) this.locks.delete(key);
    }
  }
}

/**
 * One process's deploy lock: a project holds its user's lock shared and its own
 * exclusively; deleting a user holds the user's lock exclusively.
 */
@injectable()
export class InProcessDeployLock implements DeployLock {
  private readonly users = new KeyedLocks();
  private readonly projects = new KeyedLocks();

  withProject<T>(user: Username, project: ProjectName, work: () => Promise<T>): Promise<T> {
    return this.users.run(user, true, () => this.projects.run(`${user}/${project}`, false, work));
  }

  withUser<T>(user: Username, work: () => Promise<T>): Promise<T> {
    return this.users.run(user, false, work);
  }
}
