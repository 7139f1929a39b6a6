import type { ColumnType } from 'kysely';

/** Row shapes as kysely sees them; timestamps are ISO-8601 UTC text in both backends. */
export interface UsersTable {
  username: string;
  /** SHA-256 of the token, hex: the token itself is never stored. */
  token_hash: string;
  created_at: string;
  updated_at: string;
}

export interface DeploysTable {
  username: string;
  project: string;
  release: string;
  /** bigint: PostgreSQL hands it back as text, SQLite as a number. */
  bytes: ColumnType<string | number, number, never>;
  files: number;
  created_at: string;
  /** The preview a release was deployed for, until it has been live; null for a live deploy. */
  preview: string | null;
}

export interface DeployKeysTable {
  id: string;
  username: string;
  project: string;
  name: string;
  scope: string;
  /** SHA-256 of the key's token, hex, as for users. */
  token_hash: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

export interface DeploySessionsTable {
  id: string;
  username: string;
  project: string;
  preview: string | null;
  /** The deploy key that opened the session; null for the user's own token. */
  key_id: string | null;
  /**
   * Set while the session holds this release by name (domain HeldManifest); null when
   * deploy_session_manifests holds its manifest.
   */
  base_release: string | null;
  base_digest: string | null;
  created_at: string;
  /** ISO-8601 UTC, so text order is time order. */
  expires_at: string;
  /** The bytes it may upload (DeploySession.uploadBytes); bigint, which pg reads as a string. */
  upload_bytes: ColumnType<string | number, number, number>;
  /** Which holding (manifest, unconfirmed, upload_bytes) it is: DeploySession.version. */
  holding_version: ColumnType<number, number | undefined, number>;
  /** 1 once a batch of objects has begun: its manifest is no longer revised. */
  uploads_begun: ColumnType<number, number | undefined, number>;
}

export interface DomainsTable {
  username: string;
  project: string;
  domain: string;
  challenge: string;
  created_at: string;
  /** Null until the challenge's TXT record was seen. */
  verified_at: string | null;
}

/**
 * A session's manifest, packed (packed-manifest.ts), apart from the session's row, which
 * each request updates: SQLite rewrites a whole row, blob and all, to change one column.
 * Goes with its session (on delete cascade).
 */
export interface DeploySessionManifestsTable {
  id: string;
  manifest: Uint8Array;
  /**
   * The manifest's objects no probe found when it was checked (DeploySession.unconfirmed),
   * their 32-byte digests one after another; null where not known (a session open when
   * migration 009 added the column).
   */
  unconfirmed: Uint8Array | null;
}

export interface Schema {
  users: UsersTable;
  deploys: DeploysTable;
  deploy_keys: DeployKeysTable;
  deploy_sessions: DeploySessionsTable;
  deploy_session_manifests: DeploySessionManifestsTable;
  domains: DomainsTable;
}
