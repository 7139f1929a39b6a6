import { DomainInUse, DomainNotVerified, InvalidDomain, TooManyDomains } from './errors.js';
import type { ProjectName } from './project-name.js';
import type { Username } from './username.js';

/** A host name a project may be served at: lower-case, no trailing dot, checked by `DomainName.parse`. */
export type DomainName = string & { readonly __brand: 'DomainName' };

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
// A last label of digits (or 0x…) makes URL parsers read the name as an IPv4 address.
const NUMERIC_LABEL = /^(\d+|0x[0-9a-f]*)$/;
const MAX_LENGTH = 253;

export const DomainName = {
  /**
   * `reserved`: the hosts of PUBLIC_BASE and PREVIEW_BASE, which serve every user's
   * sites and so can be no one project's.
   */
  parse(value: unknown, reserved: readonly string[] = []): DomainName {
    // ASCII first: toLowerCase would turn a few other letters (the Kelvin sign) into ASCII ones.
    if (typeof value !== 'string' || !/^[\x21-\x7e]*$/.test(value)) throw new InvalidDomain();
    const name = value.toLowerCase().replace(/\.$/, '');
    if (name.length > MAX_LENGTH) throw new InvalidDomain();
    const labels = name.split('.');
    if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) throw new InvalidDomain();
    if (NUMERIC_LABEL.test(labels[labels.length - 1] ?? '')) throw new InvalidDomain();
    if (name === 'localhost' || name.endsWith('.localhost')) throw new InvalidDomain();
    if (reserved.some((host) => host.toLowerCase().replace(/\.$/, '') === name)) throw new InvalidDomain();
    if (!asUrlHost(name)) throw new InvalidDomain();
    return name as DomainName;
  },
};

/**
 * Whether a URL's host is `name` as it is: an `xn--` label that is no punycode (`xn--a`)
 * passes the label rule, but a browser, Caddy or nginx's resolver would refuse or rewrite it.
 */
function asUrlHost(name: string): boolean {
  try {
    return new URL(`http://${name}/`).hostname === name;
  } catch {
    return false;
  }
}

/** Where the TXT record that proves control of `domain` must be published. */
export const challengeName = (domain: DomainName): string => `_sitedrop-challenge.${domain}`;

/** One project's claim on a domain; verified once its TXT record was seen. */
export interface DomainClaim {
  readonly user: Username;
  readonly project: ProjectName;
  readonly domain: DomainName;
  /** The value the TXT record must hold: random, this claim's own. */
  readonly challenge: string;
  readonly createdAt: Date;
  readonly verifiedAt: Date | undefined;
}

const sameProject = (claim: DomainClaim, user: Username, project: ProjectName): boolean => claim.user === user && claim.project === project;

/**
 * Whether `project` may claim `domain`, given every claim on it and the project's own
 * domains: `existing` when it already has (the same challenge is answered again), `new`
 * when a claim may be added. A verified claim elsewhere blocks it; unverified ones do not.
 */
export function claimDecision(
  user: Username,
  project: ProjectName,
  claimsOfDomain: readonly DomainClaim[],
  projectDomains: number,
  max: number,
): { kind: 'existing'; claim: DomainClaim } | { kind: 'new' } {
  if (claimsOfDomain.some((c) => c.verifiedAt !== undefined && !sameProject(c, user, project))) throw new DomainInUse();
  const own = claimsOfDomain.find((c) => sameProject(c, user, project));
  if (own !== undefined) return { kind: 'existing', claim: own };
  if (projectDomains >= max) throw new TooManyDomains(max);
  return { kind: 'new' };
}

/** Verifying is refused once another project verified the domain first. */
export function assertMayVerify(user: Username, project: ProjectName, claimsOfDomain: readonly DomainClaim[]): void {
  if (claimsOfDomain.some((c) => c.verifiedAt !== undefined && !sameProject(c, user, project))) throw new DomainInUse();
}

const SHOWN_RECORDS = 5;
const SHOWN_RECORD_CHARS = 64;
// JSON escapes quotes, backslashes and C0 controls; DEL and C1 are escaped here.
const CONTROL = /[\x7f-\x9f]/g;

/** Text as an answer shows it: quotes, backslashes and control characters escaped, cut with an ellipsis. */
function shown(text: string): string {
  const escaped = JSON.stringify(text).slice(1, -1).replace(CONTROL, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);
  return escaped.length > SHOWN_RECORD_CHARS ? `${escaped.slice(0, SHOWN_RECORD_CHARS)}…` : escaped;
}

/**
 * Passes when one TXT record at the challenge name equals the claim's value; otherwise
 * throws DomainNotVerified saying what was found (a few records, each capped and escaped,
 * since they are anyone's text) or why nothing was.
 */
export function assertChallengeMet(claim: DomainClaim, lookup: { records: readonly string[] } | { failure: string }): void {
  if ('records' in lookup && lookup.records.includes(claim.challenge)) return;
  const where = challengeName(claim.domain);
  if ('failure' in lookup) throw new DomainNotVerified(`the lookup of TXT records at ${where} failed: ${shown(lookup.failure)}`);
  if (lookup.records.length === 0) throw new DomainNotVerified(`no TXT record at ${where}`);
  const listed = lookup.records.slice(0, SHOWN_RECORDS).map((r) => `"${shown(r)}"`).join(', ');
  const more = lookup.records.length > SHOWN_RECORDS ? ` and ${lookup.records.length - SHOWN_RECORDS} more` : '';
  throw new DomainNotVerified(`found ${lookup.records.length} TXT record(s) at ${where}, none the challenge: ${listed}${more}`);
}
