import { InvalidKeyExpiry, InvalidKeyName, InvalidKeyScope } from './errors.js';
import type { ProjectName } from './project-name.js';

/**
 * A deploy key is a CI secret that can deploy one project of one user and nothing else.
 * `deploy` publishes live and previews; `preview` publishes previews only, so a pull
 * request's pipeline holding it can never change the live site.
 */
export type KeyScope = 'deploy' | 'preview';
export const KEY_SCOPES: readonly KeyScope[] = ['deploy', 'preview'];

export const KeyScope = {
  parse(value: string): KeyScope {
    if (!(KEY_SCOPES as readonly string[]).includes(value)) throw new InvalidKeyScope();
    return value as KeyScope;
  },
};

export type KeyName = string & { readonly __brand: 'KeyName' };

export const KeyName = {
  /** Free text for people ("GitHub Actions, docs"), but one line of it. */
  parse(value: string): KeyName {
    if (value.length < 1 || [...value].length > 64 || /\p{Cc}/u.test(value)) throw new InvalidKeyName();
    return value as KeyName;
  },
};

/** Ten years: a longer life is "never", which is asked for by leaving expiresInDays out. */
export const MAX_KEY_DAYS = 3650;
const DAY_MS = 86_400_000;

/** When a key made at `createdAt` stops working; undefined, never. */
export function keyExpiry(createdAt: Date, expiresInDays: number | undefined): Date | undefined {
  if (expiresInDays === undefined) return undefined;
  if (!Number.isInteger(expiresInDays) || expiresInDays < 1 || expiresInDays > MAX_KEY_DAYS) throw new InvalidKeyExpiry(MAX_KEY_DAYS);
  return new Date(createdAt.getTime() + expiresInDays * DAY_MS);
}

/** A key is dead from its expiry instant on. */
export function isExpired(expiresAt: Date | undefined, now: Date): boolean {
  return expiresAt !== undefined && now.getTime() >= expiresAt.getTime();
}

/** What a key may do, as far as a deploy is concerned. */
export interface KeyGrant {
  readonly project: ProjectName;
  readonly scope: KeyScope;
}

/**
 * A key deploys its own project only; a `preview` key only with a preview name.
 * `preview` is the deploy's preview name, undefined for a live deploy.
 */
export function keyPermitsDeploy(grant: KeyGrant, project: ProjectName, preview: string | undefined): boolean {
  return keyPermitsProject(grant, project) && (grant.scope === 'deploy' || preview !== undefined);
}

/** The half of `keyPermitsDeploy` that can be judged as soon as the project is named. */
export function keyPermitsProject(grant: KeyGrant, project: ProjectName): boolean {
  return grant.project === project;
}
