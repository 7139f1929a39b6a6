import { join } from 'node:path';
import { PRECOMPRESSIBLE_EXTENSIONS } from '../../../domain/precompressible.js';
import { isAddress, type SiteServer } from '../addresses.js';
import { commonMatchers, indent, siteRouteBody } from './caddy-site-route.js';
import { token } from './caddy-text.js';

export interface CaddyDomainsInput {
  /** Custom domains' host links, `<host>` -> `DOCS_ROOT/<user>/<project>`. */
  readonly domainsRoot: string;
  readonly domainsHttpsPort: number;
  readonly domainsTls: 'acme' | 'internal';
  /** sitedrop's own listen address (HOST, PORT): Caddy asks it before issuing a certificate. */
  readonly host: string;
  readonly port: number;
  readonly snippetsDir: string;
}

/** Where a site snippet's domain route starts: the site's route at `/`, for its verified domains. */
export const DOMAIN_ROUTE_MARKER = '# sitedrop domain route';

/** The check endpoint Caddy's on-demand TLS asks (`?domain=<name>` appended by Caddy). */
export function askUrl(input: Pick<CaddyDomainsInput, 'host' | 'port'>): string {
  const wildcard = input.host === '0.0.0.0' || input.host === '::' || input.host === '';
  const host = wildcard ? '127.0.0.1' : input.host.includes(':') ? `[${input.host}]` : input.host;
  return `http://${host}:${input.port}/api/v1/domains/check`;
}

/** The global options domains need: on-demand TLS asks sitedrop, and the internal CA stays out of the system's trust store. */
export function domainsGlobalOptions(input: CaddyDomainsInput): string[] {
  return [...(input.domainsTls === 'internal' ? ['skip_install_trust'] : []), 'on_demand_tls {', `\task ${askUrl(input)}`, '}'];
}

// A host a verified domain could be (any case, a trailing dot): anything else, such as
// '..' or a temporary link's '.name.tmp+…', is no site and never names a path.
const DOMAIN_HOST = '^(?i)[a-z0-9-]+(?:\\.[a-z0-9-]+)+\\.?$';

/**
 * Every other host is looked up in DOMAINS_ROOT by its lower-cased name, through its link
 * to the project's live link, so a deploy of a site without rules needs no load (a domain
 * added or removed loads, for httpsBlock's host list). Caddy has no lower-case function: the host goes through the
 * path, where `uri replace` can change it, and the request's own URI is put back.
 */
function domainsBody(input: CaddyDomainsInput): string[] {
  const lower = Array.from({ length: 26 }, (_, i) => `uri replace ${String.fromCharCode(65 + i)} ${String.fromCharCode(97 + i)}`);
  return [
    ...commonMatchers(PRECOMPRESSIBLE_EXTENSIONS),
    '# Verified domains of sites with rules, each pinned to its release like its path route.',
    `import ${join(input.snippetsDir, 'domains')}*.caddy`,
    '# Any other verified domain: its link.',
    'handle {',
    '\troute {',
    `\t\t@sd_nohost not vars_regexp {host} ${token(DOMAIN_HOST)}`,
    '\t\trespond @sd_nohost 404',
    '\t\trewrite * /{host}',
    '\t\turi path_regexp \\.$ ""',
    ...indent(lower, 2),
    '\t\tvars sd_host {path}',
    '\t\trewrite * {http.request.orig_uri}',
    ...indent(siteRouteBody({ prefix: '', root: `${input.domainsRoot}{vars.sd_host}`, notFoundPage: 'look', checkExists: false }), 2),
    '\t}',
    '}',
  ];
}

/**
 * The custom domains' server over HTTP: every host PUBLIC_BASE's own server does not
 * name, on its port (when PUBLIC_BASE is http). The HTTPS server is httpsBlock's.
 */
export function domainsBlocks(publicServer: SiteServer, input: CaddyDomainsInput): string[] {
  if (publicServer.scheme !== 'http') return [];
  const bind = isAddress(publicServer.host) ? [`\tbind ${publicServer.host}`] : [];
  return [`http://:${publicServer.port} {`, ...bind, ...indent(domainsBody(input)), '}', ''];
}

/** The file sitedrop writes with the domains' HTTPS server, which the Caddyfile imports (none while no domain is verified). */
export const HTTPS_FILE = 'https.caddy';

/**
 * The domains' HTTPS server, on DOMAINS_HTTPS_PORT with certificates issued on demand
 * once sitedrop's check endpoint says the host is verified and live. It names each
 * verified host: Caddy then ends the handshake of any other, including a host removed
 * since its certificate was issued, which a catch-all would go on serving from Caddy's
 * cache (docs/caddy.md). Undefined for no host: no such server.
 */
export function httpsBlock(hosts: readonly string[], input: CaddyDomainsInput): string | undefined {
  if (hosts.length === 0) return undefined;
  const port = `:${input.domainsHttpsPort}`;
  const tls = input.domainsTls === 'internal' ? 'tls internal {' : 'tls {';
  return [
    '# The verified domains over HTTPS. Written by sitedrop: it is replaced as domains change.',
    `${[...hosts].sort().map((host) => `https://${host}${port}`).join(', ')} {`,
    `\t${tls}`,
    '\t\ton_demand',
    '\t}',
    ...indent(domainsBody(input)),
    '}',
    '',
  ]
    .join('\n')
    // An imported file's tokens pass through Caddy's replacer once more (see siteSnippet).
    .replace(/\\([{}])/g, '\\\\$1');
}

/**
 * The routes of the sites with rules at their verified domains: each site's domain route
 * (after DOMAIN_ROUTE_MARKER in its snippet), matched by the domains' hosts (Caddy's host
 * matcher ignores case; the trailing-dot form is listed too).
 */
export function domainRoutes(sites: readonly { readonly route: string; readonly hosts: readonly string[] }[]): string | undefined {
  const parts = sites
    .filter((s) => s.hosts.length > 0)
    .map((s, i) => [`@sd_d${i} host ${[...s.hosts].sort().flatMap((h) => [h, `${h}.`]).join(' ')}`, `handle @sd_d${i} {`, s.route.trimEnd(), '}', ''].join('\n'));
  return parts.length === 0 ? undefined : parts.join('\n');
}
