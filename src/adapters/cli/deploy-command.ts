import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { ServerError, type ApiClient, type DeployTarget, type Json } from './api-client.js';
import { measureSiteFolder, readSiteFolder, type SiteFolder } from './folder-manifest.js';
import { deployIncrementally, MostlyNew, ProtocolAbsent, SessionsBusy, type DeployCounts, type EarlySession } from './incremental-deploy.js';
import { cacheDirectory, ManifestCache, type CacheEntry, type CachedManifest, type ManifestBase, type PendingManifest } from './manifest-cache.js';
import { count, err, megabytes, out } from './output.js';
import { hashingMeter, metered, sendingMeter, uploadingMeter } from './progress.js';
import { hashChangedFiles, type CheckedFolder, type RememberedFiles } from './quick-check.js';
import { packFolder } from './site-archive.js';
import { UsageError } from './usage-error.js';

/** Ctrl-C during a deploy: the session is deleted first, then the CLI exits 130 as a shell expects. */
export class Interrupted extends Error {}

export interface DeployOptions {
  readonly project: string;
  readonly preview?: string;
  readonly json?: boolean;
  readonly full?: boolean;
  /** How many times a deploy the server turned away for now (503, Retry-After) is tried again; a whole number as typed. */
  readonly retries?: string;
}

/** Tries again (`--retries`) unless told otherwise: a pipeline that meets a busy or restarting server should not fail for it. */
const DEFAULT_RETRIES = 3;
/** The longest wait between tries, whatever Retry-After says: a pipeline's time is bounded too. */
const MOST_WAIT_SECONDS = 60;

function hashed(folder: SiteFolder, remembered: RememberedFiles | undefined): Promise<CheckedFolder> {
  const meter = hashingMeter(folder.files.length);
  let done = 0;
  return metered(meter, () => hashChangedFiles(folder, remembered, () => meter.update(++done)));
}

/** SIGINT aborts the conversation instead of killing the process, for as long as `work` runs. */
async function interruptible<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const interrupt = () => controller.abort(new Interrupted('interrupted'));
  process.once('SIGINT', interrupt);
  try {
    return await work(controller.signal);
  } finally {
    process.removeListener('SIGINT', interrupt);
  }
}

function uploadArchive(api: ApiClient, target: DeployTarget, archive: Readable): Promise<Json> {
  const meter = uploadingMeter();
  return metered(meter, () => api.deploy(target, archive, (sent) => meter.update(sent)));
}

function report(answer: Json, counts: DeployCounts | undefined, json: boolean | undefined): void {
  if (json) return out(JSON.stringify({ ...answer, ...counts }));
  if (counts?.mode === 'incremental') {
    out(`sent ${count(counts.sentFiles)} of ${count(counts.totalFiles)} files (${megabytes(counts.sentBytes)} of ${megabytes(counts.totalBytes)}); ${count(counts.skippedFiles)} already on the server`);
    if (counts.hashedFiles !== undefined && counts.hashedFiles < counts.totalFiles) {
      out(`read ${count(counts.hashedFiles)} files; ${count(counts.totalFiles - counts.hashedFiles)} had not changed since the last deploy from here`);
    }
  } else if (counts) out(`sent all ${count(counts.totalFiles)} files (${megabytes(counts.totalBytes)}) in one archive`);
  out(`deployed ${String(answer.project)}${answer.preview === undefined ? '' : ` preview ${String(answer.preview)}`}: release ${String(answer.release)}`);
  out(String(answer.url));
}

/**
 * Opens the deploy on the last release published from here before the folder is read,
 * so that the server builds the release from it while this machine walks and hashes
 * (docs/content-store.md). Waits only until the request has left: the walk that follows
 * is synchronous. Any failure is the later open's to meet, so it is only remembered.
 */
async function openEarly(api: ApiClient, target: DeployTarget, base: ManifestBase): Promise<Early> {
  let sent!: () => void;
  const left = new Promise<void>((resolve) => (sent = resolve));
  // A 409 says the base is gone: kept, so the whole manifest goes at once. Anything else, the later open meets again.
  const session = api.openOnBase(target, base, sent).catch((error: unknown) => (error instanceof ServerError && error.status === 409 ? error : undefined));
  await Promise.race([left, session]);
  // Wrapped: awaiting a promise of a promise would wait for the answer too.
  return { session };
}

/**
 * The folder read, and hashed unless the deploy sends it whole, with the session opened
 * on the cached base meanwhile (openEarly): named by the cache's first line, so the open
 * leaves before the cached files are parsed, and the server builds on the base while they
 * are. Cached files that fail their checks delete that session. A failure or a Ctrl-C
 * before the deploy goes on deletes it too; the walk is synchronous, so a Ctrl-C is heard
 * when it ends.
 */
async function readFolder(api: ApiClient, target: DeployTarget, path: string, cached: CacheEntry | undefined, hashing: boolean): Promise<{ early?: Early; base?: CachedManifest; folder: SiteFolder; checked?: CheckedFolder }> {
  let interrupted = false;
  const interrupt = (): void => void (interrupted = true);
  const heard = (): void => {
    if (interrupted) throw new Interrupted('interrupted');
  };
  // Before the early open: a Ctrl-C from then on must not leave its session behind.
  if (cached) process.once('SIGINT', interrupt);
  let early: Early | undefined;
  // The session of a base whose cached files failed their checks: deleted while the folder is read.
  let cancelling: Promise<void> | undefined;
  try {
    early = cached && (await openEarly(api, target, cached.base));
    const base = cached?.files();
    if (early && !base) {
      cancelling = cancelEarly(api, early);
      early = undefined;
    }
    const folder = await readSiteFolder(path);
    heard();
    for (const warning of folder.warnings) err(`warning: ${warning}`);
    const checked = hashing ? await hashed(folder, base) : undefined;
    heard();
    return { early, base, folder, checked };
  } catch (error) {
    await cancelEarly(api, early);
    throw error;
  } finally {
    await cancelling;
    process.removeListener('SIGINT', interrupt);
  }
}

type Early = { session: Promise<EarlySession> };

/** The early session, if there is one, deleted: the deploy failed before it could use it. */
async function cancelEarly(api: ApiClient, early: Early | undefined): Promise<void> {
  const session = await early?.session;
  if (session && !(session instanceof ServerError)) await api.deleteDeploy(session.id).catch(() => undefined);
}

function retriesOf(options: DeployOptions): number {
  if (options.retries === undefined) return DEFAULT_RETRIES;
  const retries = Number(options.retries);
  if (!/^[0-9]+$/.test(options.retries) || retries > 100) throw new UsageError(`--retries must be a whole number from 0 to 100, not ${options.retries}`);
  return retries;
}

/**
 * A deploy the server turned away for now (503 with Retry-After: every slot taken and the
 * queue full, a shutdown behind a rolling restart, a turn taken back for another user) is
 * tried again from the start after the wait it asks for, up to `--retries` times. Nothing
 * of it went live (the server answers 503 only before a publish), so trying again is safe;
 * an incremental deploy's session was deleted as the try failed.
 */
export async function deploy(api: ApiClient, path: string, options: DeployOptions): Promise<void> {
  const retries = retriesOf(options);
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await deployOnce(api, path, options);
    } catch (error) {
      if (!(error instanceof ServerError && error.status === 503 && error.retryAfter !== undefined && attempt <= retries)) throw error;
      const seconds = Math.min(error.retryAfter, MOST_WAIT_SECONDS);
      err(`the server cannot take this deploy now (${error.message}): trying again in ${seconds} s (${attempt} of ${retries})`);
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    }
  }
}

/**
 * A folder goes incrementally (only what the server lacks), or whole with --full, when
 * most of it is new to the server, when the server has no room for another session
 * (429), or when the server predates the protocol; a .tar.gz goes as it is.
 */
async function deployOnce(api: ApiClient, path: string, options: DeployOptions): Promise<void> {
  const info = await stat(path).catch(() => {
    throw new UsageError(`${path} does not exist`);
  });
  const target: DeployTarget = { project: options.project, ...(options.preview === undefined ? {} : { preview: options.preview }) };
  if (!info.isDirectory()) {
    if (!/\.(tar\.gz|tgz)$/.test(path)) throw new UsageError(`${path} is neither a folder nor a .tar.gz file`);
    return report(await uploadArchive(api, target, createReadStream(path)), undefined, options.json);
  }
  const cache = new ManifestCache(cacheDirectory(), err, api.account);
  const cached = options.full ? undefined : cache.open(api.server, target);
  const { early, base, folder, checked } = await readFolder(api, target, path, cached, !options.full);
  let totalBytes: number | undefined;
  let published: CheckedFolder | undefined;
  if (checked) {
    const { files, stamps } = checked;
    const baseRefused = () => cache.forget(api.server, target);
    let caching: PendingManifest | undefined;
    const publishing = () => void (caching ??= cache.begin(api.server, target, { files, stamps }));
    try {
      const { answer, counts } = await interruptible((signal) => deployIncrementally(api, target, folder, files, { signal, sending: sendingMeter, notice: err, base, early: early?.session, baseRefused, publishing }));
      await (caching ?? cache.begin(api.server, target, { files, stamps })).finish(String(answer.release));
      return report(answer, { ...counts, hashedFiles: checked.hashed }, options.json);
    } catch (error) {
      caching?.abandon();
      if (error instanceof MostlyNew || error instanceof SessionsBusy) {
        err(`${error.message}: sending the whole folder as one archive`);
        published = checked;
      } else if (error instanceof ProtocolAbsent) err(`this server has no incremental deploys (${error.message}): sending the whole folder`);
      else throw error;
    }
    totalBytes = checked.files.reduce((sum, file) => sum + file.size, 0);
  }
  totalBytes ??= await measureSiteFolder(folder);
  const answer = await uploadArchive(api, target, packFolder(folder));
  // The archive holds the files just hashed: its release is the next deploy's base. (A file
  // changed in between makes the server refuse that base once; nothing worse.)
  if (published) await cache.write(api.server, target, { release: String(answer.release), files: published.files, stamps: published.stamps });
  const totalFiles = folder.files.length;
  const hashedFiles = published === undefined ? {} : { hashedFiles: published.hashed };
  report(answer, { mode: 'full', sentFiles: totalFiles, sentBytes: totalBytes, skippedFiles: 0, totalFiles, totalBytes, ...hashedFiles }, options.json);
}
