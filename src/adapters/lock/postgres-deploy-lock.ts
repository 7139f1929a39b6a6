import { createHash } from 'node:crypto';
import { inject, injectable, type ServiceIdentifier } from 'inversify';
import { type Kysely, sql } from 'kysely';
import type { DeployLock } from '../../application/ports/deploy-lock.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { Username } from '../../domain/username.js';

/**
 * A database used only to hold advisory locks. It is separate from the main pool on
 * purpose: a waiter holds a connection while it waits, and if waiters could take every
 * connection, the lock holder's own queries would never run.
 */
export const LOCK_DATABASE = Symbol.for('sitedrop.LockDatabase') as ServiceIdentifier<Kysely<unknown>>;

/** A stable signed 64-bit key for an advisory lock: the first 8 bytes of a SHA-256. */
export function advisoryKey(name: string): string {
  return createHash('sha256').update(name, 'utf8').digest().readBigInt64BE(0).toString();
}

/**
 * The deploy lock shared by every replica on one PostgreSQL database: transaction-scoped
 * advisory locks, released by the server even when a replica dies holding one.
 * A project holds its user's key shared and its own key exclusively; deleting a user
 * holds the user's key exclusively.
 */
@injectable()
export class PostgresDeployLock implements DeployLock {
  constructor(@inject(LOCK_DATABASE) private readonly db: Kysely<unknown>) {}

  withProject<T>(user: Username, project: ProjectName, work: () => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock_shared(${advisoryKey(`user:${user}`)}::bigint)`.execute(trx);
      await sql`select pg_advisory_xact_lock(${advisoryKey(`project:${user}/${project}`)}::bigint)`.execute(trx);
      return work();
    });
  }

  withUser<T>(user: Username, work: () => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${advisoryKey(`user:${user}`)}::bigint)`.execute(trx);
      return work();
    });
  }
}
