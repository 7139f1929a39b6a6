import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { WriterTasks } from '../threads/writer-tasks.js';

/**
 * Deletes what has been moved into DEPLOYS_ROOT/.trash, one tree at a time, in the
 * background. Moving a tree there is one rename, so retention and failed deploys answer
 * at once; deleting 5,000 files takes most of a second on a disk mounted with discard.
 * A crash leaves the trash for the next start-up to empty.
 */
export class TrashCollector {
  private queue: Promise<void> = Promise.resolve();
  /** Collections after a prune: in a line of their own, each once deploys are quiet. */
  private collections: Promise<void> = Promise.resolve();
  /** Stores whose collection is due and not yet begun: a later prune joins it. */
  private readonly due = new Set<string>();
  private readonly failures: string[] = [];

  constructor(
    private readonly trashRoot: string,
    /** Only names starting with this are this replica's to empty at start-up. */
    private readonly prefix: string,
    private readonly tasks: WriterTasks,
    /** Resolves when background work may take the writer (deploys quiet, or waited long enough). */
    private readonly quiet: () => Promise<void> = () => Promise.resolve(),
  ) {}

  /** Queues a tree that is already inside the trash root. */
  collect(path: string): void {
    this.enqueue(path, () => this.tasks.remove(path));
  }

  /** Queues the collection of a store's unlinked objects, after the removals before it. */
  collectObjects(store: string): void {
    this.enqueue(store, () => this.tasks.collectObjects(store));
  }

  /**
   * The collection a prune asks for: after the removals queued so far (they make the
   * garbage), and once deploys are quiet. It walks the whole store (with compressed
   * siblings, three entries per text file) and takes CPU a deploy's unpack needs; space
   * can wait. Prunes meanwhile join it: one walk for many.
   */
  collectObjectsWhenQuiet(store: string): void {
    if (this.due.has(store)) return;
    this.due.add(store);
    const collect = async () => {
      await this.quiet().catch(() => undefined);
      // A prune from here on asks for a collection of its own; those that joined this one
      // queued their removals before asking, so all are in the line awaited here.
      this.due.delete(store);
      await this.queue;
      await this.tasks.collectObjects(store).catch((error: unknown) => {
        this.failures.push(`${store}: ${(error as Error).message}`);
      });
    };
    this.collections = this.collections.then(collect, collect);
  }

  /** Queues the renaming of a store's objects still under their old names, after the work before it. */
  migrateObjectNames(store: string): void {
    this.enqueue(store, () => this.tasks.migrateObjectNames(store));
  }

  private enqueue(path: string, work: () => Promise<void>): void {
    this.queue = this.queue.then(() =>
      work().catch((error: unknown) => {
        this.failures.push(`${path}: ${(error as Error).message}`);
      }),
    );
  }

  /** Waits for everything queued so far, its failures kept for drain(). */
  async idle(): Promise<void> {
    await this.queue;
    await this.collections;
  }

  /** Waits for everything queued so far; returns (and forgets) what could not be deleted. */
  async drain(): Promise<string[]> {
    await this.queue;
    await this.collections;
    return this.failures.splice(0);
  }

  /** Empties whatever is in the trash now (a crash's leftovers); returns what it removed. */
  async emptyNow(): Promise<string[]> {
    await this.drain();
    const names = (await readdir(this.trashRoot)).filter((name) => name.startsWith(this.prefix));
    for (const name of names) await this.tasks.remove(join(this.trashRoot, name));
    return names.map((name) => join(this.trashRoot, name));
  }
}
