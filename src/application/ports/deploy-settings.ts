import type { ServiceIdentifier } from 'inversify';
import type { ArchiveLimits } from '../../domain/archive-policy.js';

export interface DeploySettings {
  readonly releasesKeep: number;
  readonly archiveLimits: ArchiveLimits;
  /** The most bytes a user's kept releases may hold (USER_MAX_BYTES); absent, no quota. */
  readonly userMaxBytes?: number;
  /** PREVIEWS_MAX and PREVIEW_TTL_SECONDS; absent, their defaults. */
  readonly previews?: PreviewSettings;
  /** DEPLOY_SESSIONS_MAX and DEPLOY_SESSION_SECONDS; absent, their defaults. */
  readonly sessions?: SessionSettings;
}

export interface SessionSettings {
  /** Incremental deploy sessions one signer may have open at once: the user's own token, and each deploy key apart (domain sameSigner). */
  readonly maxPerSigner: number;
  /** How long a session lives after its last use. */
  readonly ttlSeconds: number;
}

export const DEFAULT_SESSION_SETTINGS: SessionSettings = { maxPerSigner: 8, ttlSeconds: 3600 };

export interface PreviewSettings {
  /** Previews a project may have at once. */
  readonly max: number;
  /** How long a preview lives after its last deploy. */
  readonly ttlSeconds: number;
}

export const DEFAULT_PREVIEW_SETTINGS: PreviewSettings = { max: 20, ttlSeconds: 7 * 86_400 };

export const DEPLOY_SETTINGS = Symbol.for('sitedrop.DeploySettings') as ServiceIdentifier<DeploySettings>;
