import type { MessagePort } from 'node:worker_threads';
import type { ArchiveLimits } from '../../../domain/archive-policy.js';

/**
 * The messages between the three threads of the unpack path. The main thread
 * (FsThreads) starts one unpack thread and one writer thread for the whole process and
 * joins them with a channel of their own; every message names the job it belongs to,
 * so any number of deploys share the two threads. Buffers travel with `chunk` and `ops`
 * and come back with their `ack` (send-window.ts).
 *
 *   main ──begin/chunk/end/abort──▶ unpack ──begin/ops/flush──▶ writer ◀──task──── main
 *   main ◀──ack/done/failed─────── unpack ◀──ack/failed/flushed── writer ──answer──▶ main
 */
export type ToUnpacker =
  | { type: 'begin'; job: number; dir: string; objects: StagingObjects; limits: ArchiveLimits; chmod: boolean; expect?: PackedBytes }
  /**
   * Builds a release in `dir` from objects the user has: an incremental deploy's publish,
   * whole or in two parts. `uploadsOnly`: flags by object index (PackedManifest.objectIndex),
   * 1 for an object a deploy key's session may take only from its uploads, never the store.
   */
  | { type: 'assemble'; job: number; dir: string; objects: StagingObjects; manifest: PackedBytes; chmod: boolean; part?: AssemblyPart; uploadsOnly?: Uint8Array }
  | { type: 'chunk'; job: number; data: Uint8Array }
  /** The canonical digest of a manifest (PackedManifest.canonicalDigest), worked out off the main thread. */
  | { type: 'digest'; job: number; manifest: PackedBytes }
  | { type: 'end'; job: number }
  | { type: 'abort'; job: number };

/**
 * An assembly in two parts, the first while the session's objects upload (a publish
 * prepared, node-staging.ts). Flags by object index (PackedManifest.objectIndex), 1 for yes.
 * `ahead`: every directory, every empty file, and a link for each file whose object is not
 * `deferred`; an object not found is answered in `missing` rather than failing. `rest`: a
 * link for each file whose object is `wanted`, into the directories `ahead` made.
 * `amend`: the area holds the release `from` whole (an `ahead` of it with nothing deferred
 * or missing); it is changed into `ahead` of the manifest: the files `from` has at another
 * digest or not at all are unlinked, its directories the manifest does not imply removed,
 * and the manifest's other files made as `ahead` makes them.
 */
export type AssemblyPart =
  | { readonly kind: 'ahead'; readonly deferred: Uint8Array }
  | { readonly kind: 'rest'; readonly wanted: Uint8Array }
  | { readonly kind: 'amend'; readonly from: PackedBytes; readonly deferred: Uint8Array };

export type FailureKind = 'rejected' | 'io' | 'aborted' | 'missing';

export type Outcome =
  /** `missing`: only from an assembly's `ahead` part, the objects it did not find. */
  | { type: 'done'; job: number; files: number; bytes: number; missing?: string[]; adopt?: Uint8Array }
  /** `missing`: the objects an assembly could not find (kind 'missing'). */
  | { type: 'failed'; job: number; kind: FailureKind; message: string; missing?: string[] };

/**
 * A session's manifest as PackedManifest.packed holds it: bytes in shared memory, which a
 * message hands over without a copy, not 40,000 objects cloned into the thread. As `expect`, the upload is a batch
 * of objects rather than a site: every entry must be a file at the root named by the
 * SHA-256 of its bytes, one of the manifest's digests, of its size there.
 */
export type PackedBytes = Uint8Array;

export type FromUnpacker = { type: 'ack'; job: number; data: Uint8Array } | { type: 'digest'; job: number; digest: string } | Outcome;

/** Whether `message` ends its job's work (an archive's or an assembly's). */
export const isOutcome = (message: FromUnpacker): message is Outcome => message.type === 'done' || message.type === 'failed';

export type ToWriter =
  | { type: 'begin'; job: number; root: string; objects: StagingObjects; chmod: boolean }
  | { type: 'ops'; job: number; data: Uint8Array }
  /** The job is over: close its open file and forget it, then answer `flushed`. */
  | { type: 'flush'; job: number };

export type FromWriter =
  /** A batch was carried out (or skipped after a failure); its buffer comes back. */
  | { type: 'ack'; job: number; data: Uint8Array }
  | { type: 'failed'; job: number; message: string }
  /** Every batch of the job sent before its flush has been dealt with; `missing`, objects LINK did not find. */
  | { type: 'flushed'; job: number; missing: string[]; adopt?: Uint8Array };

/**
 * Where a staging job's files find bytes to share (docs/content-store.md), and what the
 * files it writes are. An assembly writes none but empty files, which are no objects.
 */
/** The file in a session's uploads that names the boot they were written in (staging/upload-trust.ts). */
export const UPLOADS_MARK = '.boot';

export interface StagingObjects {
  /** The user's store, only read while staging. None for an upload's batch: what a session uploads is kept as its own. */
  readonly store?: string;
  /** The job's own directory beside its staging area, for the temporary links of a rename(2) over a file. */
  readonly fresh: string;
  /**
   * An incremental deploy's uploaded objects, kept with its session until it publishes:
   * an assembly links those it holds from here, and lists them (the flush's `adopt`) for
   * the store to adopt from the release after the publish.
   */
  readonly uploads?: string;
  /**
   * This machine's boot (staging/upload-trust.ts): an assembly links the uploads as they
   * are if their mark (UPLOADS_MARK), read once it has listed them, is this boot;
   * otherwise it reads and hashes each once before a file links it.
   */
  readonly boot?: string;
  /**
   * `release`, a tarball's job: its new objects stay where the release has them, and the
   * flush lists them (`adopt`) for the store to adopt after the publish, off the deploy's
   * critical path. `objects`, an upload's batch (set by the unpack thread): each file is
   * written under its object's name and is that object; nothing is shared or listed.
   */
  readonly writes?: 'release' | 'objects';
}

/**
 * A task the main thread asks of the writer, which interleaves it with the jobs' writes
 * a step at a time (writer-task.ts): rm -rf of a tree (`remove`), the collection of a
 * store's objects that no release links (`collect`), the renaming of a store's objects
 * still under their old names (`migrate`), the move of a batch's objects (`path`) into
 * its session's uploads (`into`),
 * a probe of a store, a release's manifest or inodes, or
 * the sharing of one session's uploads with another.
 */
export type WriterTaskRequest =
  | { type: 'remove'; id: number; path: string }
  | { type: 'collect'; id: number; path: string }
  | { type: 'migrate'; id: number; path: string }
  | { type: 'adopt'; id: number; path: string; into: string }
  /** Links a published release's new objects (`objects`, NewObjects packed) from the release at `path` into the store `into`. */
  | { type: 'adopt-release'; id: number; path: string; into: string; objects: Uint8Array }
  /**
   * Which of `objects` (digest to size) neither the store at `path` nor `uploads` holds, and which they hold at another size.
   * With `within` (sorted inode lists), the store answers only for objects whose inode one of them holds (object-probe.ts, ObjectProbe).
   */
  | { type: 'probe'; id: number; path: string; uploads: string | undefined; objects: ReadonlyMap<string, number>; within?: readonly Float64Array[] }
  /**
   * The manifest of the release at `path`, whose files link into the store `store`
   * (release-manifest.ts); from `records` (a tarball writer's, kept-manifest-file.ts) if
   * they are this release's and whole, else walked.
   */
  | { type: 'manifest'; id: number; path: string; store: string; records?: string }
  /** The inode numbers of the files of the release at `path` (release-inodes.ts). */
  | { type: 'inodes'; id: number; path: string }
  /** Links into the uploads `into` those of the uploads at `path` that are among `objects` (digest to size), at their size. */
  | { type: 'share'; id: number; path: string; into: string; objects: ReadonlyMap<string, number> };

/**
 * What each kind of task answers. `manifest` and `inodes`: 'gone' when there is no such
 * release (inodes sorted); `share`: the digests it linked.
 */
export interface WriterTaskResults {
  remove: undefined;
  collect: undefined;
  migrate: undefined;
  adopt: undefined;
  'adopt-release': undefined;
  probe: Probed;
  /** PackedManifest.packed */
  manifest: Uint8Array | 'gone';
  inodes: Float64Array | 'gone';
  share: string[];
}

export type WriterTaskKind = WriterTaskRequest['type'];

/** A task's end: its result, or why it failed. */
export type WriterTaskAnswer = { type: 'answer'; id: number; error?: string; result?: WriterTaskResults[WriterTaskKind] };
export type Probed = { missing: string[]; wrongSize: string[] };

/** Each thread's workerData: its end of the channel between the unpack and writer threads. */
export type ThreadData = { peer: MessagePort };
