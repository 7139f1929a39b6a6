import { manifestDifference } from '../../domain/manifest-digest.js';
import { ServerError, type ApiClient, type DeploySession, type DeployTarget, type Json, type ManifestBody } from './api-client.js';
import type { ManifestFile } from '../../domain/manifest.js';
import type { SiteFolder } from './folder-manifest.js';
import type { CachedManifest } from './manifest-cache.js';
import { batchObjects, packObjects, type MissingObject } from './object-batches.js';
import { metered, type Meter } from './progress.js';

/** What a deploy sent and what it did not need to: printed, and added to --json's answer. */
export interface DeployCounts {
  readonly mode: 'incremental' | 'full';
  /** Files whose bytes went to the server (paths: one object may serve several). */
  readonly sentFiles: number;
  /** Bytes uploaded, each object once per upload (an object lost and sent again counts twice). */
  readonly sentBytes: number;
  /** Files the server already had the bytes of: totalFiles - sentFiles. */
  readonly skippedFiles: number;
  readonly totalFiles: number;
  readonly totalBytes: number;
  /** Files read and hashed; the others had not changed since the last deploy from this machine. Absent when nothing was hashed (--full). */
  readonly hashedFiles?: number;
}

/** The server has no incremental protocol (an older sitedrop): the caller sends a tarball instead. */
export class ProtocolAbsent extends Error {}

/**
 * The server has no place for another session of this signer (429: DEPLOY_SESSIONS_MAX
 * open, perhaps left by pipelines cut off in flight), or no room under the user's quota
 * for what it would upload beside the other open sessions' (507): a tarball needs no
 * session, so the deploy goes on as one rather than failing or waiting. Its publish meets
 * the quota on kept releases as any deploy does.
 */
export class SessionsBusy extends Error {}

/**
 * Most of the site is new to the server (a first deploy): one tarball is faster, since
 * the server unpacks it straight into the release, where objects are unpacked, kept
 * with the session and linked again at the publish (docs/performance.md). The tarball's
 * files join the store as well, so the next deploy is incremental.
 */
export class MostlyNew extends Error {}

/**
 * Above this share of the site's files missing, and this many, the tarball goes instead.
 * Below a thousand new files the difference is a fraction of a second.
 */
const MOSTLY_NEW = { share: 0.5, files: 1000 };

export interface Conversation {
  /** Aborts the manifest or an upload under way (not a publish); the session is then deleted. */
  readonly signal?: AbortSignal;
  readonly sending: (objects: number, bytes: number) => Meter;
  readonly notice: (line: string) => void;
  /** A release of the project whose files this machine knows (the last it published): the manifest is sent relative to it. */
  readonly base?: CachedManifest;
  /** A session opened on `base` before the folder was read (ApiClient.openOnBase). */
  readonly early?: Promise<EarlySession>;
  /** The server would not start from `base`: it is not to be offered again. */
  readonly baseRefused?: () => Promise<void>;
  /** A publish was asked for: the caller's own work may go on while the server does it. */
  readonly publishing?: () => void;
}

/**
 * What opening on the base alone came to: a session; the server's 409 (it will not start
 * from that base); or undefined, for anything else, which the open that follows meets again.
 */
export type EarlySession = DeploySession | ServerError | undefined;

/** Publishes that may each find objects gone (collected between the manifest and the publish) before the deploy gives up. */
const PUBLISH_ATTEMPTS = 4;

/** The server's 409 for a base it no longer has: a session that holds an unchanged base by name meets it at its publish too. */
const BASE_GONE = 'base release not found or changed: send the whole manifest';

/** The objects behind `digests`, one path each (a digest many paths share is sent once), in the folder's order. */
function objectsFor(files: readonly ManifestFile[], digests: readonly string[]): MissingObject[] {
  const wanted = new Set(digests);
  const objects: MissingObject[] = [];
  for (const file of files) {
    if (!wanted.delete(file.digest)) continue;
    objects.push({ digest: file.digest, size: file.size, path: file.path });
  }
  if (wanted.size > 0) throw new ServerError(0, `the server asked for ${wanted.size} object(s) the manifest does not list, e.g. ${[...wanted][0]}`);
  return objects;
}

/**
 * Sends the batches one request at a time. The next batch is packed while one is sent
 * and answered (into a bounded buffer); the meter counts file bytes of the batch being
 * sent, not of the one packed ahead.
 */
async function upload(api: ApiClient, id: string, root: string, objects: readonly MissingObject[], meter: Meter, signal?: AbortSignal): Promise<void> {
  const batches = batchObjects(objects);
  const packed = batches.map(() => 0);
  let current = 0;
  let finished = 0;
  const pack = (index: number) =>
    packObjects(root, batches[index]!, (bytes) => {
      packed[index] = bytes;
      if (index === current) meter.update(finished + bytes);
    });
  let ahead = batches.length > 0 ? pack(0) : undefined;
  try {
    for (; current < batches.length; current++) {
      const body = ahead!;
      meter.update(finished + packed[current]!);
      ahead = current + 1 < batches.length ? pack(current + 1) : undefined;
      await api.uploadObjects(id, body, signal);
      finished += batches[current]!.reduce((sum, object) => sum + object.size, 0);
    }
  } finally {
    ahead?.destroy();
  }
}

/**
 * The manifest relative to `base` (only the entries added or changed, and the paths
 * removed), or undefined when that is no shorter than the whole: the server's limit on a
 * manifest's size is one site's worth of entries.
 */
function relativeTo(base: CachedManifest, files: readonly ManifestFile[]): ManifestBody | undefined {
  const difference = manifestDifference(base.files, files);
  if (difference.files.length + difference.removed.length >= files.length) return undefined;
  return { base: { release: base.release, digest: base.digest }, ...difference };
}

/** An older server takes a difference for the whole site: the session must hold the site the files make. */
function holdsSite(session: DeploySession, files: readonly ManifestFile[]): boolean {
  return session.files === files.length && session.bytes === files.reduce((sum, file) => sum + file.size, 0);
}

/** Says why the whole manifest goes after all. */
function refused(conversation: Conversation, error: ServerError): 'refused' {
  conversation.notice(`the server refused the changes since release ${conversation.base?.release ?? '?'} (${error.message}): sending the whole manifest`);
  return 'refused';
}

/**
 * The session opened on the base, given the site as it is (the difference, or the whole
 * when that is shorter). 'refused': the server will not start from the base (409, or 400
 * for a difference it refuses); 'unknown': no such session, or a server that cannot take
 * a manifest again. Either way the session is deleted, and the caller opens as it would
 * have without it.
 */
async function reviseEarly(api: ApiClient, early: EarlySession, body: ManifestBody, files: readonly ManifestFile[], conversation: Conversation): Promise<DeploySession | 'refused' | 'unknown'> {
  if (early === undefined) return 'unknown';
  if (early instanceof ServerError) return refused(conversation, early);
  let outcome: DeploySession | 'refused' | 'unknown' = 'unknown';
  try {
    const session = await api.reviseDeploy(early.id, body, conversation.signal);
    if (holdsSite(session, files)) return session;
  } catch (error) {
    if (!(error instanceof ServerError && [400, 404, 405, 409].includes(error.status))) {
      await api.deleteDeploy(early.id).catch(() => undefined);
      throw error;
    }
    // A 400 is the base's only for a relative manifest: a whole one refused is the open's to meet again.
    if (error.status === 409 || (error.status === 400 && body.base !== undefined)) outcome = refused(conversation, error);
  }
  // Best effort: an unanswered session expires anyway.
  await api.deleteDeploy(early.id).catch(() => undefined);
  return outcome;
}

/**
 * Opens the session, with a manifest relative to the last release this machine published
 * when there is one. Whatever stops the server from taking that (the release pruned,
 * another machine's deploy since, a cache gone wrong, a server that predates `base` and
 * would take the difference for the whole site) costs one more request with the whole
 * manifest, never the deploy.
 */
async function openSession(api: ApiClient, target: DeployTarget, files: readonly ManifestFile[], conversation: Conversation): Promise<DeploySession> {
  const { base, signal } = conversation;
  const relative = base && relativeTo(base, files);
  const revised = await reviseEarly(api, await conversation.early, relative ?? { files }, files, conversation);
  if (typeof revised === 'object') return revised;
  if (revised === 'refused') await conversation.baseRefused?.();
  if (relative && revised !== 'refused') {
    try {
      const session = await api.openDeploy(target, relative, signal);
      if (holdsSite(session, files)) return session;
      await api.deleteDeploy(session.id).catch(() => undefined);
      conversation.notice('the server took the changes for the whole site (it predates relative manifests): sending the whole manifest');
    } catch (error) {
      // 409: not a base the server has; 400: a difference it refuses (a cache gone wrong, or
      // an older server's "no files" for an unchanged site): the whole manifest says all.
      if (!(error instanceof ServerError && (error.status === 409 || error.status === 400))) throw error;
      refused(conversation, error);
    }
    await conversation.baseRefused?.();
  }
  return api.openDeploy(target, { files }, signal);
}

/**
 * The incremental protocol's conversation: the manifest, then only the objects the server
 * lacks, then the publish (again, with what it lost, if objects went meanwhile). Any
 * failure once the session is open deletes it, so nothing waits on the server for expiry.
 */
export async function deployIncrementally(
  api: ApiClient,
  target: DeployTarget,
  folder: SiteFolder,
  files: readonly ManifestFile[],
  conversation: Conversation,
): Promise<{ answer: Json; counts: DeployCounts }> {
  const { signal } = conversation;
  const session = await openSession(api, target, files, conversation).catch((error: unknown) => {
    if (error instanceof ServerError && (error.status === 404 || error.status === 405)) throw new ProtocolAbsent(`the server answered ${error.status} to POST /api/v1/deploys`);
    if (error instanceof ServerError && error.status === 429) throw new SessionsBusy(`the server has no room for another deploy session (${error.message})`);
    if (error instanceof ServerError && error.status === 507) throw new SessionsBusy(`the server has no room under the quota for this deploy's uploads beside other open deploys' (${error.message})`);
    throw error;
  });
  const sent = new Set<string>();
  let sentBytes = 0;
  try {
    let missing = session.missing;
    const wanted = new Set(missing);
    const newFiles = files.filter((file) => wanted.has(file.digest)).length;
    if (newFiles > files.length * MOSTLY_NEW.share && newFiles > MOSTLY_NEW.files) throw new MostlyNew(`${newFiles} of ${files.length} files are new to the server`);
    for (let attempt = 1; ; attempt++) {
      const objects = objectsFor(files, missing);
      if (objects.length > 0) {
        const bytes = objects.reduce((sum, object) => sum + object.size, 0);
        const meter = conversation.sending(objects.length, bytes);
        await metered(meter, () => upload(api, session.id, folder.root, objects, meter, signal));
        for (const object of objects) sent.add(object.digest);
        sentBytes += bytes;
      }
      signal?.throwIfAborted();
      try {
        // Not abortable once asked: a publish is short, and only its answer says whether the site changed.
        const publish = api.publishDeploy(session.id);
        conversation.publishing?.();
        const answer = await publish;
        const totalBytes = files.reduce((sum, file) => sum + file.size, 0);
        const sentFiles = files.filter((file) => sent.has(file.digest)).length;
        return { answer, counts: { mode: 'incremental', sentFiles, sentBytes, skippedFiles: files.length - sentFiles, totalFiles: files.length, totalBytes } };
      } catch (error) {
        if (error instanceof ServerError && error.status === 409 && error.message === BASE_GONE && attempt < PUBLISH_ATTEMPTS) {
          // Nothing changed since the base, and the base has gone since the difference: the whole manifest says all.
          refused(conversation, error);
          await conversation.baseRefused?.();
          missing = (await api.reviseDeploy(session.id, { files }, signal)).missing;
          continue;
        }
        const lost = error instanceof ServerError && error.status === 409 && Array.isArray(error.body.missing) ? (error.body.missing as string[]) : [];
        if (lost.length === 0 || attempt === PUBLISH_ATTEMPTS) throw error;
        conversation.notice(`the server is missing ${lost.length} of the files at the publish; sending them and publishing again`);
        missing = lost;
      }
    }
  } catch (error) {
    // Best effort: the deploy has failed already, and an unanswered session expires anyway.
    await api.deleteDeploy(session.id).catch(() => undefined);
    throw error;
  }
}
