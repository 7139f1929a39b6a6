import type { ServiceIdentifier } from 'inversify';
import type { PreviewName } from '../../domain/preview.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { ReleaseId } from '../../domain/release-id.js';
import type { SiteRules } from '../../domain/site-rules.js';
import type { Username } from '../../domain/username.js';

/** A site the web server serves: a project's live site, or one of its previews. */
export interface SiteAddress {
  readonly user: Username;
  readonly project: ProjectName;
  readonly preview?: PreviewName;
}

export interface SiteScope {
  readonly user: Username;
  readonly project?: ProjectName;
  readonly preview?: PreviewName;
}

export interface ServedSite {
  readonly site: SiteAddress;
  readonly release: ReleaseId;
  readonly rules: SiteRules;
}

/**
 * The separate web server that serves the sites, as far as sitedrop must tell it
 * anything. A server that reads each release's compiled rules through the site's link
 * (nginx) needs nothing; one configured per site (Caddy) is reconfigured here.
 */
export interface WebServer {
  /**
   * Readies the web server to serve `release`, with its rules, at `site`; called before
   * the site's link moves there. Resolves once it will; throws WebServerFailed when it
   * cannot, having changed nothing for the site.
   */
  willServe(served: ServedSite): Promise<void>;
  /** Every site in `scope` is gone: the user's, one project's (live and previews), or one preview. Never throws. */
  forget(scope: SiteScope): Promise<void>;
  /** At start-up: the sites served now; the web server's own state is made to match. */
  reconcile(sites: readonly ServedSite[]): Promise<void>;
}

export const WEB_SERVER = Symbol.for('sitedrop.WebServer') as ServiceIdentifier<WebServer>;
