import type { ServiceIdentifier } from 'inversify';
import type { Token } from '../../domain/token.js';
import type { Username } from '../../domain/username.js';

/** Users and their current token. Implementations keep only a hash of the token. */
export interface TokenStore {
  /** Creates the user or replaces its token; the previous token stops working at once. */
  save(user: Username, token: Token): Promise<'created' | 'rerolled'>;
  findUser(token: Token): Promise<Username | undefined>;
  exists(user: Username): Promise<boolean>;
  /** False when there was no such user. */
  remove(user: Username): Promise<boolean>;
  /** Every username, in order; never tokens. */
  usernames(): Promise<Username[]>;
}

export const TOKEN_STORE = Symbol.for('sitedrop.TokenStore') as ServiceIdentifier<TokenStore>;
