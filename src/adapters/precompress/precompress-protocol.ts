import type { SiblingSettings } from './sibling-settings.js';
import type { SiblingTally } from './release-siblings.js';

/** One release for the precompression thread: its directory, the user's store, a scratch directory on the same filesystem. */
export interface SiblingJob {
  readonly id: number;
  readonly release: string;
  readonly store: string;
  readonly scratch: string;
  /** While this file exists, the run waits between files: a deploy is running. */
  readonly pauseFile: string;
  readonly settings: SiblingSettings;
}

/** The thread's answer: what it did and the CPU time its thread spent on it, or why it failed. */
export type SiblingAnswer = { readonly id: number } & ({ readonly tally: SiblingTally; readonly cpuMs: number } | { readonly error: string });
