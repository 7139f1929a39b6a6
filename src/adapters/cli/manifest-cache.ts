import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, rename, unlink, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { DeployTarget, ManifestBody } from './api-client.js';
import type { ManifestFile } from '../../domain/manifest.js';
import { manifestDigest } from '../../domain/manifest-digest.js';
import type { FileStamp, RememberedFiles } from './quick-check.js';

/** A manifest being written (ManifestCache.begin): finished with its release, or abandoned. */
export interface PendingManifest {
  finish(release: string): Promise<void>;
  abandon(): void;
}

/**
 * A release this machine published, with the manifest it was built from: the next
 * deploy's base. With each file's stamp where it could be trusted, so the next deploy
 * reads only the files changed since (quick-check.ts).
 */
export interface PublishedManifest extends RememberedFiles {
  readonly release: string;
}

/** How a manifest names the release it is relative to: the release, and the digest of its files (manifest-digest.ts). */
export type ManifestBase = NonNullable<ManifestBody['base']>;

/** A cached manifest as read back: its files, and the digest they were checked against. */
export interface CachedManifest extends PublishedManifest {
  readonly digest: string;
}

/**
 * A cache file found: the base it names, from its first line (enough for the deploy to
 * open on it at once), and `files()` to parse and check its files while the server
 * answers (a format 1 file's are parsed at once: its digest is worked out from them).
 * Both halves come from one read of one file, so they are one deploy's.
 */
export interface CacheEntry {
  readonly base: ManifestBase;
  /** The files and stamps, or undefined (with a notice) if they are not what the first line says. */
  files(): CachedManifest | undefined;
}

/**
 * Format 2 is two lines: the head (server, project, preview, release, and the digest of
 * the files), then the files and their stamps. Format 1, one line with no digest, is
 * still read: the first deploy after an upgrade works its digest out as before.
 */
const FORMAT = 2;
const EARLIER_FORMAT = 1;
const RELEASE_ID = /^\d{8}T\d{6}$/;
const DIGEST = /^[0-9a-f]{64}$/;
const STAMP = /^\d+:\d+:\d+:\d+:\d+$/;

/**
 * Where the manifests go: SITEDROP_CACHE_DIR, else the XDG cache directory (a relative
 * XDG_CACHE_HOME is to be ignored, the specification says), else ~/.cache; undefined
 * when there is no home to put it in (a deploy then sends whole manifests).
 */
export function cacheDirectory(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.SITEDROP_CACHE_DIR) return env.SITEDROP_CACHE_DIR;
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'sitedrop');
  try {
    return join(homedir(), '.cache', 'sitedrop');
  } catch {
    return undefined;
  }
}

/**
 * The last manifest published per server, account, project and preview, so that a
 * redeploy sends only what changed since (docs/openapi.yaml, `base`). As a base it is
 * only a hint: the server checks it against the release's files, and anything wrong with
 * it (unreadable, stale, another machine's deploy since) costs one whole manifest, never
 * a deploy. Its stamps are more than a hint: a file whose stamp matches is taken to hold
 * the digest cached for it, unread (quick-check.ts), as git trusts its index; the file is
 * the user's own, mode 0600 in a 0700 directory.
 */
export class ManifestCache {
  constructor(
    private readonly dir: string | undefined,
    private readonly notice: (line: string) => void,
    /**
     * Whose releases: a fingerprint of the credential (ApiClient.account). Two accounts
     * sharing a cache directory (one CI machine) each have a project of that name, and
     * would otherwise offer each other's releases as bases, one refusal each time.
     */
    private readonly account = '',
  ) {}

  /**
   * The cache's entry for this target, the file read whole and its first line parsed (the
   * files are left for CacheEntry.files). Read synchronously, before the folder's walk: an
   * asynchronous read needs this thread between its steps, and so would wait for the walk,
   * which is synchronous.
   */
  open(server: string, target: DeployTarget): CacheEntry | undefined {
    const path = this.pathOf(server, target);
    if (path === undefined) return undefined;
    let bytes: Buffer | undefined;
    try {
      bytes = readFileSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') this.notice(`cannot read the cached manifest ${path} (${(error as Error).message}): sending the whole manifest`);
      // The first deploy after an upgrade reads what an earlier version wrote; writing this
      // deploy's manifest removes it (put), so this runs once per cache at most.
      else bytes = earlierVersions(path);
      if (bytes === undefined) return undefined;
    }
    const ignored = (error: unknown): undefined => void this.notice(`ignoring the cached manifest ${path} (${(error as Error).message}): sending the whole manifest`);
    try {
      return entryOf(bytes, server, target, ignored);
    } catch (error) {
      return ignored(error);
    }
  }

  async write(server: string, target: DeployTarget, manifest: PublishedManifest): Promise<void> {
    await this.begin(server, target, manifest).finish(manifest.release);
  }

  /**
   * The manifest of a deploy under way, written once its release is known: its digest and
   * its files' serializing are worked out while the server publishes, so the deploy does
   * not wait for them after its answer; the head, with the release, goes in front last.
   * `abandon`, when the deploy fails, writes nothing. Not compressed: gzip costs the CLI
   * more time than a cache's megabytes are worth (docs/performance.md).
   */
  begin(server: string, target: DeployTarget, remembered: RememberedFiles): PendingManifest {
    const path = this.pathOf(server, target);
    if (path === undefined) return { finish: async () => undefined, abandon: () => undefined };
    let prepared: { digest: string; body: string } | undefined;
    let abandoned = false;
    const prepare = () => (prepared ??= { digest: manifestDigest(remembered.files), body: JSON.stringify({ files: remembered.files, stamps: remembered.stamps }) });
    // A turn later: the publish just asked for goes out first (node:http writes it on the
    // next tick), then the digest and the serializing run while the server works.
    setImmediate(() => {
      if (!abandoned) prepare();
    });
    return {
      finish: async (release) => {
        if (abandoned) return;
        const { digest, body } = prepare();
        const head = { format: FORMAT, server: serverKey(server), ...target, release, digest };
        await this.put(path, `${JSON.stringify(head)}\n${body}`);
      },
      abandon: () => {
        abandoned = true;
      },
    };
  }

  /** Written whole under a temporary name, then renamed: a reader never sees half a file. */
  private async put(path: string, text: string): Promise<void> {
    const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      // Paths of a private site are the owner's business: readable by them alone.
      await writeFile(temporary, text, { mode: 0o600 });
      await rename(temporary, path);
      // Where earlier versions kept the same manifest, gzip-compressed: stale once this is written.
      await unlink(`${path}.gz`).catch(() => undefined);
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      this.cannotWrite(error);
    }
  }

  private cannotWrite(error: unknown): void {
    this.notice(`cannot cache the published manifest in ${this.dir} (${(error as Error).message}): the next deploy sends the whole manifest`);
  }

  async forget(server: string, target: DeployTarget): Promise<void> {
    const path = this.pathOf(server, target);
    if (path !== undefined) await unlink(path).catch(() => undefined);
  }

  private pathOf(server: string, target: DeployTarget): string | undefined {
    if (this.dir === undefined) return undefined;
    const key = createHash('sha256').update(JSON.stringify([serverKey(server), this.account, target.project, target.preview ?? null])).digest('hex');
    return join(this.dir, `${key.slice(0, 32)}.json`);
  }
}

/**
 * The same manifest as earlier versions kept it, gzip-compressed beside the name used
 * now; undefined if there is none or it does not inflate. Without it, the first deploy
 * after an upgrade would send the whole manifest and read every file again.
 */
function earlierVersions(path: string): Buffer | undefined {
  try {
    return gunzipSync(readFileSync(`${path}.gz`));
  } catch {
    return undefined;
  }
}

/** One server however its address is spelled (a trailing slash, the case of its host). */
const serverKey = (server: string): string => new URL(server).href;

/**
 * A cache file's content, checked as what it is: data another program could have written.
 * Its files are checked when asked for, against the digest the head names: a deploy opened
 * on that digest must not go on to send a difference from other files. (Their paths are
 * not held to the path rules here: the check catches accidents, not a crafted file, which
 * the stamps would let through anyway.)
 */
function entryOf(bytes: Buffer, server: string, target: DeployTarget, ignored: (error: unknown) => undefined): CacheEntry {
  // JSON.stringify writes no raw line break: format 2's head ends at the first one.
  const end = bytes.indexOf(0x0a);
  const head = end === -1 ? undefined : headOf(bytes.toString('utf8', 0, end));
  // Format 1 as any JSON layout: written on one line, but another tool may have reflowed it.
  const whole = head !== undefined && head.format !== EARLIER_FORMAT ? head : (JSON.parse(bytes.toString('utf8')) as Record<string, unknown>);
  const { format, server: cachedServer, project, preview, release, digest } = whole ?? {};
  if ((format !== FORMAT || whole !== head) && format !== EARLIER_FORMAT) throw new Error('not a format this sitedrop reads');
  if (cachedServer !== serverKey(server) || project !== target.project || (preview ?? undefined) !== target.preview) throw new Error('for another server or project');
  if (typeof release !== 'string' || !RELEASE_ID.test(release)) throw new Error('no release id');
  if (format === EARLIER_FORMAT) {
    const cached = { ...filesOf(whole), release };
    const named = { ...cached, digest: manifestDigest(cached.files) };
    return { base: { release, digest: named.digest }, files: () => named };
  }
  if (typeof digest !== 'string' || !DIGEST.test(digest)) throw new Error('no digest');
  let checked: CachedManifest | undefined | null = null;
  const files = (): CachedManifest | undefined => {
    try {
      const cached = { ...filesOf(JSON.parse(bytes.toString('utf8', end + 1))), release };
      if (manifestDigest(cached.files) !== digest) throw new Error('files that do not match its digest');
      return { ...cached, digest };
    } catch (error) {
      return ignored(error);
    }
  };
  // Worked out once: asked again, the same answer, and the notice said once.
  return { base: { release, digest }, files: () => (checked === null ? (checked = files()) : checked) };
}

/** A first line that is a JSON object, or undefined (a format 1 file reflowed begins with less). */
function headOf(line: string): Record<string, unknown> | undefined {
  try {
    const head: unknown = JSON.parse(line);
    return typeof head === 'object' && head !== null ? (head as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The files and stamps of a cache's body, checked. */
function filesOf(body: unknown): RememberedFiles {
  const { files, stamps } = (body ?? {}) as Record<string, unknown>;
  if (!Array.isArray(files) || !files.every(isManifestFile)) throw new Error('not a list of files');
  // Stamps came later (a cache without them just reads every file once more).
  if (stamps === undefined) return { files };
  if (!Array.isArray(stamps) || stamps.length !== files.length || !stamps.every(isStamp)) throw new Error('stamps that do not match its files');
  return { files, stamps };
}

const isStamp = (stamp: unknown): stamp is FileStamp | null => stamp === null || (typeof stamp === 'string' && STAMP.test(stamp));

function isManifestFile(file: unknown): file is ManifestFile {
  const { path, size, digest } = (file ?? {}) as Record<string, unknown>;
  return typeof path === 'string' && Number.isSafeInteger(size) && (size as number) >= 0 && typeof digest === 'string' && DIGEST.test(digest);
}
