import { isExpired, keyPermitsDeploy, keyPermitsProject, type KeyGrant } from '../domain/deploy-key.js';
import { Unauthorized } from '../domain/errors.js';
import type { PreviewName } from '../domain/preview.js';
import type { ProjectName } from '../domain/project-name.js';
import { Token } from '../domain/token.js';
import type { Username } from '../domain/username.js';
import type { DeployKeyStore } from './ports/deploy-key-store.js';
import type { TokenStore } from './ports/token-store.js';

/** Who a deploy's bearer token speaks for: a user, or a deploy key of one of its projects. */
export interface Deployer {
  /** The user, or the key's owner: the deploy publishes under this name. */
  readonly user: Username;
  /** Set when a deploy key, not a user token, signed the request. */
  readonly key?: KeyGrant & { readonly id: string };
}

/**
 * A user token, else an unexpired deploy key; undefined for anything else. Both are
 * looked up by a hash of the token, so no comparison ever runs over the secret itself.
 */
export async function resolveDeployer(tokens: TokenStore, keys: DeployKeyStore, now: Date, presented: string | undefined): Promise<Deployer | undefined> {
  const token = presented === undefined ? undefined : Token.fromString(presented);
  if (token === undefined) return undefined;
  const user = await tokens.findUser(token);
  if (user !== undefined) return { user };
  const key = await keys.findByToken(token);
  if (key === undefined || isExpired(key.expiresAt, now)) return undefined;
  return { user: key.user, key: { id: key.id, project: key.project, scope: key.scope } };
}

/**
 * A user deploys any project of its own; a key only what it grants. `preview` is the
 * deploy's preview name, undefined for a live deploy, or 'not yet known' while the form
 * has named only the project (then only the project is judged).
 */
export function mayDeploy(deployer: Deployer, project: ProjectName, preview: string | undefined | NotYetKnown): boolean {
  if (deployer.key === undefined) return true;
  return preview === NOT_YET_KNOWN ? keyPermitsProject(deployer.key, project) : keyPermitsDeploy(deployer.key, project, preview);
}

export const NOT_YET_KNOWN = Symbol('not yet known');
export type NotYetKnown = typeof NOT_YET_KNOWN;

/** A deploy as it was signed in: who, with which token, to what project and preview. */
export interface SignedDeploy {
  readonly user: Username;
  readonly token: string;
  readonly project: ProjectName;
  readonly preview: PreviewName | undefined | NotYetKnown;
}

/**
 * The deploy was signed in before its upload; since then its token may have been
 * rerolled, its key revoked or expired, or its user deleted (and perhaps created again
 * with a new token). A key must also grant this project. A key's last use is an audit
 * trail: it moves here, once a request is judged whole (its preview known) and allowed.
 */
export async function assertStillAuthorised(tokens: TokenStore, keys: DeployKeyStore, now: Date, deploy: SignedDeploy, judge?: (deployer: Deployer) => Promise<void>): Promise<void> {
  const deployer = await resolveDeployer(tokens, keys, now, deploy.token);
  if (deployer === undefined || deployer.user !== deploy.user || !mayDeploy(deployer, deploy.project, deploy.preview)) throw new Unauthorized();
  // The caller's own rule, before the use is recorded: a request it refuses changes nothing.
  await judge?.(deployer);
  if (deployer.key && deploy.preview !== NOT_YET_KNOWN) await keys.touch(deployer.key.id, now);
}
