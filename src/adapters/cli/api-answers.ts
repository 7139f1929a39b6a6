import type { Json } from './api-client.js';

/** What the server answers each call the CLI makes (docs/openapi.yaml), as far as the CLI reads it; `--json` prints the whole answer. */
export type ProjectsAnswer = Json & { readonly projects: readonly { name: string; live: string | null; releases: number; url: string }[] };
export type ReleasesAnswer = Json & { readonly releases: readonly { id: string; live: boolean; files: number | null; bytes: number | null; preview?: string }[] };
export type PreviewsAnswer = Json & { readonly previews: readonly { name: string; release: string; expiresAt: string; url: string }[] };
/** A rollback's or a promotion's: the release now live, and the one it replaced. */
export type LiveAnswer = Json & { readonly release: string; readonly previous: string | null };
export type KeyAnswer = Json & { readonly id: string; readonly token: string };
export type KeysAnswer = Json & { readonly keys: readonly { id: string; name: string; scope: string; expiresAt: string | null; lastUsedAt: string | null }[] };
/** A custom domain, and the TXT record that proves it. */
export interface DomainVerification {
  readonly type: 'TXT';
  readonly name: string;
  readonly value: string;
}
export type DomainAnswer = Json & { readonly domain: string; readonly verified: boolean; readonly verification: DomainVerification };
export type DomainsAnswer = Json & { readonly domains: readonly { domain: string; verified: boolean; verifiedAt: string | null; verification: DomainVerification }[] };
export type TokenAnswer = Json & { readonly token: string };
export type UsersAnswer = Json & { readonly users: readonly { username: string; projects: number }[] };

export interface NewKey {
  readonly name: string;
  readonly scope: string;
  readonly expiresInDays?: number;
}
