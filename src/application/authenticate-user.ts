import { inject, injectable } from 'inversify';
import { Unauthorized } from '../domain/errors.js';
import { Token } from '../domain/token.js';
import type { Username } from '../domain/username.js';
import { TOKEN_STORE, type TokenStore } from './ports/token-store.js';

/** Resolves a user bearer token to its user, or throws Unauthorized. */
@injectable()
export class AuthenticateUser {
  constructor(@inject(TOKEN_STORE) private readonly tokens: TokenStore) {}

  async execute(presented: string | undefined): Promise<Username> {
    const token = presented === undefined ? undefined : Token.fromString(presented);
    const user = token === undefined ? undefined : await this.tokens.findUser(token);
    if (user === undefined) throw new Unauthorized();
    return user;
  }
}
