import type { KeyName } from '../../src/domain/deploy-key.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Token } from '../../src/domain/token.js';
import type { Username } from '../../src/domain/username.js';
import { FixedClock, InMemoryDeployKeyStore, InMemoryTokenStore } from './fakes.js';

export const ALICE = 'alice' as Username;
/** alice's own token, and the token of her deploy key of `docs`. */
export const OWNER = 'A'.repeat(32);
export const KEY = 'K'.repeat(32);

/** The unit tests' alice, signed in by her own token or by a deploy key (`keyId`) of her project `docs`. */
export async function keyedUser() {
  const tokens = new InMemoryTokenStore();
  await tokens.save(ALICE, OWNER as Token);
  const keys = new InMemoryDeployKeyStore();
  const clock = new FixedClock();
  const keyId = await keys.add({ user: ALICE, project: 'docs' as ProjectName, name: 'ci' as KeyName, scope: 'deploy', createdAt: clock.now(), expiresAt: undefined }, KEY as Token);
  return { tokens, keys, clock, keyId };
}
