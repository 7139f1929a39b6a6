import { mkdir, readdir, readFile, readlink, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { SiteScope } from '../../../application/ports/web-server.js';
import { DOMAIN_ROUTE_MARKER, domainRoutes, HTTPS_FILE } from './caddy-domains.js';
import { isMissing } from '../../fs/threads/fs-errors.js';

/** What Caddy reads of the verified domains: the routes of sites with rules at them, and the HTTPS server naming them. */
export interface DomainFiles {
  readonly routes: string | undefined;
  readonly https: string | undefined;
}

const ROUTES_FILE = 'domains.caddy';

/** What a snippet pins its site to: the release, and whether with rules or none. */
export interface Pin {
  readonly kind: 'rules' | 'plain';
  readonly release: string;
}

const PIN_LINE = /^# sitedrop pin: (rules|plain) (.+)$/m;

export const pinLine = (pin: Pin): string => `# sitedrop pin: ${pin.kind} ${pin.release}`;

export function pinOf(text: string): Pin | undefined {
  const found = PIN_LINE.exec(text);
  return found === null ? undefined : { kind: found[1] as Pin['kind'], release: found[2]! };
}

/** The snippets directory: one file per pinned site, written whole (a reload never reads half a file). */
export class SnippetFiles {
  constructor(private readonly dir: string) {}

  async read(file: string): Promise<string | undefined> {
    try {
      return await readFile(join(this.dir, file), 'utf8');
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  /** Writes `text` at `file`, or removes it for undefined. */
  async put(file: string, text: string | undefined): Promise<void> {
    const path = join(this.dir, file);
    if (text === undefined) {
      await rm(path, { force: true });
      return;
    }
    await mkdir(dirname(path), { recursive: true });
    await writeFile(`${path}.tmp`, text);
    await rename(`${path}.tmp`, path);
  }

  /**
   * Writes each kind's snippets into one file, `live.caddy` and `previews.caddy`, which
   * the Caddyfile imports: Caddy's adapter takes time in the square of the number of
   * files a glob imports, and in their total size for one file. Then the domains' files.
   */
  async combine(domains: DomainFiles): Promise<void> {
    // Caddy refuses to import an empty file; the glob takes no file.
    for (const kind of ['live', 'previews']) {
      const texts = (await this.texts(kind)).map(({ text }) => text.split(`\n${DOMAIN_ROUTE_MARKER}\n`)[0]!);
      await this.put(`${kind}.caddy`, texts.length === 0 ? undefined : texts.join('\n'));
    }
    await this.put(ROUTES_FILE, domains.routes);
    await this.put(HTTPS_FILE, domains.https);
  }

  /** Whether the domains' files say other than `domains`. */
  async differ(domains: DomainFiles): Promise<boolean> {
    return (await this.read(ROUTES_FILE)) !== domains.routes || (await this.read(HTTPS_FILE)) !== domains.https;
  }

  /**
   * The routes of live sites with rules at their verified domains, `domains` giving the
   * hosts of each site (`<user>/<project>`): what `domains.caddy` should hold.
   */
  async domainRoutes(domains: ReadonlyMap<string, readonly string[]>): Promise<string | undefined> {
    const sites = (await this.texts('live')).map(({ file, text }) => {
      const [user, project] = file.slice('live/'.length).replace(/\.caddy$/, '').split('.');
      return { route: text.split(`\n${DOMAIN_ROUTE_MARKER}\n`)[1] ?? '', hosts: domains.get(`${user}/${project}`) ?? [] };
    });
    return domainRoutes(sites.filter((s) => s.route !== ''));
  }

  private async texts(kind: string): Promise<{ file: string; text: string }[]> {
    const files = (await this.list()).filter((file) => file.startsWith(`${kind}/`)).sort();
    const texts = await Promise.all(files.map(async (file) => ({ file, text: await this.read(file) })));
    return texts.filter((t): t is { file: string; text: string } => t.text !== undefined);
  }

  /** Every snippet file, relative to the directory. */
  async list(): Promise<string[]> {
    const files: string[] = [];
    for (const kind of ['live', 'previews']) {
      const names = await readdir(join(this.dir, kind)).catch((error: unknown) => {
        if (isMissing(error)) return [];
        throw error;
      });
      files.push(...names.filter((n) => n.endsWith('.caddy')).map((n) => join(kind, n)));
    }
    return files;
  }
}

/** Whether a snippet file (`live/u.p.caddy`, `previews/u.p.v.caddy`) is in `scope`. */
export function inScope(file: string, scope: SiteScope): boolean {
  const [kind, name] = file.split('/') as [string, string];
  const [user, project, preview] = name.replace(/\.caddy$/, '').split('.');
  if (user !== scope.user) return false;
  if (scope.project !== undefined && project !== scope.project) return false;
  if (scope.preview !== undefined) return kind === 'previews' && preview === scope.preview;
  return true;
}

/**
 * The verified domains of each live site, `<user>/<project>` -> hosts, from DOMAINS_ROOT's
 * links (`<host>` -> `DOCS_ROOT/<user>/<project>`): one readlink per domain.
 */
export async function domainsBySite(domainsRoot: string, docsRoot: string): Promise<Map<string, string[]>> {
  const names = await readdir(domainsRoot).catch((error: unknown) => {
    if (isMissing(error)) return [];
    throw error;
  });
  const sites = new Map<string, string[]>();
  for (const name of names.sort()) {
    // Temporary links start with '.': no domain does.
    if (name.startsWith('.')) continue;
    const target = await readlink(join(domainsRoot, name)).catch(() => undefined);
    if (target === undefined || dirname(dirname(target)) !== docsRoot) continue;
    const site = `${basename(dirname(target))}/${basename(target)}`;
    sites.set(site, [...(sites.get(site) ?? []), name]);
  }
  return sites;
}

/** The release a link points at now, resolved; undefined if none. */
export async function linkTarget(link: string): Promise<string | undefined> {
  return realpath(link).catch(() => undefined);
}
