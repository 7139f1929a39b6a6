import type { WriterTaskKind, WriterTaskResults } from '../threads/fs-protocol.js';

/**
 * One piece of work the writer does for the main thread (a removal, a store walk, a
 * probe...), a step at a time between the jobs' batches of writes, so that no deploy
 * waits for more than one step of it.
 */
export interface WriterTask<K extends WriterTaskKind = WriterTaskKind> {
  /** Entries one step handles before the writer hears its other messages. */
  readonly budget: number;
  /** Handles up to `budget` entries; true once the task is done. */
  step(budget: number): boolean;
  /** The task's answer, once it is done. */
  result(): WriterTaskResults[K];
}

/** Budget of a task that changes the tree: an unlink or a rename per entry. */
export const CHANGE_BUDGET = 256;
/** Budget of a task that only looks: an lstat costs a tenth of an unlink. */
export const LOOKUP_BUDGET = 4096;
