import type { ServiceIdentifier } from 'inversify';

export interface DomainSettings {
  /** DOMAINS_MAX: domains a project may claim. */
  readonly max: number;
  /** The hosts of PUBLIC_BASE and PREVIEW_BASE: they serve everyone's sites, so no project may claim them. */
  readonly reservedHosts: readonly string[];
}

export const DOMAIN_SETTINGS = Symbol.for('sitedrop.DomainSettings') as ServiceIdentifier<DomainSettings>;
