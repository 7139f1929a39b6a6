import type { ServiceIdentifier } from 'inversify';
import type { HeldManifest } from '../../domain/deploy-session.js';
import type { Digest } from '../../domain/manifest.js';
import type { PreviewName } from '../../domain/preview.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { Username } from '../../domain/username.js';

/**
 * An incremental deploy between its manifest and its publish (docs/content-store.md).
 * Kept in the database: a session must outlive a restart and be seen by every replica.
 */
export interface DeploySession {
  readonly id: string;
  readonly user: Username;
  readonly project: ProjectName;
  /** Undefined for a live deploy. */
  readonly preview: PreviewName | undefined;
  /** The deploy key that opened it; undefined when the user's own token did. */
  readonly keyId: string | undefined;
  /** Its manifest, checked when it opened (or was revised). */
  readonly manifest: HeldManifest;
  /**
   * The manifest's objects no probe found when it was checked, so no size of theirs was
   * held against the manifest's: the publish confirms them before it builds anything.
   * Undefined where that is not known (a session kept before these were): all its objects.
   */
  readonly unconfirmed: readonly Digest[] | undefined;
  /**
   * The bytes it may upload (the domain's uploadableObjects): USER_MAX_BYTES holds the
   * user's open sessions to these together (assertUploadsFit).
   */
  readonly uploadBytes: number;
  /**
   * Which holding it is: each replacement (a revision, objects found missing since) makes
   * the next, so that a request replaces only the holding it read.
   */
  readonly version: number;
  readonly createdAt: Date;
  readonly expiresAt: Date;
}

export type NewDeploySession = Omit<DeploySession, 'id' | 'version'>;

/** What a session holds of its deploy, replaced whole by a revision or by objects found missing since. */
export type SessionHolding = Pick<DeploySession, 'manifest' | 'unconfirmed' | 'uploadBytes'>;

/** A session's holding replaced: the new one, the one it replaces as the caller read it, and the expiry it moves to. */
export interface HoldingChange {
  readonly holding: SessionHolding;
  /** `version` read; `beforeUploads` for a revision, which no batch may have begun before. */
  readonly from: { readonly version: number; readonly beforeUploads: boolean };
  readonly expiresAt: Date;
  readonly now: Date;
  readonly userMaxBytes: number | undefined;
}

/** What bounds an open: DEPLOY_SESSIONS_MAX per signer, and USER_MAX_BYTES (absent, no quota) over the user's sessions' uploadBytes. */
export interface SessionLimits {
  readonly maxPerSigner: number;
  readonly userMaxBytes: number | undefined;
}

/** A session without its manifest: what listing one, or judging whether another supersedes it, needs. */
export type DeploySessionSummary = Omit<DeploySession, 'manifest' | 'unconfirmed' | 'version'>;

export interface DeploySessions {
  /**
   * Opens the session unless its signer already has `maxPerSigner` unexpired at `now`
   * (the domain's `sameSigner`: the user's own token, or that one deploy key); returns
   * its id, or undefined when the signer is at the limit. Throws UploadsOverQuota when
   * the user's sessions' uploadBytes (expired ones not yet swept among them: their
   * uploads are still on disk) and this one's would pass `userMaxBytes`. `superseding`
   * (sessions this one takes the place of) are closed first, and only if it opens. All
   * judged at once with the insert: two opens at the same instant, on any replica, never
   * both fit.
   */
  open(session: NewDeploySession, limits: SessionLimits, now: Date, superseding?: readonly string[]): Promise<string | undefined>;
  /** The session, expired or not; undefined once it is closed, or if it never was. */
  find(id: string): Promise<DeploySession | undefined>;
  /** The user's sessions, expired or not, whoever opened them; oldest first. */
  listUser(user: Username): Promise<DeploySessionSummary[]>;
  /**
   * Ends the sessions the project's deploy keys opened (only key `keyId`'s, when given),
   * not the user's own; returns their ids.
   */
  closeOpenedByKeys(user: Username, project: ProjectName, keyId?: string): Promise<string[]>;
  /**
   * Gives it what it holds now (the manifest a revision made, or the same manifest with
   * objects found missing since among what it may upload), and moves its expiry, if it
   * still holds what the caller read (`from.version`); false if it was not open and
   * unexpired at `now`. Throws, changing nothing: DeploySessionChanged when another
   * request replaced the holding since; SessionUploadedAlready when `from.beforeUploads`
   * (a revision) and a batch has begun (beginUploads); UploadsOverQuota when the user's
   * other sessions' uploadBytes and its new ones would pass `userMaxBytes`.
   */
  replaceManifest(id: string, change: HoldingChange): Promise<boolean>;
  /**
   * A batch of objects begins: from now the session's manifest is no longer revised (its
   * uploads answer to it). Returns the version of what it holds now, read after the mark,
   * or undefined once it is closed.
   */
  beginUploads(id: string): Promise<number | undefined>;
  /**
   * Moves its expiry: every use of a session keeps it alive. With `ifStill`, only if its
   * expiry is still that (a refused request putting back what its use moved, unless
   * another use has moved it since).
   */
  extend(id: string, expiresAt: Date, ifStill?: Date): Promise<void>;
  /** Ends it; false if it was not open. */
  close(id: string): Promise<boolean>;
  /** The ids of sessions expired at `now`. */
  expired(now: Date): Promise<string[]>;
  /** The ids of the sessions the deploy key opened that are unexpired at `now`. */
  openedBy(keyId: string, now: Date): Promise<string[]>;
  /** Which of `ids` are sessions still open (expired or not). */
  stillOpen(ids: readonly string[]): Promise<Set<string>>;
  removeUser(user: Username): Promise<void>;
}

export const DEPLOY_SESSIONS = Symbol.for('sitedrop.DeploySessions') as ServiceIdentifier<DeploySessions>;
