import { inject, injectable } from 'inversify';
import { PREVIEW_LINKS, type PreviewLinks } from './ports/preview-links.js';
import { RELEASE_RULES, type ReleaseRules } from './ports/release-rules.js';
import { RELEASE_STORE, type ReleaseStore } from './ports/release-store.js';
import { TOKEN_STORE, type TokenStore } from './ports/token-store.js';
import { WEB_SERVER, type ServedSite, type WebServer } from './ports/web-server.js';
import { rulesOfRelease } from './release-site-rules.js';

/**
 * Run at start-up: every live site and preview gets its release's rules compiled (a
 * release published before sitedrop compiled them is compiled now, or served with none)
 * and the web server is told what it serves. Returns how many sites it told of.
 */
@injectable()
export class ServeSiteRules {
  constructor(
    @inject(TOKEN_STORE) private readonly tokens: TokenStore,
    @inject(RELEASE_STORE) private readonly releases: ReleaseStore,
    @inject(PREVIEW_LINKS) private readonly previews: PreviewLinks,
    @inject(RELEASE_RULES) private readonly rules: ReleaseRules,
    @inject(WEB_SERVER) private readonly webServer: WebServer,
  ) {}

  async execute(): Promise<number> {
    const served: ServedSite[] = [];
    for (const user of await this.tokens.usernames()) {
      for (const project of await this.releases.projects(user)) {
        const live = await this.releases.liveRelease(user, project);
        const previews = await this.previews.list(user, project);
        for (const { site, release } of [
          ...(live === undefined ? [] : [{ site: { user, project }, release: live }]),
          ...previews.map((p) => ({ site: { user, project, preview: p.name }, release: p.release })),
        ]) {
          served.push({ site, release, rules: await rulesOfRelease(this.rules, { user, project, release }) });
        }
      }
    }
    await this.webServer.reconcile(served);
    return served.length;
  }
}
