import type { CompiledHeaderBlock, CompiledRedirect, SiteRules } from '../../../domain/site-rules.js';
import { DOLLAR_VARIABLE_LINE, literal, targetUri, token } from './caddy-text.js';

/**
 * One site's route in Caddy, the same serving rules as the nginx router
 * (nginx/sitedrop-router.js): the site's own address without its slash redirects to it;
 * then forced rules, the files (`p`, `p.html`, `p/index.html` after a redirect to `p/`),
 * the other rules, and the site's 404.html or a plain 404. The rule files and `.sitedrop/`
 * are never served. Headers from every matching `_headers` block are joined with ', '.
 *
 * It runs inside the server's route, whose matchers (`@sd_*`, COMMON_MATCHERS) it uses.
 */
export interface SiteRoute {
  /** The path prefix the site answers at, as a URL path: a literal, or placeholders for the general route. */
  readonly prefix: string;
  /** The directory the site's files are read from: a release (pinned), or a link (placeholders). */
  readonly root: string;
  /** Whether the site has a 404.html: known for a release, looked up for a link. */
  readonly notFoundPage: boolean | 'look';
  /** Whether a site at a link must be there before its bare address redirects (nginx answers 404 for no site). */
  readonly checkExists: boolean;
  readonly rules?: SiteRules;
}

const TEXT_TYPES_NOTE = '# Text types only: an uploaded img.png.gz is no encoding of img.png.';

/** The matchers every site route uses, defined once in the server's route. */
export function commonMatchers(compressible: readonly string[]): string[] {
  return [
    '@sd_bare vars {path} ""',
    '@sd_query not vars {query} ""',
    '@sd_exists file /',
    '@sd_404 file /404.html',
    '@sd_rw200 vars sd_rs 200',
    '@sd_rw404 vars sd_rs 404',
    '@sd_hidden path_regexp `^/(?:_redirects|_headers|\\.sitedrop(?:/.*)?)$`',
    '@sd_index {',
    '\tpath */',
    '\tfile {path}index.html',
    '}',
    '@sd_file {',
    '\tnot path */',
    '\tfile {path} {path}.html',
    '}',
    '@sd_slash {',
    '\tnot path */',
    '\tfile {path}/index.html',
    '}',
    TEXT_TYPES_NOTE,
    `@sd_text path_regexp \`(?i)\\.(?:${compressible.join('|')})$\``,
  ];
}

const indent = (lines: readonly string[], by = 1): string[] => lines.map((line) => `${'\t'.repeat(by)}${line}`);

/** `redir` keeping the request's query (sd_q and sd_qa, set once per request), joined with '?' or '&' as nginx's router does. */
function redirect(matcher: string, location: string, status: number): string {
  return `redir ${matcher} ${token(`${location}{vars.${location.includes('?') ? 'sd_qa' : 'sd_q'}}`)} ${status}`;
}

/** Serves the file at {path} (known to be there) with `status`; text types pre-compressed when a sibling is there. */
function serve(status: 200 | 404): string[] {
  const options = ['disable_canonical_uris', ...(status === 404 ? ['status 404'] : [])];
  return [
    'header @sd_text ?Vary Accept-Encoding',
    'file_server @sd_text {',
    '\tprecompressed br gzip',
    ...indent(options),
    '}',
    'file_server {',
    ...indent(options),
    '}',
  ];
}

function notFound(route: SiteRoute): string[] {
  const page = ['rewrite * /404.html', ...serve(404)];
  if (route.notFoundPage === true) return page;
  if (route.notFoundPage === false) return ['respond 404'];
  return ['route @sd_404 {', ...indent(page), '}', 'respond 404'];
}

/** The file a path names (itself, `p.html`, `p/index.html` for `p/`), served with `status`; none: no handler runs. */
function files(status: 200 | 404): string[] {
  return [
    'route @sd_index {',
    '\trewrite * {path}index.html',
    ...indent(serve(status)),
    '}',
    'route @sd_file {',
    '\trewrite * {file_match.relative}',
    ...indent(serve(status)),
    '}',
  ];
}

/**
 * A rule is one matcher and one line: a redirect ends the request; a rewrite (200, 404)
 * notes its target and status, and the first rewrite found is looked up after its
 * section (lookups()). Rules after it are skipped. Nothing nests per rule: Caddy's
 * adapter copies a route's matchers into each nested route, so a route per rule would
 * cost the square of their number at every load.
 */
function rule(route: SiteRoute, redirectRule: CompiledRedirect, index: number): string[] {
  const name = `r${index}`;
  const target = targetUri(redirectRule.to, redirectRule.params, name);
  const lines = [`@${name} {`, `	path_regexp ${name} ${token(redirectRule.match)}`, '	not vars sd_rw 1', '}'];
  if (redirectRule.status === 200 || redirectRule.status === 404) {
    lines.push(`vars @${name} {`, `	sd_to ${token(target)}`, `	sd_rw ${redirectRule.status === 200 ? 1 : 1}`, `	sd_rs ${redirectRule.status}`, '}');
  } else {
    lines.push(redirect(`@${name}`, redirectRule.external ? target : `${route.prefix}${target}`, redirectRule.status));
  }
  return lines;
}

/** Serves the target the first matching rewrite noted, with its status; a target that names no file, the 404. */
function lookups(route: SiteRoute, redirects: readonly CompiledRedirect[]): string[] {
  const lines: string[] = [];
  for (const status of [200, 404] as const) {
    if (!redirects.some((r) => r.status === status)) continue;
    lines.push(`route @sd_rw${status} {`, ...indent(['rewrite * {vars.sd_to}', 'route @sd_hidden {', ...indent(notFound(route)), '}', ...files(status), ...notFound(route)]), '}');
  }
  return lines;
}

/**
 * `_headers`: each block that matches sets its flag; each of its headers appends its
 * value to the name's variable after the name's separator, which is ', ' once a value
 * is there. The headers are set from the variables.
 */
function headers(blocks: readonly CompiledHeaderBlock[]): { lines: string[]; needsDollar: boolean } {
  const names: string[] = [];
  const spelling = new Map<string, number>();
  for (const block of blocks) {
    for (const { name } of block.headers) {
      if (!spelling.has(name.toLowerCase())) spelling.set(name.toLowerCase(), names.push(name) - 1);
    }
  }
  let needsDollar = false;
  const lines: string[] = [];
  blocks.forEach((block, j) => {
    if (block.headers.length === 0) return;
    lines.push(`@hb${j} path_regexp ${token(block.match)}`, `vars @hb${j} b${j} 1`, `@b${j} vars b${j} 1`);
    for (const { name, value } of block.headers) {
      const k = spelling.get(name.toLowerCase())!;
      const escaped = literal(value);
      needsDollar ||= escaped.needsDollar;
      lines.push(`vars @b${j} h${k} ${token(`{vars.h${k}}{vars.h${k}_sep}${escaped.text}`)}`, `vars @b${j} h${k}_sep ", "`);
    }
  });
  // A name Caddy would read as an operation (+, -, ?) is added rather than set: it is set only here.
  names.forEach((name, k) => lines.push(`@h${k} vars h${k}_sep ", "`, `header @h${k} "${/^[+?-]/.test(name) ? '+' : ''}${name}" "{vars.h${k}}"`));
  return { lines, needsDollar };
}

/** The directives of the site's route, to run inside `route { }` once the site's requests are selected. */
export function siteRouteBody(route: SiteRoute): string[] {
  const rules = route.rules ?? { redirects: [], headers: [] };
  const forced = rules.redirects.map((r, i) => ({ r, i })).filter(({ r }) => r.force);
  const others = rules.redirects.map((r, i) => ({ r, i })).filter(({ r }) => !r.force);
  const header = headers(rules.headers);
  const bare = redirect(route.checkExists ? '@sd_exists' : '*', `${route.prefix}/`, 301);
  return [
    `root * ${token(route.root)}`,
    // At a domain's root there is nothing to strip, but leading slashes are made one: a
    // redirect to '//dir/' would send the browser to the host 'dir' (nginx merges them itself).
    // A backslash, decoded or not (the route may see the request's own escaped path), is
    // refused there: Caddy cannot encode a placeholder's value, and a rule such as
    // '/strip/* /:splat' would answer '/\host', which a browser reads as another host.
    ...(route.prefix === '' ? ['uri path_regexp ^/{2,} /', '@sd_backslash path_regexp \\x5c|(?i:%5c)', 'respond @sd_backslash 400'] : [`uri strip_prefix ${token(route.prefix)}`]),
    'vars @sd_query {',
    '	sd_q ?{query}',
    '	sd_qa &{query}',
    '}',
    ...(header.needsDollar ? [DOLLAR_VARIABLE_LINE] : []),
    'route @sd_bare {',
    ...indent(route.checkExists ? [bare, 'respond 404'] : [bare]),
    '}',
    ...header.lines,
    'route @sd_hidden {',
    ...indent(notFound(route)),
    '}',
    ...forced.flatMap(({ r, i }) => rule(route, r, i)),
    ...lookups(route, forced.map(({ r }) => r)),
    ...files(200),
    redirect('@sd_slash', `${route.prefix}{path}/`, 301),
    ...others.flatMap(({ r, i }) => rule(route, r, i)),
    ...lookups(route, others.map(({ r }) => r)),
    ...notFound(route),
  ];
}

export { indent };
