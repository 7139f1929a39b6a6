import type { ServiceIdentifier } from 'inversify';
import type { ProjectScope } from '../../domain/deploy-session.js';
import type { Digest } from '../../domain/manifest.js';
import type { PackedManifest } from '../../domain/packed-manifest.js';
import type { Username } from '../../domain/username.js';

/**
 * The object side of an incremental deploy: what a user's store lacks, and the objects a
 * session uploads, kept apart from the store until a release built from them
 * (Staging.assemble) is committed (those it links join the store then, or after the
 * answer), so a session given up changes nothing.
 */
export interface SessionObjects {
  /**
   * Which of `objects` (digest to size) neither the user's store nor the session's
   * uploads (none before it opens) hold, once the store has taken what the user's last
   * deploys brought it. Throws ManifestRejected when one is held at
   * another size: the manifest lies about it. With `scope` (a deploy key's session), the
   * store answers only for objects the project's releases hold: any other is missing,
   * listed where the same object absent from the store would be, and no size is held
   * against it.
   */
  missing(user: Username, session: string | undefined, objects: ReadonlyMap<Digest, number>, scope?: ProjectScope): Promise<Digest[]>;
  /**
   * Keeps with `session` what the sessions `from` uploaded of `objects` (digest to size),
   * so that it holds them whatever becomes of those sessions; returns the digests it took.
   */
  shareUploads(from: readonly string[], session: string, objects: ReadonlyMap<Digest, number>): Promise<Digest[]>;
  /**
   * Keeps a batch of objects (a gzip-compressed tar of files named by digest) with the
   * session, each checked against `expected` (what the session may upload: the domain's
   * uploadableObjects) and its bytes against its
   * name. Each is kept as the session's own, whether or not the store has it meanwhile:
   * what an upload answered for stays until the publish or the session's end. Throws ObjectsRejected, keeping nothing of the batch, or DeployAborted when
   * `signal` fires. Returns how many objects the batch held.
   */
  receive(user: Username, session: string, batch: AsyncIterable<Uint8Array>, expected: PackedManifest, signal: AbortSignal): Promise<number>;
  /** Removes what the session uploaded. */
  removeUploads(session: string): Promise<void>;
  /** The sessions with uploads kept on disk. */
  sessionsWithUploads(): Promise<string[]>;
}

export const SESSION_OBJECTS = Symbol.for('sitedrop.SessionObjects') as ServiceIdentifier<SessionObjects>;
