import { realpathSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { ConfigError } from './config-error.js';

/** A path as the kernel will see it: symlinks resolved as far as it exists, the rest appended. */
export function resolvedPath(path: string): string {
  const missing: string[] = [];
  for (let at = path; ; at = dirname(at)) {
    try {
      return join(realpathSync(at), ...missing.reverse());
    } catch {
      if (dirname(at) === at) return path;
      missing.push(basename(at));
    }
  }
}

const within = (inner: string, outer: string): boolean => inner === outer || inner.startsWith(outer.endsWith(sep) ? outer : outer + sep);

export interface Roots {
  readonly DATA_DIR: string;
  readonly DOCS_ROOT: string;
  readonly DEPLOYS_ROOT: string;
  readonly PREVIEWS_ROOT: string;
  /** Custom domains' host links, read by the web server. */
  readonly DOMAINS_ROOT: string;
  /** The SQLite file, when the database is one. */
  readonly DATABASE_URL?: string;
}

/**
 * The web server publishes DOCS_ROOT, PREVIEWS_ROOT and DOMAINS_ROOT; users' releases, staging and
 * trash live in DEPLOYS_ROOT. Nested or equal, one user's project could land in another's
 * tree, a preview be served at a live address, and the web server serve staging areas,
 * the admin token or the database. DATA_DIR may hold the roots (the default), never sit
 * inside one. Checked root by root, in this order, so each refusal names the first clash.
 */
export function assertDisjointRoots(roots: Roots): void {
  const real = Object.fromEntries(Object.entries(roots).map(([name, path]) => [name, resolvedPath(path)])) as Record<keyof Roots, string>;
  const served = ['DOCS_ROOT', 'DEPLOYS_ROOT', 'PREVIEWS_ROOT', 'DOMAINS_ROOT'] as const;
  served.forEach((root, i) => {
    for (const earlier of served.slice(0, i)) {
      if (within(real[earlier], real[root]) || within(real[root], real[earlier])) {
        throw new ConfigError(earlier, `apart from ${root} (${roots[root]}): neither may hold the other`, roots[earlier]);
      }
    }
    for (const inner of ['DATA_DIR', 'DATABASE_URL'] as const) {
      const path = real[inner];
      if (path !== undefined && within(path, real[root])) {
        throw new ConfigError(inner, `outside ${root} (${roots[root]}), which is published or holds users' files`, roots[inner] ?? '');
      }
    }
  });
}
