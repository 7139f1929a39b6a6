import { ArchiveRejected } from '../../../domain/errors.js';
import { BATCH_BYTES, OpBatcher } from '../threads/fs-ops.js';
import type { FailureKind, FromUnpacker, FromWriter, Outcome, StagingObjects, ToWriter } from '../threads/fs-protocol.js';
import { SendWindow } from '../threads/send-window.js';

/** Batches of operations a job has sent the writer and not yet seen carried out. */
const WRITER_WINDOW = 4;

/** Where a job's messages go: the main thread, and the writer thread. */
export interface JobChannels {
  toMain(message: FromUnpacker, transfer?: ArrayBuffer[]): void;
  toWriter(message: ToWriter, transfer?: ArrayBuffer[]): void;
}

/**
 * Where a job is. The inflated stream's first block must be a tar header before the
 * parser sees a byte; after tar's end marker the rest is only counted (the trailer
 * allowance); once the outcome is known the writer finishes (or abandons) the job's
 * batches, and only then is the main thread answered: nothing may still be writing into
 * a staging area being thrown away.
 */
export type Phase =
  | { name: 'head'; bytes: Buffer }
  | { name: 'entries' }
  | { name: 'trailer' }
  | { name: 'settling'; outcome: Outcome }
  | { name: 'answered' };

/**
 * A job's side of the writer: its batches of operations under one flow control, and
 * the ending every job shares. Once the outcome is known the writer finishes (or
 * abandons) the job's batches, and only then is the main thread answered: nothing may
 * still be writing into a staging area being thrown away.
 */
export abstract class WriterJob {
  protected phase: Phase;
  protected readonly writerWindow = new SendWindow(BATCH_BYTES, WRITER_WINDOW);
  protected readonly ops: OpBatcher;

  constructor(
    protected readonly channels: JobChannels,
    protected readonly id: number,
    root: string,
    objects: StagingObjects,
    chmod: boolean,
    first: Phase,
  ) {
    this.phase = first;
    this.channels.toWriter({ type: 'begin', job: id, root, objects, chmod });
    this.ops = new OpBatcher(
      () => this.writerWindow.buffer(),
      (batch) => {
        this.writerWindow.sent();
        this.channels.toWriter({ type: 'ops', job: id, data: batch }, [batch.buffer as ArrayBuffer]);
      },
    );
  }

  protected get reading(): boolean {
    return this.phase.name === 'head' || this.phase.name === 'entries' || this.phase.name === 'trailer';
  }

  fail(kind: FailureKind, message: string): void {
    if (!this.reading) return;
    this.stop();
    this.settle({ type: 'failed', job: this.id, kind, message });
  }

  private scheduled = false;

  /** Whether an object a LINK did not find fails the job (always, but for an assembly's first part). */
  protected get missingFails(): boolean {
    return true;
  }

  /** Stops the job's own input. */
  protected abstract stop(): void;
  /** Does as much of the job as the writer has room for. */
  protected abstract step(): void;

  /** Steps a turn later: the writer's acks, and other jobs, are heard in between. */
  protected resume(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.guard(() => this.step());
    });
  }

  protected settle(outcome: Outcome): void {
    this.phase = { name: 'settling', outcome };
    this.channels.toWriter({ type: 'flush', job: this.id });
  }

  fromWriter(message: FromWriter): void {
    if (message.type === 'ack') {
      this.writerWindow.answered(message.data.buffer);
      if (this.reading) this.resume();
    } else if (message.type === 'failed') {
      if (this.reading) this.fail('io', message.message);
      // A file that could not be closed fails a job that had otherwise succeeded; a job
      // already refused keeps its reason, which is what the client needs to hear.
      else if (this.phase.name === 'settling' && this.phase.outcome.type === 'done') {
        this.phase.outcome = { type: 'failed', job: this.id, kind: 'io', message: message.message };
      }
    } else if (this.phase.name === 'settling') {
      let { outcome } = this.phase;
      // Objects an assembly linked are gone (collected since the deploy was told it had
      // them): it must not be published, and the client uploads them again. The first
      // part of an assembly in two only says which: the second looks for them again.
      if (outcome.type === 'done' && message.missing.length > 0) {
        outcome = this.missingFails
          ? { type: 'failed', job: this.id, kind: 'missing', message: `${message.missing.length} objects missing`, missing: message.missing }
          : { ...outcome, missing: message.missing };
      }
      if (outcome.type === 'done' && message.adopt) outcome = { ...outcome, adopt: message.adopt };
      // No forced full collection here: it slows the next small deploy more than the
      // memory it frees is worth (docs/performance.md).
      this.channels.toMain(outcome, outcome.type === 'done' && outcome.adopt ? [outcome.adopt.buffer as ArrayBuffer] : undefined);
      this.phase = { name: 'answered' };
      const unused = this.ops.unused();
      if (unused) this.writerWindow.release(unused);
    }
  }

  get answered(): boolean {
    return this.phase.name === 'answered';
  }

  protected guard(work: () => void, after?: () => void): void {
    try {
      work();
    } catch (error) {
      if (error instanceof ArchiveRejected) this.fail('rejected', error.reason);
      else this.fail('io', (error as Error).message);
      after?.();
    }
  }
}
