/**
 * node-tar's two prototype patches, in one module: importing it applies them, to the
 * isolate that imports it (the unpack thread's). Each only records what the archive
 * policy must see and node-tar throws away; nothing node-tar decodes is changed.
 * test/adapters/tar-patches.test.ts fails if an installed tar changes what they rely on
 * (package.json pins the version it covers).
 */
import { Header, Pax, type ReadEntry } from 'tar';
import { paxKeys, type PaxFacts } from '../../../domain/archive-policy.js';
import { ArchiveRejected } from '../../../domain/errors.js';

/**
 * node-tar applies a PAX `path` record to the header object itself, so the name in the
 * header block is lost by the time an entry is seen. The policy checks that name too
 * (another tool would use it), so the decoder keeps it.
 */
const RAW_NAME = Symbol('rawName');
type HeaderWithRawName = Header & { [RAW_NAME]?: string };
const decode = Header.prototype.decode;
Header.prototype.decode = function (this: HeaderWithRawName, buf: Buffer, off: number, ex?: unknown, gex?: unknown): void {
  decode.call(this, buf, off, ex as never, gex as never);
  const field = (start: number, length: number) => {
    const bytes = buf.subarray(off + start, off + start + length);
    const end = bytes.indexOf(0);
    return bytes.subarray(0, end === -1 ? length : end).toString('utf8');
  };
  const isUstar = buf.subarray(off + 257, off + 265).toString('latin1') === 'ustar\u000000';
  const prefix = isUstar ? field(345, 155) : '';
  this[RAW_NAME] = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
};

/**
 * node-tar keeps only the pax keys it applies, and reads records line by line; the
 * policy needs every key, read by length as tar reads them (GNU.sparse.* records, a
 * record hidden in another's value). The keys, or why they cannot be read, ride on the
 * parsed header and are checked with the entry they apply to.
 */
const PAX_KEYS = Symbol('paxKeys');
type PaxWithKeys = Pax & { [PAX_KEYS]?: string[] | ArchiveRejected };
const parsePax = Pax.parse.bind(Pax);
Pax.parse = (text: string, ex?: Pax, global?: boolean): Pax => {
  const pax: PaxWithKeys = parsePax(text, ex, global);
  const before = (ex as PaxWithKeys | undefined)?.[PAX_KEYS] ?? [];
  try {
    pax[PAX_KEYS] = before instanceof ArchiveRejected ? before : [...before, ...paxKeys(text)];
  } catch (error) {
    pax[PAX_KEYS] = error as ArchiveRejected;
  }
  return pax;
};

/** The name in the entry's header block, before any pax `path` record replaced it. */
export function headerName(entry: ReadEntry): string {
  return (entry.header as HeaderWithRawName)[RAW_NAME] ?? '';
}

/** The keys of the entry's own pax header, or why they could not be read. */
export function paxFacts(entry: ReadEntry): PaxFacts {
  return (entry.extended as PaxWithKeys | undefined)?.[PAX_KEYS];
}

/** The keys of the global pax headers before the entry, or why they could not be read. */
export function globalPaxFacts(entry: ReadEntry): PaxFacts {
  return (entry.globalExtended as PaxWithKeys | undefined)?.[PAX_KEYS];
}
