// sitedrop's request router for nginx, run by njs 0.7.9 (Debian's libnginx-mod-http-js):
// every request for a site comes here. It resolves the site's link ONCE, so the files,
// the rules and the 404 page of one request all come from one release, however many swaps
// run meanwhile; then it hands the file to nginx's static module by an internal redirect
// into that release. The rules are the release's own, compiled by sitedrop at deploy into
// `.sitedrop/` (written by src/adapters/fs/publish/release-rules-files.ts, compiled by
// src/domain/site-rules.ts): this script only runs their regular expressions.
// njs keeps nothing between requests; a site without rules costs one failed open.
import fs from 'fs';

const HEAD = '/.sitedrop/head.json';
const REDIRECTS = '/.sitedrop/redirects.json';

// A missing file is the common case (a site without rules): asked without an exception.
function stat(path) {
  try {
    return fs.statSync(path, { throwIfNoEntry: false });
  } catch (e) {
    return undefined;
  }
}

function readJson(path) {
  if (stat(path) === undefined) return undefined;
  try {
    return JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (e) {
    return undefined;
  }
}

// Never served at any address: the rule files and what sitedrop adds to a release.
function hidden(path) {
  return path === '/_redirects' || path === '/_headers' || path === '/.sitedrop' || path.startsWith('/.sitedrop/');
}

// nginx has already decoded and normalised the path; anything odd left is refused here too.
function unsafe(path) {
  return path.charAt(0) !== '/' || path.indexOf('\0') >= 0 || /(^|\/)\.\.?(\/|$)/.test(path);
}

function isFile(release, path) {
  if (unsafe(path) || hidden(path)) return false;
  const found = stat(release + path);
  return found !== undefined && found.isFile();
}

// The file a site path names: itself, `p.html`, or `p/index.html`; a directory asked for
// without its slash is redirected to it, so its relative links resolve.
function lookup(release, path) {
  if (unsafe(path) || hidden(path)) return undefined;
  if (path.endsWith('/')) return isFile(release, path + 'index.html') ? { file: path + 'index.html' } : undefined;
  if (isFile(release, path)) return { file: path };
  if (isFile(release, path + '.html')) return { file: path + '.html' };
  if (isFile(release, path + '/index.html')) return { slash: path + '/' };
  return undefined;
}

// Part of the request's path put into an address: nginx has decoded it, so it is encoded
// again, a segment at a time (a splat keeps its slashes). Otherwise a CR or LF in it would
// end a Location header and start another, and a backslash would make '/\host' another
// host. njs encodes any byte, text or not ('%FF').
function encodedPath(value) {
  return value.split('/').map(encodeURIComponent).join('/');
}

// The rule's target with its placeholders filled from the match: as they are for a file
// to serve, encoded for a Location.
function fill(to, params, groups, forLocation) {
  return to.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (whole, name) => {
    const at = params.indexOf(name);
    if (at < 0) return whole;
    const value = groups[at + 1] === undefined ? '' : groups[at + 1];
    return forLocation ? encodedPath(value) : value;
  });
}

// Most rules are passed over by their literal prefix, without compiling their regex.
function firstMatch(rules, path) {
  for (let i = 0; i < rules.length; i++) {
    if (!path.startsWith(rules[i].prefix)) continue;
    const groups = new RegExp(rules[i].match).exec(path);
    if (groups) return { rule: rules[i], groups: groups };
  }
  return undefined;
}

// Values of one name are joined once, at the end: joined as they came, a long _headers
// made every request's work grow with the square of its lines. Names are keyed with a
// prefix, so that one such as 'constructor' is never an object's own property.
function headersFor(blocks, path) {
  const out = [];
  const at = {};
  for (let i = 0; i < blocks.length; i++) {
    if (!path.startsWith(blocks[i].prefix) || !new RegExp(blocks[i].match).test(path)) continue;
    const headers = blocks[i].headers;
    for (let j = 0; j < headers.length; j++) {
      const key = 'h:' + headers[j].name.toLowerCase();
      if (at[key] === undefined) {
        at[key] = out.length;
        out.push([headers[j].name, [headers[j].value]]);
      } else out[at[key]][1].push(headers[j].value);
    }
  }
  return out.map((header) => [header[0], header[1].join(', ')]);
}

function withQuery(location, args) {
  if (!args) return location;
  return location + (location.indexOf('?') >= 0 ? '&' : '?') + args;
}

function setHeaders(r, headers) {
  for (let i = 0; i < headers.length; i++) r.headersOut[headers[i][0]] = headers[i][1];
}

// The release behind a site's link, as a path inside DEPLOYS_ROOT, or undefined.
function releaseOf(r, link) {
  let real;
  try {
    real = fs.realpathSync(link);
  } catch (e) {
    return undefined;
  }
  const deploys = r.variables.sitedrop_deploys;
  if (!real.startsWith(deploys + '/')) return undefined;
  const inner = real.slice(deploys.length);
  return /^\/[^/]+\/[^/]+\/[^/]+$/.test(inner) ? inner : undefined;
}

function serveFile(r, inner, file, status, headers) {
  r.variables.sitedrop_headers = JSON.stringify(headers);
  const uri = '/.sitedrop-release' + inner;
  if (status === 200) {
    // nginx decodes this address again: encoded, it names the file checked ('a%2Fb.html'
    // stays that file, not 'a/b.html'; a '?' in a name is no query).
    r.internalRedirect(uri + encodedPath(file));
    return;
  }
  // error_page sends this file with the status (the static module serves only 200s); it
  // takes the address as it is, undecoded.
  r.variables.sitedrop_error_page = uri + file;
  r.return(status);
}

function notFound(r, release, inner, headers) {
  if (isFile(release, '/404.html')) {
    serveFile(r, inner, '/404.html', 404, headers);
    return;
  }
  setHeaders(r, headers);
  r.variables.sitedrop_error_page = '/.sitedrop-plain-404';
  r.return(404);
}

// A Location in the site: never one a browser would read as another host's ('//host', '/\\host').
function siteLocation(r, path) {
  return (r.variables.sitedrop_prefix + path).replace(/^[/\\]+/, '/');
}

function follow(r, release, inner, found, headers) {
  const rule = found.rule;
  if (rule.status !== 200 && rule.status !== 404) {
    const target = fill(rule.to, rule.params, found.groups, true);
    setHeaders(r, headers);
    r.return(rule.status, withQuery(rule.external ? target : siteLocation(r, target), r.variables.args));
    return;
  }
  const target = lookup(release, fill(rule.to, rule.params, found.groups, false));
  if (target === undefined || target.file === undefined) {
    notFound(r, release, inner, headers);
    return;
  }
  serveFile(r, inner, target.file, rule.status, headers);
}

// The site's path after its prefix: '' for the site's own address without a slash.
function sitePath(r) {
  const path = r.variables.sitedrop_path;
  return path === undefined ? '' : path;
}

function serve(r) {
  const inner = releaseOf(r, r.variables.sitedrop_link);
  if (inner === undefined) {
    r.variables.sitedrop_error_page = '/.sitedrop-plain-404';
    r.return(404);
    return;
  }
  const release = r.variables.sitedrop_deploys + inner;
  const path = sitePath(r);
  if (path === '') {
    r.return(301, withQuery(r.variables.sitedrop_prefix + '/', r.variables.args));
    return;
  }
  const head = readJson(release + HEAD);
  const headers = head ? headersFor(head.headers, path) : [];
  if (hidden(path) || unsafe(path)) {
    notFound(r, release, inner, headers);
    return;
  }
  const forced = head ? firstMatch(head.forced, path) : undefined;
  if (forced) {
    follow(r, release, inner, forced, headers);
    return;
  }
  const found = lookup(release, path);
  if (found !== undefined && found.slash !== undefined) {
    setHeaders(r, headers);
    r.return(301, withQuery(siteLocation(r, encodedPath(found.slash)), r.variables.args));
    return;
  }
  if (found !== undefined) {
    serveFile(r, inner, found.file, 200, headers);
    return;
  }
  const rules = head && head.redirects > 0 ? readJson(release + REDIRECTS) : undefined;
  const rewritten = rules ? firstMatch(rules, path) : undefined;
  if (rewritten) {
    follow(r, release, inner, rewritten, headers);
    return;
  }
  notFound(r, release, inner, headers);
}

// Runs on the file's response (and on an error page's): adds the site's headers for it.
function headers(r) {
  const chosen = r.variables.sitedrop_headers;
  if (!chosen) return;
  setHeaders(r, JSON.parse(chosen));
}

export default { serve, headers };
