import { inject, injectable } from 'inversify';
import type { Username } from '../domain/username.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { TOKEN_STORE, type TokenStore } from './ports/token-store.js';

export interface UserSummary {
  readonly username: Username;
  readonly projects: number;
}

/** For the administrator: who exists and how many projects each has. Never tokens. */
@injectable()
export class ListUsers {
  constructor(
    @inject(TOKEN_STORE) private readonly tokens: TokenStore,
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
  ) {}

  async execute(): Promise<UserSummary[]> {
    const users = await this.tokens.usernames();
    return Promise.all(users.map(async (username) => ({ username, projects: (await this.releases.projects(username)).length })));
  }
}
