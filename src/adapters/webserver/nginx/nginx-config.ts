import { isAddress, regexLiteral, siteServers, type SiteServer } from '../addresses.js';
import { PRECOMPRESSIBLE_EXTENSIONS } from '../../../domain/precompressible.js';

export interface NginxInput {
  readonly publicBase: string;
  readonly previewBase: string;
  readonly docsRoot: string;
  readonly previewsRoot: string;
  readonly deploysRoot: string;
  /** Custom domains' host links, `<host>` -> `DOCS_ROOT/<user>/<project>`. */
  readonly domainsRoot: string;
  /** Where the router script (sitedrop-router.js) is installed. */
  readonly routerPath: string;
}

/** Debian's module packages, by the file each installs. */
const MODULES = ['/usr/lib/nginx/modules/ngx_http_js_module.so', '/usr/lib/nginx/modules/ngx_http_brotli_static_module.so'];

// A name nginx reads as one token: sitedrop's own paths hold no quote, space or brace.
const quote = (value: string): string => {
  if (/["\\\s{};$]/.test(value)) throw new Error(`cannot write ${value} into nginx's configuration: it holds a quote, a space, a brace, a ';' or a '$'`);
  return value;
};

const listenAddress = (server: SiteServer): string =>
  isAddress(server.host) ? `${server.host.includes(':') ? `[${server.host}]` : server.host}:${server.port}` : String(server.port);

// Named even when the host is an address: the custom domains' catch-all is the default
// server on this port, so only a server_name keeps PUBLIC_BASE's host from falling into it.
function listen(server: SiteServer): string[] {
  const name = server.host.includes(':') ? `[${server.host}]` : server.host;
  return [`listen ${listenAddress(server)};`, `server_name ${quote(name)};`];
}

/** A location for one kind of site: the link to follow, and the path prefix that names it. */
function siteLocation(prefix: string, segments: readonly string[], linkRoot: string): string[] {
  const names = segments.map((s) => `/(?<sitedrop_${s}>[^/.][^/]*)`).join('');
  const link = `${quote(linkRoot)}/${segments.map((s) => `$sitedrop_${s}`).join('/')}`;
  return [
    `location ~ ^${regexLiteral(prefix)}${names}(?<sitedrop_path>/.*)?$ {`,
    `    set $sitedrop_link ${link};`,
    `    set $sitedrop_prefix ${quote(prefix)}/${segments.map((s) => `$sitedrop_${s}`).join('/')};`,
    '    js_content sitedrop.serve;',
    '    # The router chooses the page a 404 sends: the site\'s 404.html, a rule\'s target, or none.',
    '    error_page 404 $sitedrop_error_page;',
    '}',
  ];
}

/** What every server that runs the router needs: symlinks followed, never cached, relative redirects. */
const routerSettings = (input: NginxInput): string[] => [
  '# Each site is a symlink to its current release: nginx must follow it.',
  'disable_symlinks off;',
  '# A cached resolution of a link could outlive a swap (docs/nginx.md).',
  'open_file_cache off;',
  '# Locations as the client asked (behind a proxy, the host and port it used).',
  'absolute_redirect off;',
  `set $sitedrop_deploys ${quote(input.deploysRoot)};`,
];

/** The router's internal locations: one release's files, and the plain 404. */
const releaseLocations = (input: NginxInput): string[] => [
  "# Files of one release, reached only by the router's internal redirects.",
  'location ^~ /.sitedrop-release/ {',
  '    internal;',
  `    alias ${quote(input.deploysRoot)}/;`,
  '    js_header_filter sitedrop.headers;',
  `    location ~* \\.(${PRECOMPRESSIBLE_EXTENSIONS.join('|')})$ {`,
  '        # X.br and X.gz beside X, made by sitedrop after each deploy.',
  '        brotli_static on;',
  '        gzip_static on;',
  '        gzip_vary on;',
  '    }',
  '}',
  'location = /.sitedrop-plain-404 {',
  '    internal;',
  '    return 404;',
  '}',
];

const block = (body: readonly string[]): string => ['server {', ...body.map((line) => `    ${line}`), '}'].join('\n');

function serverBlock(server: SiteServer, input: NginxInput): string {
  const body: string[] = [...listen(server), ...routerSettings(input)];
  // Previews first: regular expressions are tried in order, and no user is `_previews`.
  if (server.previews !== undefined) body.push(...siteLocation(server.previews, ['user', 'project', 'preview'], input.previewsRoot));
  if (server.live !== undefined) body.push(...siteLocation(server.live, ['user', 'project'], input.docsRoot));
  body.push(...releaseLocations(input), '# Anything else on this server is no site.', 'location / {', '    return 404;', '}');
  return block(body);
}

/**
 * Every other host on PUBLIC_BASE's port: a custom domain shows the live site its link in
 * DOMAINS_ROOT names, at the root (nginx lower-cases $host and drops its port and trailing
 * dot). The router resolves that link and the live link behind it at once, so a deploy,
 * a rollback or a promote shows at once, and a host with no link (unknown, unverified,
 * removed) gets a 404. Previews never have a link here.
 */
function domainsBlock(server: SiteServer, input: NginxInput): string {
  return block([
    `listen ${listenAddress(server)} default_server;`,
    ...routerSettings(input),
    'location / {',
    `    set $sitedrop_link ${quote(input.domainsRoot)}/$host;`,
    '    set $sitedrop_prefix "";',
    '    set $sitedrop_path $uri;',
    '    js_content sitedrop.serve;',
    '    error_page 404 $sitedrop_error_page;',
    '}',
    ...releaseLocations(input),
  ]);
}

/**
 * nginx's side of sitedrop: `sitedrop.conf` for inside `http { }`, `modules.conf` for the
 * main context. Every site request goes through the router script, which follows the
 * site's link once and serves from that release with that release's rules: no reload
 * is ever needed, whatever a deploy changes.
 */
export function nginxConfig(input: NginxInput): { 'sitedrop.conf': string; 'modules.conf': string } {
  const servers = siteServers(input.publicBase, input.previewBase);
  const conf = [
    '# Generated by `npm run webserver-config -- nginx`: regenerate rather than edit.',
    `js_import sitedrop from ${quote(input.routerPath)};`,
    '# Set by the router for the response it chose (the file location reads them).',
    'js_var $sitedrop_headers;',
    'js_var $sitedrop_error_page;',
    '',
    ...servers.map((server) => serverBlock(server, input)),
    // servers[0] is PUBLIC_BASE's: custom domains share its port.
    domainsBlock(servers[0]!, input),
    '',
  ].join('\n');
  const modules = ['# Generated by `npm run webserver-config -- nginx`.', ...MODULES.map((m) => `load_module ${m};`), ''].join('\n');
  return { 'sitedrop.conf': conf, 'modules.conf': modules };
}
