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
  /** The SQLite file, when the database is one. */
  readonly DATABASE_URL?: string;
}

/**
 * The web server publishes DOCS_ROOT; users' releases, staging and trash live in
 * DEPLOYS_ROOT. Nested or equal, one user's project could land in another's tree and the
 * web server could serve staging areas, the admin token or the database. DATA_DIR may
 * hold both roots (the default), never sit inside one.
 */
export function assertDisjointRoots(roots: Roots): void {
  const real = Object.fromEntries(Object.entries(roots).map(([name, path]) => [name, resolvedPath(path)])) as Record<keyof Roots, string>;
  const served = ['DOCS_ROOT', 'DEPLOYS_ROOT'] as const;
  if (within(real.DOCS_ROOT, real.DEPLOYS_ROOT) || within(real.DEPLOYS_ROOT, real.DOCS_ROOT)) {
    throw new ConfigError('DOCS_ROOT', `apart from DEPLOYS_ROOT (${roots.DEPLOYS_ROOT}): neither may hold the other`, roots.DOCS_ROOT);
  }
  for (const inner of ['DATA_DIR', 'DATABASE_URL'] as const) {
    const path = real[inner];
    if (path === undefined) continue;
    const holder = served.find((root) => within(path, real[root]));
    if (holder) throw new ConfigError(inner, `outside ${holder} (${roots[holder]}), which is published or holds users' files`, roots[inner] ?? '');
  }
}
