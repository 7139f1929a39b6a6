import { Resolver } from 'node:dns/promises';
import type { DnsTxt, TxtLookup } from '../../application/ports/dns-txt.js';

/** Each server's answer is awaited this long, twice (c-ares doubles the second wait): a silent server fails a lookup in about 4.5 s. */
const ATTEMPT_MS = 1500;
const TRIES = 2;
const NO_RECORDS = new Set(['ENODATA', 'ENOTFOUND']);

/**
 * TXT lookups through c-ares (node:dns's Resolver), at DNS_SERVERS when set (`ip` or
 * `ip:port` each), else the system's resolvers. A name with no record, or no such name,
 * is no records; anything else (a timeout, a refusal) is a failure saying which.
 */
export class NodeDnsTxt implements DnsTxt {
  private readonly resolver = new Resolver({ timeout: ATTEMPT_MS, tries: TRIES });

  constructor(servers: readonly string[] | undefined) {
    if (servers !== undefined && servers.length > 0) this.resolver.setServers([...servers]);
  }

  async lookup(name: string): Promise<TxtLookup> {
    try {
      // A record may be several strings of up to 255 bytes: it means their concatenation
      // (RFC 7208 §3.3). node hands the bytes over as latin1; read as UTF-8, they show as written.
      const records = await this.resolver.resolveTxt(name);
      return { records: records.map((chunks) => Buffer.from(chunks.join(''), 'latin1').toString('utf8')) };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string' && NO_RECORDS.has(code)) return { records: [] };
      return { failure: typeof code === 'string' ? code : 'lookup failed' };
    }
  }
}
