import { createHash } from 'node:crypto';
import { inject, injectable, type ServiceIdentifier } from 'inversify';
import { type Kysely, sql } from 'kysely';
import { advisoryKey } from '../db/advisory-key.js';
import type { DeployLock, HeldProjectLock } from '../../application/ports/deploy-lock.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { Username } from '../../domain/username.js';

/**
 * A database used only to hold advisory locks. It is separate from the main pool on
 * purpose: a waiter holds a connection while it waits, and if waiters could take every
 * connection, the lock holder's own queries would never run.
 */
export const LOCK_DATABASE = Symbol.for('sitedrop.LockDatabase') as ServiceIdentifier<Kysely<unknown>>;

/**
 * The key of a user's storage lock, in the other key space PostgreSQL offers: a pair of
 * 32-bit keys, which never overlaps the single 64-bit keys of the project and user locks
 * (the docs' "these two key spaces do not overlap"), so no hash can make the two collide.
 */
export function storageKey(user: Username): [number, number] {
  const digest = createHash('sha256').update(`storage:${user}`, 'utf8').digest();
  return [digest.readInt32BE(0), digest.readInt32BE(4)];
}

/**
 * The deploy lock shared by every replica on one PostgreSQL database: transaction-scoped
 * advisory locks, released by the server even when a replica dies holding one.
 * A project holds its user's key shared and its own key exclusively; deleting a user
 * holds the user's key exclusively. The user's storage lock is taken in the project's
 * transaction, on its connection: it goes when the project lock does, and needs no second
 * connection (waiters holding every connection of the pool could otherwise starve it).
 */
@injectable()
export class PostgresDeployLock implements DeployLock {
  constructor(@inject(LOCK_DATABASE) private readonly db: Kysely<unknown>) {}

  withProject<T>(user: Username, project: ProjectName, work: (held: HeldProjectLock) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock_shared(${advisoryKey(`user:${user}`)}::bigint)`.execute(trx);
      await sql`select pg_advisory_xact_lock(${advisoryKey(`project:${user}/${project}`)}::bigint)`.execute(trx);
      let storage: Promise<unknown> | undefined;
      const [high, low] = storageKey(user);
      const held: HeldProjectLock = {
        lockUserStorage: async () => {
          storage ??= sql`select pg_advisory_xact_lock(${high}::int4, ${low}::int4)`.execute(trx);
          await storage;
        },
      };
      try {
        return await work(held);
      } finally {
        // The transaction must not end under a lock query still in flight.
        await storage?.catch(() => undefined);
      }
    });
  }

  withUser<T>(user: Username, work: () => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${advisoryKey(`user:${user}`)}::bigint)`.execute(trx);
      return work();
    });
  }
}
