import { mkdir, readdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { SiteScope } from '../../../application/ports/web-server.js';

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
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
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
   * files a glob imports, and in their total size for one file.
   */
  async combine(): Promise<void> {
    for (const kind of ['live', 'previews']) {
      const files = (await this.list()).filter((file) => file.startsWith(`${kind}/`)).sort();
      const texts = await Promise.all(files.map((file) => this.read(file)));
      // Caddy refuses to import an empty file; the glob takes no file.
      await this.put(`${kind}.caddy`, files.length === 0 ? undefined : texts.filter((t) => t !== undefined).join('\n'));
    }
  }

  /** Every snippet file, relative to the directory. */
  async list(): Promise<string[]> {
    const files: string[] = [];
    for (const kind of ['live', 'previews']) {
      const names = await readdir(join(this.dir, kind)).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
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

/** The release a link points at now, resolved; undefined if none. */
export async function linkTarget(link: string): Promise<string | undefined> {
  return realpath(link).catch(() => undefined);
}
