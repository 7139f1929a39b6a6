import type { ArchiveLimits } from '../../domain/archive-policy.js';

/** Messages between the main thread (ArchiveExtractor, removeTree) and fs-worker; `job` pairs them up. */
export type ToWorker =
  | { type: 'begin'; job: number; dir: string; limits: ArchiveLimits; chmod: boolean }
  | { type: 'chunk'; job: number; data: Uint8Array }
  | { type: 'end'; job: number }
  | { type: 'abort'; job: number }
  | { type: 'remove'; job: number; path: string };

export type FailureKind = 'rejected' | 'io' | 'aborted';

export type FromWorker =
  /** A chunk was taken; its buffer comes back to be filled again. */
  | { type: 'ack'; job: number; data: Uint8Array }
  | { type: 'done'; job: number; files: number; entries: number; bytes: number }
  | { type: 'failed'; job: number; kind: FailureKind; message: string }
  | { type: 'removed'; job: number; error?: string };
