import { join } from 'node:path';
import { PRECOMPRESSIBLE_EXTENSIONS } from '../../../domain/precompressible.js';
import type { SiteRules } from '../../../domain/site-rules.js';
import type { SiteAddress } from '../../../application/ports/web-server.js';
import { isAddress, regexLiteral, siteServers, type SiteServer } from '../addresses.js';
import { commonMatchers, indent, siteRouteBody, type SiteRoute } from './caddy-site-route.js';
import { token } from './caddy-text.js';
import { DOMAIN_ROUTE_MARKER, domainsBlocks, domainsGlobalOptions, HTTPS_FILE, type CaddyDomainsInput } from './caddy-domains.js';

export interface CaddyInput extends CaddyDomainsInput {
  readonly publicBase: string;
  readonly previewBase: string;
  readonly docsRoot: string;
  readonly previewsRoot: string;
  readonly deploysRoot: string;
  /** The directory of the per-site snippets (caddySnippetsDir). */
  readonly snippetsDir: string;
}

/** Where sitedrop keeps the routes of the sites with rules, one file each, which the Caddyfile imports. */
export const caddySnippetsDir = (dataDir: string): string => join(dataDir, 'webserver', 'caddy', 'sites');

/** A site's snippet file, relative to the snippets directory: names hold no '.', so '.' separates them. */
export function snippetFile(site: SiteAddress): string {
  return site.preview === undefined ? join('live', `${site.user}.${site.project}.caddy`) : join('previews', `${site.user}.${site.project}.${site.preview}.caddy`);
}

function address(server: SiteServer, publicPort: number): string[] {
  const host = server.host.includes(':') ? `[${server.host}]` : server.host;
  if (server.scheme === 'http' && isAddress(server.host)) {
    // Named on PUBLIC_BASE's port, where the custom domains' catch-all takes every other host.
    return [`http://${server.port === publicPort ? host : ''}:${server.port} {`, `\tbind ${server.host}`];
  }
  const port = server.port === (server.scheme === 'https' ? 443 : 80) ? '' : `:${server.port}`;
  return [`${server.scheme}://${host}${port} {`];
}

/** The site's prefix as a URL path (a base's path, then the site's names). */
function sitePrefix(base: string, site: SiteAddress): string {
  return `${base}/${site.user}/${site.project}${site.preview === undefined ? '' : `/${site.preview}`}`;
}

/** The general route: every site at its link, with no rules (a site with rules has its own snippet, tried first). */
function linkRoute(name: string, base: string, segments: number, linkRoot: string): string[] {
  const names = Array.from({ length: segments }, (_, i) => `/{re.${name}.${i + 1}}`).join('');
  const route: SiteRoute = { prefix: `${base}${names}`, root: `${linkRoot}${names}`, notFoundPage: 'look', checkExists: true };
  return [
    `@${name} path_regexp ${name} ${token(`^${regexLiteral(base)}${'/([^/.][^/]*)'.repeat(segments)}(?:/.*)?$`)}`,
    `handle @${name} {`,
    '\troute {',
    ...indent(siteRouteBody(route), 2),
    '\t}',
    '}',
  ];
}

/**
 * The server's handles are mutually exclusive, and Caddy sorts them: those with a path
 * (the sites with rules, `/u/p/*`) first, longest first, then the general routes in the
 * order written (previews first: the live pattern would take their paths), then none.
 * They sit at the top of the server block: inside one `route`, Caddy's adapter takes
 * time in the square of the sites' count.
 */
function serverBlock(server: SiteServer, input: CaddyInput, publicPort: number): string[] {
  const body = [...commonMatchers(PRECOMPRESSIBLE_EXTENSIONS)];
  // One file of each kind, written by sitedrop from its files per site (caddy-snippets.ts).
  if (server.previews !== undefined) body.push('# Previews with rules, each pinned to its release.', `import ${join(input.snippetsDir, 'previews')}*.caddy`);
  if (server.live !== undefined) body.push('# Live sites with rules, each pinned to its release.', `import ${join(input.snippetsDir, 'live')}*.caddy`);
  if (server.previews !== undefined) body.push(...linkRoute('sd_preview', server.previews, 3, input.previewsRoot));
  if (server.live !== undefined) body.push(...linkRoute('sd_live', server.live, 2, input.docsRoot));
  body.push('# Anything else on this server is no site.', 'handle {', '\trespond 404', '}');
  return [...address(server, publicPort), ...indent(body), '}'];
}

/**
 * Caddy's side of sitedrop: the whole Caddyfile. A site without rules is served through
 * its link by one general route; a site with rules by its own route, pinned to its
 * release and written by CaddyWebServer into the snippets directory this file imports,
 * so that a reload switches its files and rules at once.
 */
export function caddyfile(input: CaddyInput): string {
  const servers = siteServers(input.publicBase, input.previewBase);
  const global = ['{', '\tadmin {$CADDY_ADMIN:localhost:2019}'];
  // The domains' HTTPS server is the only managed one then: no redirect server on port 80.
  if (servers.every((s) => s.scheme === 'http')) global.push('\tauto_https disable_redirects');
  global.push(...indent(domainsGlobalOptions(input)), '}');
  const publicServer = servers[0]!;
  return [
    '# Generated by `npm run webserver-config -- caddy`: regenerate rather than edit.',
    ...global,
    '',
    ...servers.flatMap((s) => [...serverBlock(s, input, publicServer.port), '']),
    ...domainsBlocks(publicServer, input),
    '# The verified domains over HTTPS, once there is one (caddy-domains.ts).',
    `import ${join(input.snippetsDir, HTTPS_FILE.replace('.caddy', '*.caddy'))}`,
    '',
  ].join('\n');
}

/** The snippet for one site with rules: its route, pinned to `releaseDir`. */
export function siteSnippet(input: Pick<CaddyInput, 'publicBase' | 'previewBase'>, site: SiteAddress, releaseDir: string, rules: SiteRules, notFoundPage: boolean): string {
  const servers = siteServers(input.publicBase, input.previewBase);
  const server = servers.find((s) => (site.preview === undefined ? s.live : s.previews) !== undefined)!;
  const prefix = sitePrefix((site.preview === undefined ? server.live : server.previews)!, site);
  const route: SiteRoute = { prefix, root: releaseDir, notFoundPage, checkExists: false, rules };
  // A live site's verified domains get the same route at `/` (caddy-domains.ts matches their hosts).
  const atDomains = site.preview === undefined ? [DOMAIN_ROUTE_MARKER, '\troute {', ...indent(siteRouteBody({ ...route, prefix: '' }), 2), '\t}', ''] : [];
  return [
    `# ${prefix}/ with its rules, pinned to ${releaseDir}. Written by sitedrop: it is replaced at each deploy.`,
    // The site's own address without its slash is the general route's (a redirect, the same for every site).
    `handle ${prefix}/* {`,
    '\troute {',
    // The path matcher ignores case: /U/P/ is no site, as it is for nginx.
    `\t\t@sd_other not path_regexp ${token(`^${regexLiteral(prefix)}/`)}`,
    '\t\trespond @sd_other 404',
    ...indent(siteRouteBody(route), 2),
    '\t}',
    '}',
    '',
    ...atDomains,
  ]
    .join('\n')
    // An imported file's tokens pass through Caddy's replacer once more (for `import` arguments), which reads `\{`.
    .replace(/\\([{}])/g, '\\\\$1');
}
