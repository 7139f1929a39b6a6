import type { ServiceIdentifier } from 'inversify';
import type { KeyName, KeyScope } from '../../domain/deploy-key.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { Token } from '../../domain/token.js';
import type { Username } from '../../domain/username.js';

export interface DeployKey {
  readonly id: string;
  /** Whose project the key deploys: the user who made it. */
  readonly user: Username;
  readonly project: ProjectName;
  readonly name: KeyName;
  readonly scope: KeyScope;
  readonly createdAt: Date;
  /** Undefined: the key never expires. */
  readonly expiresAt: Date | undefined;
  /** Undefined until the key first signs a deploy. */
  readonly lastUsedAt: Date | undefined;
}

export type NewDeployKey = Omit<DeployKey, 'id' | 'lastUsedAt'>;

/** Deploy keys. Implementations keep only a hash of a key's token, as for user tokens. */
export interface DeployKeyStore {
  /** Keeps the key and returns the id it was given. */
  add(key: NewDeployKey, token: Token): Promise<string>;
  /** The key this token is, expired or not; undefined for any other token. */
  findByToken(token: Token): Promise<DeployKey | undefined>;
  /** A project's keys, oldest first. */
  list(user: Username, project: ProjectName): Promise<DeployKey[]>;
  /** False when the project has no key with this id. */
  remove(user: Username, project: ProjectName, id: string): Promise<boolean>;
  removeProject(user: Username, project: ProjectName): Promise<void>;
  removeUser(user: Username): Promise<void>;
  touch(id: string, at: Date): Promise<void>;
}

export const DEPLOY_KEY_STORE = Symbol.for('sitedrop.DeployKeyStore') as ServiceIdentifier<DeployKeyStore>;
