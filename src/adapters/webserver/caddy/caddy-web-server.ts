import { execFile } from 'node:child_process';
import { lstat, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServiceIdentifier } from 'inversify';
import { inject, injectable } from 'inversify';
import type { ServedSite, SiteAddress, SiteScope, WebServer } from '../../../application/ports/web-server.js';
import { WebServerFailed } from '../../../domain/errors.js';
import { compileSiteRules, hasNoRules, type SiteRules } from '../../../domain/site-rules.js';
import { LOGGER, type Logger } from '../../log/logger.js';
import { caddyfile, siteSnippet, snippetFile, type CaddyInput } from './caddy-config.js';
import { httpsBlock } from './caddy-domains.js';
import { domainsBySite, inScope, linkTarget, pinLine, pinOf, SnippetFiles, type DomainFiles, type Pin } from './caddy-snippets.js';

export interface CaddySettings extends CaddyInput {
  /** Caddy's admin endpoint, host:port. */
  readonly caddyAdmin: string;
  /** WEBSERVER_RELOAD: run after each load, its failure failing the change like the load's. */
  readonly webServerReload: string | undefined;
  /** How long one load (and the command) may take. */
  readonly timeoutMs: number;
}

export const CADDY_SETTINGS = Symbol.for('sitedrop.CaddySettings') as ServiceIdentifier<CaddySettings>;

/**
 * Caddy cannot follow a link per request with a release's rules, so a site with rules
 * gets its own route pinned to its release (caddy-config.ts), and a deploy loads the
 * new configuration through Caddy's admin API before the link moves: the load is atomic,
 * so each request sees one release's files and rules. A site without rules is served
 * at its link by the general route, and its deploys load nothing.
 *
 * A site whose rules go away is pinned once more, with none, to its new release (the
 * link has not moved yet, and the general route would serve the old release's files
 * without its rules); that plain pin is dropped at a later load once the link is there.
 * Loads run one at a time.
 *
 * Verified domains are read from DOMAINS_ROOT's links at each load: a live site with
 * rules is routed at its domains too, pinned like its path route, and the HTTPS server
 * names every verified host. A domain's link changing calls domainsChanged(), which loads
 * in the background. Deploys never wait for it: one that needs nothing of Caddy (no rules,
 * no pin) never joins the line, and one that does goes ahead of a domains load not yet
 * begun (its own load carries the domains too). What it may wait for is a load already
 * under way: Caddy applies one configuration at a time.
 */
@injectable()
export class CaddyWebServer implements WebServer {
  private readonly files: SnippetFiles;
  private queue: Promise<unknown> = Promise.resolve();
  /** A domains load is queued and has not started: later changes join it. */
  private domainsQueued = false;
  /** Caddy may not hold what the domains' files say (a load failed since they were written). */
  private domainsStale = false;
  /** Deploys' loads in line, not yet begun: a domains load lets them go first. */
  private deploysWaiting = 0;
  /** The domains loads' WEBSERVER_RELOAD runs, one at a time, outside the line deploys wait in. */
  private domainCommands: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** The domains loads begun and not yet handed their command: close() waits for them. */
  private readonly domainsWork = new Set<Promise<void>>();
  /** Loads, numbered; the number of the latest whose WEBSERVER_RELOAD ran. */
  private loads = 0;
  private commandLoad = 0;
  /** Pins the load under way dropped (dropSettledPins): Caddy serves them until it answers. */
  private readonly dropping = new Set<string>();

  constructor(
    @inject(CADDY_SETTINGS) private readonly settings: CaddySettings,
    @inject(LOGGER) private readonly logger: Logger,
  ) {
    this.files = new SnippetFiles(settings.snippetsDir);
  }

  async willServe(served: ServedSite): Promise<void> {
    const file = snippetFile(served.site);
    // No rules and no pin (not even one the load under way is taking out, which Caddy still
    // serves): nothing to load, so no waiting in line (a site's deploys come one at a time).
    if (hasNoRules(served.rules) && !this.dropping.has(file) && (await this.files.read(file)) === undefined) return;
    this.deploysWaiting += 1;
    return this.serially(async () => {
      this.deploysWaiting -= 1;
      const before = await this.files.read(file);
      const wanted = await this.wanted(served, before === undefined ? undefined : pinOf(before));
      if (wanted === before) return;
      await this.files.put(file, wanted);
      try {
        await this.load(true);
      } catch (error) {
        // The files go back. Caddy kept its configuration only if it refused this one; a load
        // it did not answer in time it may still apply (and then serve a release this deploy
        // never published), and one whose command failed it holds: the files are loaded
        // again after it, so that Caddy ends on them.
        await this.files.put(file, before);
        await this.files.combine(await this.domainFiles());
        if (!(error instanceof CaddyRefused)) await this.load(false).catch(() => undefined);
        throw new WebServerFailed((error as Error).message);
      }
    });
  }

  forget(scope: SiteScope): Promise<void> {
    return this.serially(async () => {
      const gone = (await this.files.list()).filter((file) => inScope(file, scope));
      if (gone.length === 0) return;
      for (const file of gone) await this.files.put(file, undefined);
      await this.load(true);
    }).catch((error: unknown) => this.logger.warn('Caddy could not be told a site is gone', { error: (error as Error).message }));
  }

  reconcile(sites: readonly ServedSite[]): Promise<void> {
    return this.serially(async () => {
      const wanted = new Map<string, string | undefined>();
      for (const served of sites) {
        const file = snippetFile(served.site);
        // The links are where they will stay: a site without rules needs no pin.
        wanted.set(file, hasNoRules(served.rules) ? undefined : await this.snippet(served, 'rules'));
      }
      let changed = false;
      for (const file of new Set([...(await this.files.list()), ...wanted.keys()])) {
        const text = wanted.get(file);
        if ((await this.files.read(file)) === text) continue;
        await this.files.put(file, text);
        changed = true;
      }
      if (changed || (await this.files.differ(await this.domainFiles()))) await this.load(true);
    });
  }

  /**
   * A verified domain's link came or went: loads when the domains' files change (the
   * HTTPS server's hosts, the routes of sites with rules at their domains), in the
   * background, then runs WEBSERVER_RELOAD outside the line. The caller never waits. A
   * failure is logged; the next load carries the change.
   */
  domainsChanged(): void {
    if (this.domainsQueued || this.closed) return;
    this.domainsQueued = true;
    const work = this.loadDomains(true)
      .then((load) => {
        const command = this.settings.webServerReload;
        if (load === undefined || command === undefined) return;
        this.domainCommands = this.domainCommands
          .then(async () => {
            // A later load ran the command already (a deploy's, in line): this older one would only undo it.
            if (this.commandLoad > load) return;
            this.commandLoad = load;
            await runCommand(command, this.settings.timeoutMs);
          })
          .catch((error: unknown) => this.logger.warn('WEBSERVER_RELOAD failed after a custom domain change', { error: (error as Error).message }));
      })
      .catch((error: unknown) => this.logger.warn('Caddy could not be told of a custom domain change', { error: (error as Error).message }));
    this.domainsWork.add(work);
    void work.finally(() => this.domainsWork.delete(work));
  }

  /** At shutdown: no more domains loads; resolves once the loads and commands under way are done (none writes after). */
  async close(): Promise<void> {
    this.closed = true;
    // The domains loads, each with its command queued once it is done.
    while (this.domainsWork.size > 0) await Promise.all(this.domainsWork);
    await this.queue;
    await this.domainCommands;
  }

  /** The number of the load it made, if it loaded. `yieldOnce`: deploys in line go first, once (each of their loads carries the domains). */
  private async loadDomains(yieldOnce: boolean): Promise<number | undefined> {
    const done = await this.serially(async () => {
      if (yieldOnce && this.deploysWaiting > 0) return 'later';
      this.domainsQueued = false;
      if (!this.domainsStale && !(await this.files.differ(await this.domainFiles()))) return undefined;
      return this.load(false);
    });
    // In line again, behind the deploys that were waiting.
    return done === 'later' ? this.loadDomains(false) : done;
  }

  /** The domains' files as the links say now. */
  private async domainFiles(): Promise<DomainFiles> {
    const bySite = await domainsBySite(this.settings.domainsRoot, this.settings.docsRoot);
    return { routes: await this.files.domainRoutes(bySite), https: httpsBlock([...bySite.values()].flat(), this.settings) };
  }

  /** The snippet a site should have for `served`, given what it has now. */
  private async wanted(served: ServedSite, now: Pin | undefined): Promise<string | undefined> {
    if (!hasNoRules(served.rules)) return this.snippet(served, 'rules');
    // Rules going away: pinned with none until the link has moved (see the class comment).
    if (now?.kind === 'rules') return this.snippet(served, 'plain');
    return undefined;
  }

  private async snippet(served: ServedSite, kind: Pin['kind']): Promise<string> {
    const release = this.releaseDir(served);
    const rules: SiteRules = kind === 'rules' ? served.rules : compileSiteRules({});
    const notFoundPage = await lstat(join(release, '404.html')).then((s) => s.isFile(), () => false);
    return `${pinLine({ kind, release })}\n${siteSnippet(this.settings, served.site, release, rules, notFoundPage)}`;
  }

  private releaseDir(served: ServedSite): string {
    return join(this.settings.deploysRoot, served.site.user, served.site.project, served.release);
  }

  private linkOf(site: SiteAddress): string {
    return site.preview === undefined ? join(this.settings.docsRoot, site.user, site.project) : join(this.settings.previewsRoot, site.user, site.project, site.preview);
  }

  /** Drops the plain pins whose link has reached their release: the general route serves them the same. */
  private async dropSettledPins(): Promise<void> {
    for (const file of await this.files.list()) {
      const text = await this.files.read(file);
      const pin = text === undefined ? undefined : pinOf(text);
      if (pin?.kind !== 'plain') continue;
      const [user, project, preview] = file.split('/')[1]!.replace(/\.caddy$/, '').split('.') as [string, string, string | undefined];
      const site = { user, project, ...(file.startsWith('previews/') ? { preview } : {}) } as SiteAddress;
      const target = await linkTarget(this.linkOf(site));
      if (target !== undefined && target === (await realpath(pin.release).catch(() => undefined))) {
        this.dropping.add(file);
        await this.files.put(file, undefined);
      }
    }
  }

  /** Loads the Caddyfile through the admin API (Caddy adapts it and switches atomically), then runs WEBSERVER_RELOAD; returns the load's number. */
  private async load(withCommand: boolean): Promise<number> {
    const number = (this.loads += 1);
    try {
      await this.loadNow();
    } finally {
      // Loaded, or not (Caddy keeps what it had, the files say otherwise): either way the next load decides.
      this.dropping.clear();
    }
    if (withCommand && this.settings.webServerReload !== undefined) {
      this.commandLoad = Math.max(this.commandLoad, number);
      await runCommand(this.settings.webServerReload, this.settings.timeoutMs);
    }
    return number;
  }

  private async loadNow(): Promise<void> {
    await this.dropSettledPins();
    await this.files.combine(await this.domainFiles());
    this.domainsStale = true;
    const response = await fetch(`http://${this.settings.caddyAdmin}/load`, {
      method: 'POST',
      headers: { 'content-type': 'text/caddyfile' },
      body: caddyfile(this.settings),
      signal: AbortSignal.timeout(this.settings.timeoutMs),
    }).catch((error: unknown) => {
      throw new Error(`Caddy's admin endpoint ${this.settings.caddyAdmin} did not answer: ${(error as Error).message}`);
    });
    if (!response.ok) throw new CaddyRefused(`Caddy refused the configuration (${response.status}): ${(await response.text()).slice(0, 300)}`);
    this.domainsStale = false;
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

class CommandFailed extends Error {}

/** Caddy answered that it will not load the configuration: it keeps the one it has. */
class CaddyRefused extends Error {}

function runCommand(command: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('sh', ['-c', command], { timeout: timeoutMs }, (error, _stdout, stderr) => {
      if (error === null) resolve();
      else reject(new CommandFailed(`WEBSERVER_RELOAD failed (${error.code ?? error.signal ?? 'error'}): ${stderr.trim().slice(0, 200)}`));
    });
  });
}
