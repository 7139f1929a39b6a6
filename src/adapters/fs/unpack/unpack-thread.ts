/**
 * Unpacks archives off the main thread: inflates, parses and checks every entry against
 * the archive policy here, and hands the directories and files to create to the writer
 * thread (writer-thread.ts), which makes them with synchronous calls, one syscall each,
 * with no thread-pool round trip per entry (node-tar's own extractor makes several, and
 * was 10.9x GNU tar). One unpack thread serves every deploy at once, each its own Job:
 * a second deploy costs its buffers, not another two isolates (16 MiB).
 * docs/performance.md has the figures.
 */
import { createHash, hash, type Hash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { createGunzip, type Gunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { ArchiveLedger, ImpliedDirectories } from '../../../domain/archive-ledger.js';
import { checkEntry, refuseIgnoredEntry, type ArchiveLimits } from '../../../domain/archive-policy.js';
import { assertTarStart, InflatedStream, parserWarning, TAR_BLOCK, unreadable } from '../../../domain/archive-stream.js';
import { ArchiveRejected } from '../../../domain/errors.js';
import { assertExpectedObject, assertObjectBytes } from '../../../domain/object-batch.js';
import { PackedManifest, type PackedFile } from '../../../domain/packed-manifest.js';
import { BATCH_BYTES, OpBatcher, SMALL_FILE_BYTES } from '../threads/fs-ops.js';
import type { AssemblyPart, FailureKind, FromUnpacker, FromWriter, Outcome, StagingObjects, ThreadData, ToUnpacker, ToWriter } from '../threads/fs-protocol.js';
import { YoungGarbage } from '../threads/garbage.js';
import { SendWindow } from '../threads/send-window.js';
import { globalPaxFacts, headerName, paxFacts } from './tar-patches.js';
import { lowerThisThreadsPriority } from '../threads/thread-priority.js';

/** Batches of operations a job has sent the writer and not yet seen carried out. */
const WRITER_WINDOW = 4;
/**
 * Inflated bytes a job holds waiting to be unpacked before its zlib is paused. Each
 * queued slice pins zlib's 256 KiB output block: at 2 MiB, two deploys unpacking at once
 * held some 10 MiB of them at the service's peak (heaptrack); 1 MiB is still four blocks ahead.
 */
const QUEUE_LIMIT = 1024 * 1024;
/** zlib's output buffers, once written out, are collected every this many bytes. */
const garbage = new YoungGarbage(4 * 1024 * 1024);

if (!parentPort) throw new Error('the unpack thread must run as a worker thread');
const main = parentPort;
lowerThisThreadsPriority();
const toMain = (message: FromUnpacker, transfer?: ArrayBuffer[]): void => main.postMessage(message, transfer);
const writer = (workerData as ThreadData).peer;
const toWriter = (message: ToWriter, transfer?: ArrayBuffer[]): void => writer.postMessage(message, transfer);

/**
 * Where a job is. The inflated stream's first block must be a tar header before the
 * parser sees a byte; after tar's end marker the rest is only counted (the trailer
 * allowance); once the outcome is known the writer finishes (or abandons) the job's
 * batches, and only then is the main thread answered: nothing may still be writing into
 * a staging area being thrown away.
 */
type Phase =
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
abstract class WriterJob {
  protected phase: Phase;
  protected readonly toWriter = new SendWindow(BATCH_BYTES, WRITER_WINDOW);
  protected readonly ops: OpBatcher;

  constructor(
    protected readonly id: number,
    root: string,
    objects: StagingObjects,
    chmod: boolean,
    first: Phase,
  ) {
    this.phase = first;
    toWriter({ type: 'begin', job: id, root, objects, chmod });
    this.ops = new OpBatcher(
      () => this.toWriter.buffer(),
      (batch) => {
        this.toWriter.sent();
        toWriter({ type: 'ops', job: id, data: batch }, [batch.buffer as ArrayBuffer]);
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
    toWriter({ type: 'flush', job: this.id });
  }

  fromWriter(message: FromWriter): void {
    if (message.type === 'ack') {
      this.toWriter.answered(message.data.buffer);
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
      // No forced full collection here: run after every archive, it made each next
      // small deploy about 20 ms slower for 3 MiB less peak (docs/performance.md).
      toMain(outcome);
      this.phase = { name: 'answered' };
      const unused = this.ops.unused();
      if (unused) this.toWriter.release(unused);
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

/** An archive (a site, or an incremental deploy's batch of objects) unpacked into a directory. */
class Job extends WriterJob {
  private readonly ledger: ArchiveLedger;
  private readonly inflatedStream: InflatedStream;
  private readonly gunzip: Gunzip;
  private readonly parser: Parser;
  private sawZeroBlock = false;
  /** Inflated chunks not yet parsed: zlib inflates the next while this thread parses these. */
  private readonly inflated: Buffer[] = [];
  private inflatedBytes = 0;
  private inflateEnded = false;
  /**
   * The file being unpacked: a small one is held whole until its end, to be sent with
   * its digest in one PUT; a larger one streams, hashed as it goes.
   */
  private file: { path: string; chunks: Buffer[] } | { path: string; hash: Hash } | undefined;

  constructor(
    id: number,
    root: string,
    objects: StagingObjects,
    limits: ArchiveLimits,
    chmod: boolean,
    /** Set for a batch of objects: the manifest each entry must be an object of (assertExpectedObject). */
    private readonly expect: PackedManifest | undefined,
  ) {
    super(id, root, objects, chmod, { name: 'head', bytes: Buffer.alloc(0) });
    this.ledger = new ArchiveLedger(limits);
    this.inflatedStream = new InflatedStream(limits);
    this.gunzip = createGunzip({ chunkSize: 256 * 1024 });
    // No decompression of its own (assertTarStart makes sure it never sniffs one either).
    this.parser = new Parser({ strict: false, zstd: false, brotli: false });
    this.gunzip.on('data', (chunk: Buffer) => this.queueInflated(chunk));
    this.gunzip.on('error', (error: Error) => this.fail('rejected', unreadable('gzip', error.message).reason));
    this.gunzip.on('end', () => {
      this.inflateEnded = true;
      this.resume();
    });
    this.parser.on('entry', (entry: ReadEntry) => this.guard(() => this.entry(entry), () => entry.resume()));
    this.parser.on('ignoredEntry', (entry: ReadEntry) => this.guard(() => refuseIgnoredEntry(entry.type, entry.path, entry.meta)));
    this.parser.on('warn', (_code: string, message: string) => this.fail('rejected', parserWarning(message).reason));
    this.parser.on('error', (error: Error) => this.fail('rejected', unreadable('tar', error.message).reason));
    this.parser.on('nullBlock', () => (this.sawZeroBlock = true));
    this.parser.on('eof', () => {
      if (this.phase.name === 'entries') this.phase = { name: 'trailer' };
    });
    this.parser.on('end', () => this.guard(() => this.complete()));
  }

  write(data: Uint8Array): void {
    const ack = (): void => toMain({ type: 'ack', job: this.id, data }, [data.buffer as ArrayBuffer]);
    if (this.reading) this.gunzip.write(data, ack);
    else ack();
  }

  end(): void {
    if (this.reading) this.gunzip.end();
  }

  protected stop(): void {
    this.gunzip.destroy();
  }


  /**
   * zlib inflates on the thread pool, but it starts the next block only once this
   * thread has taken the last one. Taking the block and unpacking it a turn later lets
   * the next block inflate while this one is written, as gzip and tar do in a pipe.
   */
  private queueInflated(chunk: Buffer): void {
    this.inflated.push(chunk);
    this.inflatedBytes += chunk.length;
    if (this.inflatedBytes >= QUEUE_LIMIT) this.gunzip.pause();
    this.resume();
  }

  protected step(): void {
    // The writer's acks call this again when it has caught up.
    while (this.reading && this.inflated.length > 0 && !this.toWriter.full) {
      const chunk = this.inflated.shift()!;
      this.inflatedBytes -= chunk.length;
      this.unpack(chunk);
    }
    if (!this.reading || this.inflated.length > 0) return;
    if (this.inflateEnded) {
      this.inflateEnded = false;
      // A stream shorter than one block never reached the check.
      if (this.phase.name === 'head') this.checkHead(this.phase.bytes, true);
      this.parser.end();
    } else if (this.gunzip.isPaused()) this.gunzip.resume();
  }

  private unpack(chunk: Buffer): void {
    garbage.dropped(chunk.length);
    this.inflatedStream.take(chunk.length, this.phase.name === 'trailer');
    if (this.phase.name === 'head') this.checkHead(Buffer.concat([this.phase.bytes, chunk]), false);
    else if (this.phase.name === 'entries') this.parser.write(chunk);
  }

  /** Nothing reaches the parser before its first block is known to be tar. */
  private checkHead(head: Buffer, ended: boolean): void {
    if (head.length < TAR_BLOCK && !ended) {
      this.phase = { name: 'head', bytes: head };
      return;
    }
    assertTarStart(head.subarray(0, TAR_BLOCK));
    this.phase = { name: 'entries' };
    this.parser.write(head);
  }

  private entry(entry: ReadEntry): void {
    if (!this.reading) {
      entry.resume();
      return;
    }
    const { kind, path } = checkEntry({
      tarType: entry.type,
      path: entry.path,
      headerName: headerName(entry),
      afterZeroBlock: this.sawZeroBlock,
      pax: paxFacts(entry),
      globalPax: globalPaxFacts(entry),
    });
    if (this.expect) assertExpectedObject(this.expect, kind, path, entry.size);
    const newDirs = this.ledger.admit(kind, path, kind === 'file' ? entry.size : 0);
    for (const dir of newDirs) this.ops.mkdir(dir);
    if (kind === 'directory') {
      entry.resume();
      return;
    }
    if (entry.size <= SMALL_FILE_BYTES) {
      this.file = { path, chunks: [] };
    } else {
      this.file = { path, hash: createHash('sha256') };
      this.ops.create(path);
    }
    entry.on('data', this.onFileData);
    entry.on('end', this.onFileEnd);
  }

  // One pair of handlers for every file, not two closures per entry. node-tar ends each
  // entry before it starts the next, so the writer's one open file is this entry's.
  private readonly onFileData = (chunk: Buffer): void => {
    if (!this.reading || !this.file) return;
    if ('chunks' in this.file) {
      this.file.chunks.push(chunk);
    } else {
      this.file.hash.update(chunk);
      this.ops.write(chunk);
    }
  };

  private readonly onFileEnd = (): void => {
    const file = this.file;
    this.file = undefined;
    if (!this.reading || !file) return;
    this.guard(() => {
      if ('chunks' in file) {
        const bytes = file.chunks.length === 1 ? file.chunks[0]! : Buffer.concat(file.chunks);
        const digest = hash('sha256', bytes, 'buffer');
        if (this.expect) assertObjectBytes(file.path, digest.toString('hex'));
        this.ops.put(file.path, digest, bytes);
      } else {
        const digest = file.hash.digest();
        if (this.expect) assertObjectBytes(file.path, digest.toString('hex'));
        this.ops.close(digest);
      }
    });
  };

  private complete(): void {
    if (!this.reading) return;
    this.ledger.assertComplete();
    this.ops.flush();
    this.settle({ type: 'done', job: this.id, files: this.ledger.files, entries: this.ledger.entries, bytes: this.ledger.bytes });
  }
}

/**
 * A release built from objects the user already has (an incremental deploy's publish):
 * the directories its paths imply, then a LINK per file, a few batches at a time as
 * the writer keeps up; or one part of that (AssemblyPart). The manifest was checked when
 * the session opened.
 */
class Assembly extends WriterJob {
  private readonly files: Iterator<PackedFile>;
  private left: number;
  private readonly dirs = new ImpliedDirectories();
  /** The files and bytes this assembly (or its part) made: as an archive's ledger counts them. */
  private readonly made = { files: 0, bytes: 0 };

  constructor(
    id: number,
    root: string,
    objects: StagingObjects,
    chmod: boolean,
    manifest: PackedManifest,
    private readonly part: AssemblyPart | undefined,
    /** By object index, 1: an object a deploy key's session may take only from its uploads. */
    private readonly uploadsOnly: Uint8Array | undefined,
  ) {
    super(id, root, objects, chmod, { name: 'entries' });
    this.files = manifest.files();
    this.left = manifest.fileCount;
    this.resume();
  }

  protected override get missingFails(): boolean {
    return this.part?.kind !== 'ahead';
  }

  private build(file: PackedFile): void {
    const part = this.part;
    if (part?.kind === 'rest') {
      // The directories and the empty files were made ahead.
      if (file.object !== undefined && part.wanted[file.object] === 1) this.ops.link(file.path, file.digest, this.uploadsOnly?.[file.object] === 1);
      return;
    }
    for (const dir of this.dirs.missingParents(file.path)) this.ops.mkdir(dir);
    this.made.files += 1;
    this.made.bytes += file.size;
    if (file.object === undefined) this.ops.put(file.path, file.digest, EMPTY);
    else if (part?.deferred[file.object] !== 1) this.ops.link(file.path, file.digest, this.uploadsOnly?.[file.object] === 1);
  }

  protected stop(): void {
    this.left = 0;
  }

  protected step(): void {
    while (this.reading && this.left > 0 && !this.toWriter.full) {
      // About one batch of operations, then the writer's answer brings this back.
      for (let batch = 2048; batch > 0 && this.left > 0; batch -= 1, this.left -= 1) {
        this.build(this.files.next().value as PackedFile);
      }
    }
    if (!this.reading || this.left > 0) return;
    this.ops.flush();
    const { files, bytes } = this.made;
    this.settle({ type: 'done', job: this.id, files, entries: files + this.dirs.count, bytes });
  }
}

const EMPTY = new Uint8Array(0);
const jobs = new Map<number, Job | Assembly>();

writer.on('message', (message: FromWriter) => {
  const job = jobs.get(message.job);
  if (!job) return;
  job.fromWriter(message);
  if (job.answered) jobs.delete(message.job);
});
main.on('message', (message: ToUnpacker) => {
  if (message.type === 'begin') {
    jobs.set(message.job, new Job(message.job, message.dir, message.objects, message.limits, message.chmod, message.expect && PackedManifest.from(message.expect)));
    return;
  }
  if (message.type === 'assemble') {
    jobs.set(message.job, new Assembly(message.job, message.dir, message.objects, message.chmod, PackedManifest.from(message.manifest), message.part, message.uploadsOnly));
    return;
  }
  const job = jobs.get(message.job);
  if (!job) {
    // A job already answered still owes the sender its buffer back.
    if (message.type === 'chunk') toMain({ type: 'ack', job: message.job, data: message.data }, [message.data.buffer as ArrayBuffer]);
    return;
  }
  if (message.type === 'chunk' && job instanceof Job) job.write(message.data);
  else if (message.type === 'end' && job instanceof Job) job.end();
  else if (message.type === 'abort') job.fail('aborted', 'deploy aborted');
});
