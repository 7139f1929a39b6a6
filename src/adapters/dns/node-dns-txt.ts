import { Resolver } from 'node:dns/promises';
import type { DnsTxt, TxtLookup } from '../../application/ports/dns-txt.js';

/** Each server's answer is awaited this long, twice (c-ares doubles the second wait): a silent server fails a lookup in about 4.5 s. */
const ATTEMPT_MS = 1500;
const TRIES = 2;
/** The whole lookup's bound, however many DNS_SERVERS there are: c-ares tries them one after the other. */
export const LOOKUP_MS = 5000;
const NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND']);

/**
 * TXT lookups through c-ares (node:dns's Resolver), at DNS_SERVERS when set (`ip` or
 * `ip:port` each), else the system's resolvers. A name with no record, or no such name,
 * is no records; anything else (a timeout, a refusal) is a failure saying which.
 */
export class NodeDnsTxt implements DnsTxt {
  constructor(private readonly servers: readonly string[] | undefined) {
    // A bad address fails here, at start-up, rather than at each lookup.
    if (servers !== undefined && servers.length > 0) new Resolver().setServers([...servers]);
  }

  async lookup(name: string): Promise<TxtLookup> {
    // A resolver per lookup: cancel() at the deadline ends every query of its resolver, and only this one's may go.
    const resolver = new Resolver({ timeout: ATTEMPT_MS, tries: TRIES });
    if (this.servers !== undefined && this.servers.length > 0) resolver.setServers([...this.servers]);
    const deadline = setTimeout(() => resolver.cancel(), LOOKUP_MS);
    try {
      // A record may be several strings of up to 255 bytes: it means their concatenation
      // (RFC 7208 §3.3). node hands the bytes over as latin1; read as UTF-8, they show as written.
      const records = await resolver.resolveTxt(name);
      return { records: records.map((chunks) => Buffer.from(chunks.join(''), 'latin1').toString('utf8')) };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string' && NO_RECORDS.has(code)) return { records: [] };
      // Cancelled at the deadline: to the caller, a timeout like any other.
      if (code === 'ECANCELLED') return { failure: 'ETIMEOUT' };
      return { failure: typeof code === 'string' ? code : 'lookup failed' };
    } finally {
      clearTimeout(deadline);
    }
  }
}
