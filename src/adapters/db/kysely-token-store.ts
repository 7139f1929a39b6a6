import { inject, injectable, type ServiceIdentifier } from 'inversify';
import type { Kysely } from 'kysely';
import type { TokenStore } from '../../application/ports/token-store.js';
import type { Token } from '../../domain/token.js';
import type { Username } from '../../domain/username.js';
import { hashToken } from '../crypto/token-hash.js';
import type { Schema } from './schema.js';

export const DATABASE = Symbol.for('sitedrop.Database') as ServiceIdentifier<Kysely<Schema>>;

/** One store for every kysely dialect: the SQL here is portable between SQLite and PostgreSQL. */
@injectable()
export class KyselyTokenStore implements TokenStore {
  constructor(@inject(DATABASE) private readonly db: Kysely<Schema>) {}

  async save(user: Username, token: Token): Promise<'created' | 'rerolled'> {
    const now = new Date().toISOString();
    const existed = await this.exists(user);
    // An upsert, so two concurrent creates of one name both succeed and the last token wins.
    await this.db
      .insertInto('users')
      .values({ username: user, token_hash: hashToken(token), created_at: now, updated_at: now })
      .onConflict((oc) => oc.column('username').doUpdateSet({ token_hash: hashToken(token), updated_at: now }))
      .execute();
    return existed ? 'rerolled' : 'created';
  }

  async findUser(token: Token): Promise<Username | undefined> {
    const row = await this.db.selectFrom('users').select('username').where('token_hash', '=', hashToken(token)).executeTakeFirst();
    return row?.username as Username | undefined;
  }

  async exists(user: Username): Promise<boolean> {
    const row = await this.db.selectFrom('users').select('username').where('username', '=', user).executeTakeFirst();
    return row !== undefined;
  }

  async usernames(): Promise<Username[]> {
    const rows = await this.db.selectFrom('users').select('username').orderBy('username').execute();
    return rows.map((row) => row.username as Username);
  }

  async remove(user: Username): Promise<boolean> {
    const result = await this.db.deleteFrom('users').where('username', '=', user).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}
