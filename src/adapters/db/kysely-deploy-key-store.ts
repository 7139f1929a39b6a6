import { randomUUID } from 'node:crypto';
import { inject, injectable } from 'inversify';
import type { Kysely, Selectable } from 'kysely';
import type { DeployKey, DeployKeyStore, NewDeployKey } from '../../application/ports/deploy-key-store.js';
import type { KeyName, KeyScope } from '../../domain/deploy-key.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { Token } from '../../domain/token.js';
import type { Username } from '../../domain/username.js';
import { hashToken } from '../crypto/token-hash.js';
import { DATABASE } from './kysely-token-store.js';
import type { DeployKeysTable, Schema } from './schema.js';

const date = (text: string | null): Date | undefined => (text === null ? undefined : new Date(text));

function toKey(row: Selectable<DeployKeysTable>): DeployKey {
  return {
    id: row.id,
    user: row.username as Username,
    project: row.project as ProjectName,
    name: row.name as KeyName,
    scope: row.scope as KeyScope,
    createdAt: new Date(row.created_at),
    expiresAt: date(row.expires_at),
    lastUsedAt: date(row.last_used_at),
  };
}

/** Deploy keys in SQLite or PostgreSQL; a key's token is kept only as its SHA-256. */
@injectable()
export class KyselyDeployKeyStore implements DeployKeyStore {
  constructor(@inject(DATABASE) private readonly db: Kysely<Schema>) {}

  async add(key: NewDeployKey, token: Token): Promise<string> {
    const id = randomUUID();
    await this.db
      .insertInto('deploy_keys')
      .values({
        id,
        username: key.user,
        project: key.project,
        name: key.name,
        scope: key.scope,
        token_hash: hashToken(token),
        created_at: key.createdAt.toISOString(),
        expires_at: key.expiresAt?.toISOString() ?? null,
        last_used_at: null,
      })
      .execute();
    return id;
  }

  async findByToken(token: Token): Promise<DeployKey | undefined> {
    const row = await this.db.selectFrom('deploy_keys').selectAll().where('token_hash', '=', hashToken(token)).executeTakeFirst();
    return row === undefined ? undefined : toKey(row);
  }

  async list(user: Username, project: ProjectName): Promise<DeployKey[]> {
    const rows = await this.db
      .selectFrom('deploy_keys')
      .selectAll()
      .where('username', '=', user)
      .where('project', '=', project)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toKey);
  }

  async remove(user: Username, project: ProjectName, id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('deploy_keys').where('username', '=', user).where('project', '=', project).where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  async removeProject(user: Username, project: ProjectName): Promise<void> {
    await this.db.deleteFrom('deploy_keys').where('username', '=', user).where('project', '=', project).execute();
  }

  async removeUser(user: Username): Promise<void> {
    await this.db.deleteFrom('deploy_keys').where('username', '=', user).execute();
  }

  async touch(id: string, at: Date): Promise<void> {
    await this.db.updateTable('deploy_keys').set({ last_used_at: at.toISOString() }).where('id', '=', id).execute();
  }
}
