import type { ServiceIdentifier } from 'inversify';

/** The TXT records at a name (each record's strings joined), or why none could be read. */
export type TxtLookup = { readonly records: readonly string[] } | { readonly failure: string };

/** DNS, as verifying a domain needs it. A name with no records is `{ records: [] }`, not a failure. */
export interface DnsTxt {
  /** Settles within a few seconds, whatever the servers do. */
  lookup(name: string): Promise<TxtLookup>;
}

export const DNS_TXT = Symbol.for('sitedrop.DnsTxt') as ServiceIdentifier<DnsTxt>;
