import type { ServiceIdentifier } from 'inversify';
import type { Digest } from '../../domain/manifest.js';
import type { PackedManifest } from '../../domain/packed-manifest.js';
import type { Username } from '../../domain/username.js';

/**
 * An incremental deploy's release built ahead, while its objects upload, so that its
 * publish only adds what came since. A performance hint kept apart from Staging: only
 * the use cases that open or end sessions deal in it, and a staging without it is whole.
 */
export interface ReleasePreparation {
  /**
   * Starts building the session's release now, while its `missing` objects upload, from
   * what the user's store holds: the session's assemble then only adds what came since.
   * A hint, never a promise: it may do nothing (too many at once), and an assemble on
   * another replica, or after a restart, builds the whole release as without it. Never
   * throws; what it built is the session's until assembled or forgotten.
   */
  prepare(user: Username, session: string, manifest: PackedManifest, missing: readonly Digest[]): void;
  /**
   * The session's manifest has changed (its difference from the base came): what prepare
   * built for the old one is changed into the same for `manifest`. Nothing prepared here,
   * or changed once already, and the publish builds the release whole. A hint as prepare
   * is: never throws.
   */
  revise(user: Username, session: string, manifest: PackedManifest, missing: readonly Digest[]): void;
  /** The sessions with a release prepared here and not yet assembled or forgotten. */
  preparedSessions(): string[];
  /** Throws away what prepare built for the session (it ended without a publish here); nothing if none. */
  forgetPrepared(session: string): Promise<void>;
  /** Throws away what prepare built for any of the user's sessions (the user is deleted: it links their bytes). */
  forgetPreparedFor(user: Username): Promise<void>;
}

export const RELEASE_PREPARATION = Symbol.for('sitedrop.ReleasePreparation') as ServiceIdentifier<ReleasePreparation>;
