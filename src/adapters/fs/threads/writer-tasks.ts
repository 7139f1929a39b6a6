import type { ServiceIdentifier } from 'inversify';
import { PackedManifest } from '../../../domain/packed-manifest.js';
import type { Probed, WriterTaskAnswer, WriterTaskKind, WriterTaskRequest, WriterTaskResults } from './fs-protocol.js';
import type { FsThreads, WriterListener } from './fs-threads.js';

export const WRITER_TASKS = Symbol.for('sitedrop.WriterTasks') as ServiceIdentifier<WriterTasks>;

type Request<K extends WriterTaskKind> = Omit<Extract<WriterTaskRequest, { type: K }>, 'id'> & { type: K };

interface Waiting {
  readonly request: Omit<WriterTaskRequest, 'id'>;
  resolve(result: WriterTaskResults[WriterTaskKind] | undefined): void;
  reject(error: Error): void;
}

/**
 * The main thread's client of the writer's tasks (task-queue.ts): each is one message
 * there and one answer back, whatever its size, run between the deploys' batches.
 */
export class WriterTasks implements WriterListener {
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();

  constructor(private readonly threads: FsThreads) {
    threads.listenToWriter(this);
  }

  /** rm -rf `path`, on the writer thread, between the batches of any deploys under way. */
  async remove(path: string): Promise<void> {
    await this.run({ type: 'remove', path });
  }

  /** Deletes the objects of the store at `path` that no release links (store-objects.ts). */
  async collectObjects(path: string): Promise<void> {
    await this.run({ type: 'collect', path });
  }

  /** Renames the objects of the store at `path` still under their old names (object-names.ts, store-migration.ts). */
  async migrateObjectNames(path: string): Promise<void> {
    await this.run({ type: 'migrate', path });
  }

  /** Moves a checked batch's objects (`from`, a directory of shards) into its session's uploads (`into`). */
  async adoptObjects(from: string, into: string): Promise<void> {
    await this.run({ type: 'adopt', path: from, into });
  }

  /** Links a published release's new objects (`objects`, write/new-objects.ts packed, whose buffer moves to the writer) into the user's store. */
  async adoptReleaseObjects(release: string, store: string, objects: Uint8Array): Promise<void> {
    await this.run({ type: 'adopt-release', path: release, into: store, objects }, [objects.buffer as ArrayBuffer]);
  }

  /**
   * Which of `objects` (digest to size) neither `store` nor `uploads` (if any) holds, and which they hold at another size;
   * with `within` (sorted inode lists), the store answers only for objects whose inode one of them holds (object-probe.ts, ObjectProbe).
   */
  probeObjects(store: string, uploads: string | undefined, objects: ReadonlyMap<string, number>, within?: readonly Float64Array[]): Promise<Probed> {
    return this.run({ type: 'probe', path: store, uploads, objects, ...(within && { within }) });
  }

  /** The inode numbers of the files of the release at `release`, sorted; undefined if there is no such release. */
  async releaseInodes(release: string): Promise<Float64Array | undefined> {
    const inodes = await this.run({ type: 'inodes', path: release });
    return inodes === 'gone' ? undefined : inodes;
  }

  /** Links into the uploads `into` what the uploads `from` hold of `objects` (digest to size); returns the digests linked. */
  shareUploads(from: string, into: string, objects: ReadonlyMap<string, number>): Promise<string[]> {
    return this.run({ type: 'share', path: from, into, objects });
  }

  /**
   * The manifest of the release at `release`, whose files link into `store`; undefined if
   * there is no such release. From `records` if they are its own (kept-manifest-file.ts), else walked.
   */
  async releaseManifest(release: string, store: string, records?: string): Promise<PackedManifest | undefined> {
    const listed = await this.run({ type: 'manifest', path: release, store, ...(records && { records }) });
    return listed === 'gone' ? undefined : PackedManifest.from(listed);
  }

  private run<K extends WriterTaskKind>(request: Request<K>, transfer?: ArrayBuffer[]): Promise<WriterTaskResults[K]> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      try {
        this.threads.postToWriter({ ...request, id } as WriterTaskRequest, transfer);
      } catch (error) {
        // A rejection, not a throw: the trash collector's queue must go on after it.
        reject(error as Error);
        return;
      }
      this.waiting.set(id, { request, resolve: resolve as Waiting['resolve'], reject });
    });
  }

  answered(message: WriterTaskAnswer): void {
    const waiting = this.waiting.get(message.id);
    this.waiting.delete(message.id);
    if (!waiting) return;
    if (message.error === undefined) waiting.resolve(message.result);
    else waiting.reject(new Error(`the writer's ${waiting.request.type} task on ${waiting.request.path}: ${message.error}`));
  }

  stopped(error: Error): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const { reject } of waiting) reject(error);
  }
}
