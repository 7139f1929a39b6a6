import { inject, injectable } from 'inversify';
import type { Kysely, Selectable } from 'kysely';
import type { DomainStore } from '../../application/ports/domain-store.js';
import type { DomainClaim, DomainName } from '../../domain/custom-domain.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { Username } from '../../domain/username.js';
import { DATABASE } from './kysely-token-store.js';
import type { DomainsTable, Schema } from './schema.js';

function toClaim(row: Selectable<DomainsTable>): DomainClaim {
  return {
    user: row.username as Username,
    project: row.project as ProjectName,
    domain: row.domain as DomainName,
    challenge: row.challenge,
    createdAt: new Date(row.created_at),
    verifiedAt: row.verified_at === null ? undefined : new Date(row.verified_at),
  };
}

/** PostgreSQL's unique_violation, or SQLite's. */
function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE';
}

/** Custom domain claims in SQLite or PostgreSQL (migration 007). */
@injectable()
export class KyselyDomainStore implements DomainStore {
  constructor(@inject(DATABASE) private readonly db: Kysely<Schema>) {}

  private own(user: Username, project: ProjectName, domain: DomainName) {
    return this.db.selectFrom('domains').selectAll().where('username', '=', user).where('project', '=', project).where('domain', '=', domain);
  }

  async add(claim: DomainClaim): Promise<DomainClaim> {
    await this.db
      .insertInto('domains')
      .values({
        username: claim.user,
        project: claim.project,
        domain: claim.domain,
        challenge: claim.challenge,
        created_at: claim.createdAt.toISOString(),
        verified_at: claim.verifiedAt?.toISOString() ?? null,
      })
      .onConflict((oc) => oc.columns(['username', 'project', 'domain']).doNothing())
      .execute();
    return toClaim(await this.own(claim.user, claim.project, claim.domain).executeTakeFirstOrThrow());
  }

  async claimsOf(domain: DomainName): Promise<DomainClaim[]> {
    const rows = await this.db.selectFrom('domains').selectAll().where('domain', '=', domain).orderBy('created_at').orderBy('username').orderBy('project').execute();
    return rows.map(toClaim);
  }

  async list(user: Username, project: ProjectName): Promise<DomainClaim[]> {
    const rows = await this.db.selectFrom('domains').selectAll().where('username', '=', user).where('project', '=', project).orderBy('domain').execute();
    return rows.map(toClaim);
  }

  async markVerified(user: Username, project: ProjectName, domain: DomainName, at: Date): Promise<boolean> {
    try {
      await this.db
        .updateTable('domains')
        .set({ verified_at: at.toISOString() })
        .where('username', '=', user)
        .where('project', '=', project)
        .where('domain', '=', domain)
        .where('verified_at', 'is', null)
        .execute();
    } catch (error) {
      // The partial unique index: another project's claim is verified already.
      if (isUniqueViolation(error)) return false;
      throw error;
    }
    const row = await this.own(user, project, domain).executeTakeFirst();
    return row !== undefined && row.verified_at !== null;
  }

  async verified(domain: DomainName): Promise<DomainClaim | undefined> {
    const row = await this.db.selectFrom('domains').selectAll().where('domain', '=', domain).where('verified_at', 'is not', null).executeTakeFirst();
    return row === undefined ? undefined : toClaim(row);
  }

  async remove(user: Username, project: ProjectName, domain: DomainName): Promise<boolean> {
    const result = await this.db.deleteFrom('domains').where('username', '=', user).where('project', '=', project).where('domain', '=', domain).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async removeProject(user: Username, project: ProjectName): Promise<DomainName[]> {
    const rows = await this.db.deleteFrom('domains').where('username', '=', user).where('project', '=', project).returning(['domain', 'verified_at']).execute();
    return rows.filter((r) => r.verified_at !== null).map((r) => r.domain as DomainName);
  }

  async removeUser(user: Username): Promise<DomainName[]> {
    const rows = await this.db.deleteFrom('domains').where('username', '=', user).returning(['domain', 'verified_at']).execute();
    return rows.filter((r) => r.verified_at !== null).map((r) => r.domain as DomainName);
  }
}
