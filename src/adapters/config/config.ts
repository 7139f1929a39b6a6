import { hostname } from 'node:os';
import { redactUrl } from '../db/redact-url.js';
import { LOG_LEVELS, type LogLevel } from '../log/logger.js';
import { isIP } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import { ConfigError } from './config-error.js';
import { assertDisjointRoots } from './roots.js';

export interface Config {
  readonly port: number;
  readonly host: string;
  /** Undefined when ADMIN_TOKEN is unset: one is generated and kept in DATA_DIR. */
  readonly adminToken: string | undefined;
  readonly dataDir: string;
  readonly docsRoot: string;
  readonly deploysRoot: string;
  /** Preview links: PREVIEWS_ROOT/<user>/<project>/<preview>. */
  readonly previewsRoot: string;
  readonly publicBase: string;
  /** A preview's address is `<previewBase>/<user>/<project>/<preview>/`. */
  readonly previewBase: string;
  /** How long a preview lives after its last deploy. */
  readonly previewTtlSeconds: number;
  /** Previews a project may have at once. */
  readonly previewsMax: number;
  /** DEPLOY_SESSIONS_MAX: incremental deploy sessions a user's own token may have open at once, and each deploy key as many. */
  readonly deploySessionsMax: number;
  /** DEPLOY_SESSION_SECONDS: an incremental deploy session expires this long after its last use. */
  readonly deploySessionSeconds: number;
  readonly databaseUrl: string;
  readonly databasePoolMax: number;
  readonly maxUploadBytes: number;
  readonly releasesKeep: number;
  readonly maxExtractedBytes: number;
  readonly maxFiles: number;
  /** The most bytes one user's kept releases may hold (USER_MAX_BYTES); undefined, no quota. */
  readonly userMaxBytes: number | undefined;
  /** This replica's name on shared storage (REPLICA_ID, default the host name). */
  readonly replicaId: string;
  readonly logLevel: LogLevel;
  readonly logFormat: 'json' | 'pretty';
  /** PRECOMPRESS: whether releases' text files get compressed siblings (`X.br`, `X.gz`) for the web server. */
  readonly precompress: 'on' | 'off';
  /** How long SIGTERM waits for running deploys before aborting them. */
  readonly shutdownGraceMs: number;
  /** Deploys that read and unpack at once; the rest wait, unread. */
  readonly deploysMaxConcurrent: number;
  /** Deploys that may wait for a slot; beyond them a deploy is refused with 503. */
  readonly deploysMaxQueued: number;
  /** A deploy whose body stops arriving this long fails with 408; 0 never does. */
  readonly uploadIdleSeconds: number;
  /** A deploy whose body stops arriving this long loses its slot (408) to any deploy that waits; 0 never does. */
  readonly uploadStallSeconds: number;
  /** A user over its fair share of the slots loses its longest-held one after this long to another user's waiting deploy (503); 0 never does. */
  readonly deployTurnSeconds: number;
  /** WEBSERVER_RELOAD: a shell command run when configuration sitedrop generated for the web server changes; undefined, none. */
  readonly webServerReload: string | undefined;
  /** CADDY_ADMIN: Caddy's admin endpoint (host:port), when Caddy serves the sites and sitedrop configures it per site. */
  readonly caddyAdmin: string | undefined;
  /** DOMAINS_ROOT: one link per verified custom domain, `<host>` -> `DOCS_ROOT/<user>/<project>`. */
  readonly domainsRoot: string;
  /** DOMAINS_MAX: custom domains a project may claim. */
  readonly domainsMax: number;
  /** DNS_SERVERS: where verification looks TXT records up (`ip` or `ip:port`); undefined, the system's resolvers. */
  readonly dnsServers: readonly string[] | undefined;
  /** DOMAINS_HTTPS_PORT: where Caddy serves verified domains over HTTPS. */
  readonly domainsHttpsPort: number;
  /** DOMAINS_TLS: Caddy's certificates for domains, from Let's Encrypt or its own internal CA. */
  readonly domainsTls: 'acme' | 'internal';
}

export { ConfigError };

type Env = Readonly<Record<string, string | undefined>>;

function integer(env: Env, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `a whole number from ${min} to ${max}`, raw);
  }
  return value;
}

/** A limit that is off unless set. */
function optionalInteger(env: Env, name: string, min: number): number | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : integer(env, name, min, min);
}

function optionalText(env: Env, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw === undefined || raw === '' ? undefined : raw;
}

function path(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return resolve(fallback);
  return isAbsolute(raw) ? raw : resolve(raw);
}

function baseUrl(env: Env, name: string, fallback: string): string {
  const raw = env[name] ?? fallback;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, 'an absolute http(s) URL', raw);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(name, 'an absolute http(s) URL', raw);
  return raw.replace(/\/+$/, '');
}

function adminToken(env: Env): string | undefined {
  const raw = env.ADMIN_TOKEN;
  if (raw === undefined || raw === '') return undefined;
  if (raw.length < 32 || /\s/.test(raw)) throw new ConfigError('ADMIN_TOKEN', 'at least 32 characters with no white space', '<hidden>');
  return raw;
}

function databaseUrl(env: Env, dataDir: string): string {
  const raw = env.DATABASE_URL;
  if (raw === undefined || raw === '') return `sqlite:${resolve(dataDir, 'sitedrop.db')}`;
  if (/^sqlite:.+/.test(raw)) return raw;
  if (/^postgres(ql)?:\/\/.+/.test(raw)) {
    try {
      new URL(raw);
      return raw;
    } catch {
      // falls through to the error below
    }
  }
  throw new ConfigError('DATABASE_URL', 'sqlite:<path> or postgres://user@host:port/database', redactUrl(raw));
}

function replicaId(env: Env): string {
  const raw = env.REPLICA_ID;
  if (raw === undefined || raw === '') return hostname().replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 64) || 'sitedrop';
  if (!/^[A-Za-z0-9.-]{1,64}$/.test(raw)) throw new ConfigError('REPLICA_ID', '1 to 64 letters, digits, dots or hyphens', raw);
  return raw;
}

/** `ip`, `ip:port` or `[ipv6]:port`, as node:dns's setServers takes them. */
function dnsServer(entry: string): boolean {
  const port = (text: string) => /^\d{1,5}$/.test(text) && Number(text) >= 1 && Number(text) <= 65535;
  if (isIP(entry) !== 0) return true;
  const v6 = /^\[(.+)\]:(\d+)$/.exec(entry);
  if (v6) return isIP(v6[1] ?? '') === 6 && port(v6[2] ?? '');
  const v4 = /^([^:]+):(\d+)$/.exec(entry);
  return v4 !== null && isIP(v4[1] ?? '') === 4 && port(v4[2] ?? '');
}

function dnsServers(env: Env): string[] | undefined {
  const raw = optionalText(env, 'DNS_SERVERS');
  if (raw === undefined) return undefined;
  const servers = raw.split(',').map((s) => s.trim());
  if (!servers.every(dnsServer)) throw new ConfigError('DNS_SERVERS', 'comma-separated IP addresses, each with an optional :port', raw);
  return servers;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(name, `one of ${allowed.join(', ')}`, raw);
  return raw as T;
}

export function loadConfig(env: Env = process.env): Config {
  const dataDir = path(env, 'DATA_DIR', './var');
  const host = env.HOST ?? '0.0.0.0';
  if (host.trim() === '') throw new ConfigError('HOST', 'a listen address', host);
  const docsRoot = path(env, 'DOCS_ROOT', resolve(dataDir, 'docs'));
  const deploysRoot = path(env, 'DEPLOYS_ROOT', resolve(dataDir, 'deploys'));
  const previewsRoot = path(env, 'PREVIEWS_ROOT', resolve(dataDir, 'previews'));
  const domainsRoot = path(env, 'DOMAINS_ROOT', resolve(dataDir, 'domains'));
  const database = databaseUrl(env, dataDir);
  const sqliteFile = database.startsWith('sqlite:') ? resolve(database.slice('sqlite:'.length)) : undefined;
  assertDisjointRoots({ DATA_DIR: dataDir, DOCS_ROOT: docsRoot, DEPLOYS_ROOT: deploysRoot, PREVIEWS_ROOT: previewsRoot, DOMAINS_ROOT: domainsRoot, ...(sqliteFile ? { DATABASE_URL: sqliteFile } : {}) });
  const sites = baseUrl(env, 'PUBLIC_BASE', 'http://localhost:8081');
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host,
    adminToken: adminToken(env),
    dataDir,
    docsRoot,
    deploysRoot,
    previewsRoot,
    publicBase: sites,
    // No username can be '_previews' (names start with a letter or digit): one web server
    // block can serve both without a clash.
    previewBase: baseUrl(env, 'PREVIEW_BASE', `${sites}/_previews`),
    previewTtlSeconds: integer(env, 'PREVIEW_TTL_SECONDS', 7 * 86_400, 1),
    previewsMax: integer(env, 'PREVIEWS_MAX', 20, 1, 10_000),
    deploySessionsMax: integer(env, 'DEPLOY_SESSIONS_MAX', 8, 1, 1000),
    deploySessionSeconds: integer(env, 'DEPLOY_SESSION_SECONDS', 3600, 1, 7 * 86_400),
    databaseUrl: database,
    databasePoolMax: integer(env, 'DATABASE_POOL_MAX', 10, 1, 1000),
    maxUploadBytes: integer(env, 'MAX_UPLOAD_BYTES', 104_857_600, 1),
    releasesKeep: integer(env, 'RELEASES_KEEP', 5, 1, 10_000),
    maxExtractedBytes: integer(env, 'MAX_EXTRACTED_BYTES', 1_073_741_824, 1),
    maxFiles: integer(env, 'MAX_FILES', 50_000, 1, 10_000_000),
    userMaxBytes: optionalInteger(env, 'USER_MAX_BYTES', 1),
    replicaId: replicaId(env),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    logFormat: oneOf(env, 'LOG_FORMAT', ['json', 'pretty'] as const, 'json'),
    precompress: oneOf(env, 'PRECOMPRESS', ['on', 'off'] as const, 'on'),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_SECONDS', 30, 0, 3600) * 1000,
    // 2: the most that keeps a flood of deploys on two cores within the memory and latency
    // targets (docs/performance.md, "A flood of deploys").
    deploysMaxConcurrent: integer(env, 'DEPLOYS_MAX_CONCURRENT', 2, 1, 1000),
    deploysMaxQueued: integer(env, 'DEPLOYS_MAX_QUEUED', 64, 0, 100_000),
    uploadIdleSeconds: integer(env, 'UPLOAD_IDLE_SECONDS', 30, 0, 3600),
    // 5: far above an honest upload's longest silence, room for a lossy link's retransmissions,
    // short enough that stalled uploads cannot starve the queue (docs/performance.md, "A flood of deploys").
    uploadStallSeconds: integer(env, 'UPLOAD_STALL_SECONDS', 5, 0, 3600),
    // 60: a typical site's deploy ends well within it. At most 110, so that a deploy that
    // waits for a turn to end is served before its 120 s in the queue run out.
    deployTurnSeconds: integer(env, 'DEPLOY_TURN_SECONDS', 60, 0, 110),
    webServerReload: optionalText(env, 'WEBSERVER_RELOAD'),
    caddyAdmin: optionalText(env, 'CADDY_ADMIN'),
    domainsRoot,
    domainsMax: integer(env, 'DOMAINS_MAX', 20, 1, 10_000),
    dnsServers: dnsServers(env),
    domainsHttpsPort: integer(env, 'DOMAINS_HTTPS_PORT', 443, 1, 65535),
    domainsTls: oneOf(env, 'DOMAINS_TLS', ['acme', 'internal'] as const, 'acme'),
  };
}
