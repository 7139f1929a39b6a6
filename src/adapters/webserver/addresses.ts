import { isIP } from 'node:net';

/** Where the web server answers for sites: one listening host and port, its sites under path prefixes. */
export interface SiteServer {
  readonly scheme: 'http' | 'https';
  /** The host as in the URL, lower-cased, without brackets. */
  readonly host: string;
  readonly port: number;
  /** The live sites' prefix ('' at the root, else '/path'), when this server has them. */
  readonly live?: string;
  /** The previews' prefix, when this server has them. */
  readonly previews?: string;
}

function parse(base: string): { scheme: 'http' | 'https'; host: string; port: number; path: string } {
  const url = new URL(base);
  const scheme = url.protocol === 'https:' ? 'https' : 'http';
  const port = url.port === '' ? (scheme === 'https' ? 443 : 80) : Number(url.port);
  return { scheme, host: url.hostname.replace(/^\[|\]$/g, '').toLowerCase(), port, path: url.pathname.replace(/\/+$/, '') };
}

/**
 * The servers PUBLIC_BASE and PREVIEW_BASE ask for: one when previews share the live
 * sites' host and port (the default, `<PUBLIC_BASE>/_previews`), two when they do not.
 */
export function siteServers(publicBase: string, previewBase: string): SiteServer[] {
  const live = parse(publicBase);
  const previews = parse(previewBase);
  if (live.host === previews.host && live.port === previews.port) {
    return [{ scheme: live.scheme, host: live.host, port: live.port, live: live.path, previews: previews.path }];
  }
  return [
    { scheme: live.scheme, host: live.host, port: live.port, live: live.path },
    { scheme: previews.scheme, host: previews.host, port: previews.port, previews: previews.path },
  ];
}

export const isAddress = (host: string): boolean => isIP(host) !== 0;

/** A literal for a regular expression (PCRE and RE2 alike). */
export const regexLiteral = (text: string): string => text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
