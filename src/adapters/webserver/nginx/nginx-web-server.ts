import { injectable } from 'inversify';
import type { ServedSite, SiteScope, WebServer } from '../../../application/ports/web-server.js';

/**
 * nginx needs telling nothing: its router (sitedrop-router.js) follows each site's link
 * at request time and reads that release's compiled rules there, so a swap switches
 * files and rules at once, and no deploy ever reloads it.
 */
@injectable()
export class NginxWebServer implements WebServer {
  async willServe(_served: ServedSite): Promise<void> {}

  async forget(_scope: SiteScope): Promise<void> {}

  async reconcile(_sites: readonly ServedSite[]): Promise<void> {}
}
