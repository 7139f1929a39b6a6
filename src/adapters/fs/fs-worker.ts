/**
 * Unpacks one archive at a time, or deletes one tree, off the main thread: inflates,
 * parses and checks every entry against the archive policy here, and hands the
 * directories and files to create to a writer thread of its own (fs-writer.ts), which
 * makes them with synchronous calls, one syscall each, with no thread-pool round trip
 * per entry (node-tar's own extractor makes several, and was 10.9x GNU tar). Neither
 * thread is the HTTP event loop. docs/performance.md has the figures.
 */
import { rmSync } from 'node:fs';
import { parentPort, Worker } from 'node:worker_threads';
import { createGunzip, type Gunzip } from 'node:zlib';
import { Header, Parser, Pax, type ReadEntry } from 'tar';
import {
  ArchiveLedger,
  assertNoDotDot,
  assertNotAfterLoneZeroBlock,
  assertPaxKeys,
  assertTarStart,
  entryKind,
  InflatedStream,
  normaliseEntryPath,
  paxKeys,
  refuseIgnoredEntry,
  TAR_BLOCK,
  unreadable,
  type ArchiveLimits,
} from '../../domain/archive-policy.js';
import { ArchiveRejected } from '../../domain/errors.js';
import { BATCH_BYTES, OpBatcher } from './fs-ops.js';
import type { FailureKind, FromWorker, ToWorker } from './fs-protocol.js';
import type { FromWriter, ToWriter } from './fs-writer.js';
import { YoungGarbage } from './garbage.js';

/** Batches of operations sent to the writer and not yet carried out; bounds memory per deploy. */
const MAX_BATCHES_IN_FLIGHT = 4;
/** Inflated bytes waiting to be unpacked before zlib is paused. */
const QUEUE_LIMIT = 2 * 1024 * 1024;
/** zlib's output buffers, once written out, are collected every this many bytes. */
const garbage = new YoungGarbage(4 * 1024 * 1024);

/**
 * node-tar applies a PAX `path` record to the header object itself, so the name in the
 * header block is lost by the time an entry is seen. The policy checks that name too
 * (another tool would use it), so keep it: this worker is its own isolate, and the
 * wrapper only records, it changes nothing node-tar decodes.
 */
const RAW_NAME = Symbol('rawName');
type HeaderWithRawName = Header & { [RAW_NAME]?: string };
const decode = Header.prototype.decode;
Header.prototype.decode = function (this: HeaderWithRawName, buf: Buffer, off: number, ex?: unknown, gex?: unknown): void {
  decode.call(this, buf, off, ex as never, gex as never);
  const field = (start: number, length: number) => {
    const bytes = buf.subarray(off + start, off + start + length);
    const end = bytes.indexOf(0);
    return bytes.subarray(0, end === -1 ? length : end).toString('utf8');
  };
  const isUstar = buf.subarray(off + 257, off + 265).toString('latin1') === 'ustar\u000000';
  const prefix = isUstar ? field(345, 155) : '';
  this[RAW_NAME] = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
};

/**
 * node-tar keeps only the pax keys it applies, and reads records line by line; the
 * policy needs every key, read by length as tar reads them (GNU.sparse.* records, a
 * record hidden in another's value). The keys, or why they cannot be read, ride on the
 * parsed header and are checked with the entry they apply to.
 */
const PAX_KEYS = Symbol('paxKeys');
type PaxWithKeys = Pax & { [PAX_KEYS]?: string[] | ArchiveRejected };
const parsePax = Pax.parse.bind(Pax);
Pax.parse = (text: string, ex?: Pax, global?: boolean): Pax => {
  const pax: PaxWithKeys = parsePax(text, ex, global);
  const before = (ex as PaxWithKeys | undefined)?.[PAX_KEYS] ?? [];
  try {
    pax[PAX_KEYS] = before instanceof ArchiveRejected ? before : [...before, ...paxKeys(text)];
  } catch (error) {
    pax[PAX_KEYS] = error as ArchiveRejected;
  }
  return pax;
};

function checkPax(pax: PaxWithKeys | undefined, global: boolean, rawPath: string): void {
  const keys = pax?.[PAX_KEYS];
  if (keys instanceof ArchiveRejected) throw keys;
  if (keys) assertPaxKeys(keys, global, rawPath);
}

const port = parentPort;
if (!port) throw new Error('fs-worker must run as a worker thread');
const send = (message: FromWorker, transfer?: ArrayBuffer[]): void => port.postMessage(message, transfer);
/** Hands a chunk's buffer back to the main thread, which fills it with the next one. */
const ack = (job: number, data: Uint8Array): void => send({ type: 'ack', job, data }, [data.buffer as ArrayBuffer]);

// This thread parses and checks; the writer thread creates the files (fs-writer.ts).
const writer = new Worker(new URL('./fs-writer.js', import.meta.url), { resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 64 } });
const toWriter = (message: ToWriter, transfer?: ArrayBuffer[]): void => writer.postMessage(message, transfer);
/** Batch buffers go to the writer and come back with its acks, to be filled again. */
const spareBatches: Uint8Array[] = [];

class Job {
  private readonly ledger: ArchiveLedger;
  private readonly inflatedStream: InflatedStream;
  private readonly gunzip: Gunzip;
  private readonly parser: Parser;
  /** The inflated stream's first bytes, held until a whole tar block can be checked. */
  private head: Buffer | undefined = Buffer.alloc(0);
  private tarEnded = false;
  private sawZeroBlock = false;
  private readonly ops: OpBatcher;
  private batchesInFlight = 0;
  /** The answer to send once the writer has dealt with every batch. */
  private outcome: Extract<FromWorker, { type: 'done' | 'failed' }> | undefined;
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  private scheduled = false;
  private inflateEnded = false;
  finished = false;

  constructor(
    private readonly id: number,
    root: string,
    limits: ArchiveLimits,
    chmod: boolean,
  ) {
    this.ledger = new ArchiveLedger(limits);
    toWriter({ type: 'begin', job: id, root, chmod });
    this.ops = new OpBatcher(
      () => spareBatches.pop() ?? new Uint8Array(BATCH_BYTES),
      (batch) => {
        this.batchesInFlight += 1;
        toWriter({ type: 'ops', job: id, data: batch }, [batch.buffer as ArrayBuffer]);
      },
    );
    this.inflatedStream = new InflatedStream(limits);
    this.gunzip = createGunzip({ chunkSize: 256 * 1024 });
    // No decompression of its own (assertTarStart makes sure it never sniffs one either).
    this.parser = new Parser({ strict: false, zstd: false, brotli: false });
    this.gunzip.on('data', (chunk: Buffer) => this.queueInflated(chunk));
    this.gunzip.on('error', (error: Error) => this.fail('rejected', unreadable('gzip', error.message).reason));
    this.gunzip.on('end', () => {
      this.inflateEnded = true;
      this.schedule();
    });
    this.parser.on('entry', (entry: ReadEntry) => this.guard(() => this.entry(entry), () => entry.resume()));
    this.parser.on('ignoredEntry', (entry: ReadEntry) => this.guard(() => refuseIgnoredEntry(entry.type, entry.path, entry.meta)));
    this.parser.on('warn', (_code: string, message: string) => this.fail('rejected', unreadable('tar', message).reason));
    this.parser.on('error', (error: Error) => this.fail('rejected', unreadable('tar', error.message).reason));
    this.parser.on('nullBlock', () => {
      this.sawZeroBlock = true;
    });
    this.parser.on('eof', () => {
      this.tarEnded = true;
    });
    this.parser.on('end', () => this.guard(() => this.complete()));
  }

  write(data: Uint8Array): void {
    if (this.finished) {
      ack(this.id, data);
      return;
    }
    this.gunzip.write(data, () => ack(this.id, data));
  }

  end(): void {
    if (!this.finished) this.gunzip.end();
  }

  fail(kind: FailureKind, message: string): void {
    if (this.finished) return;
    this.finished = true;
    this.gunzip.destroy();
    this.finishWith({ type: 'failed', job: this.id, kind, message });
  }

  /** Answers only once the writer is idle: nothing may still be writing into a release being thrown away. */
  private finishWith(outcome: NonNullable<Job['outcome']>): void {
    this.outcome = outcome;
    toWriter({ type: 'flush', job: this.id });
  }

  fromWriter(message: FromWriter): void {
    if (message.type === 'ack') {
      this.batchesInFlight -= 1;
      if (!this.finished) this.schedule();
    } else if (message.type === 'failed') {
      if (!this.finished) this.fail('io', message.message);
      else if (this.outcome?.type === 'done') this.outcome = { type: 'failed', job: this.id, kind: 'io', message: message.message };
    } else if (this.outcome) {
      // No forced full collection here: run after every archive, it made each next
      // small deploy about 20 ms slower for 3 MiB less peak (docs/performance.md).
      send(this.outcome);
      this.outcome = undefined;
    }
  }

  /** The writer thread died: no flush will come, so answer now; the pool discards this worker. */
  writerCrashed(error: Error): void {
    const outcome = this.outcome ?? (this.finished ? undefined : { type: 'failed' as const, job: this.id, kind: 'io' as const, message: error.message });
    this.finished = true;
    this.outcome = undefined;
    if (outcome) send(outcome.type === 'done' ? { type: 'failed', job: this.id, kind: 'io', message: error.message } : outcome);
  }

  /**
   * zlib inflates on the thread pool, but it starts the next block only once this
   * thread has taken the last one. Taking the block and unpacking it a turn later lets
   * the next block inflate while this one is written, as gzip and tar do in a pipe.
   */
  private queueInflated(chunk: Buffer): void {
    this.queue.push(chunk);
    this.queuedBytes += chunk.length;
    if (this.queuedBytes >= QUEUE_LIMIT) this.gunzip.pause();
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.guard(() => this.drain());
    });
  }

  private drain(): void {
    // The writer's acks call this again when it has caught up.
    for (let chunk = this.queue.shift(); chunk; chunk = this.queue.shift()) {
      if (this.batchesInFlight >= MAX_BATCHES_IN_FLIGHT) {
        this.queue.unshift(chunk);
        return;
      }
      this.queuedBytes -= chunk.length;
      this.inflated(chunk);
      if (this.finished) return;
    }
    if (this.inflateEnded) {
      this.inflateEnded = false;
      // A stream shorter than one block never reached the check.
      if (this.head) this.checkHead(true);
      this.parser.end();
    } else if (this.gunzip.isPaused()) this.gunzip.resume();
  }

  private guard(work: () => void, after?: () => void): void {
    try {
      work();
    } catch (error) {
      if (error instanceof ArchiveRejected) this.fail('rejected', error.reason);
      else this.fail('io', (error as Error).message);
      after?.();
    }
  }

  private inflated(chunk: Buffer): void {
    if (this.finished) return;
    garbage.dropped(chunk.length);
    this.inflatedStream.take(chunk.length, this.tarEnded);
    if (this.tarEnded) return;
    if (this.head) {
      this.head = Buffer.concat([this.head, chunk]);
      this.checkHead(false);
      return;
    }
    this.parser.write(chunk);
  }

  /** Nothing reaches the parser before its first block is known to be tar. */
  private checkHead(ended: boolean): void {
    const head = this.head;
    if (!head || (head.length < TAR_BLOCK && !ended)) return;
    assertTarStart(head.subarray(0, TAR_BLOCK));
    this.head = undefined;
    this.parser.write(head);
  }

  private entry(entry: ReadEntry): void {
    if (this.finished) {
      entry.resume();
      return;
    }
    assertNotAfterLoneZeroBlock(this.sawZeroBlock, entry.path);
    // The header block's own name too: a PAX path record may have replaced it.
    assertNoDotDot((entry.header as HeaderWithRawName)[RAW_NAME] ?? '');
    checkPax(entry.extended, false, entry.path);
    checkPax(entry.globalExtended, true, entry.path);
    const kind = entryKind(entry.type, entry.path);
    const path = normaliseEntryPath(entry.path);
    const newDirs = this.ledger.admit(kind, path, kind === 'file' ? entry.size : 0);
    for (const dir of newDirs) this.ops.mkdir(dir);
    if (kind === 'directory') {
      entry.resume();
      return;
    }
    this.ops.create(path);
    entry.on('data', this.onFileData);
    entry.on('end', this.onFileEnd);
  }

  // One pair of handlers for every file, not two closures per entry. node-tar ends each
  // entry before it starts the next, so the writer's one open file is this entry's.
  private readonly onFileData = (chunk: Buffer): void => {
    if (!this.finished) this.ops.write(chunk);
  };

  private readonly onFileEnd = (): void => {
    if (!this.finished) this.ops.close();
  };

  private complete(): void {
    if (this.finished) return;
    this.ledger.assertComplete();
    this.finished = true;
    this.ops.flush();
    this.finishWith({ type: 'done', job: this.id, files: this.ledger.files, entries: this.ledger.entries, bytes: this.ledger.bytes });
  }
}

let current: Job | undefined;
let currentId = -1;

writer.on('message', (message: FromWriter) => {
  if (message.type === 'ack') spareBatches.push(new Uint8Array(message.data.buffer));
  if (current && message.job === currentId) current.fromWriter(message);
});
// Without its writer this worker can do nothing: answer the job in hand, then end, so
// that the pool's users see the worker fail and the pool replaces it.
writer.on('exit', (code: number) => {
  const error = new Error(`the writer thread stopped (exit code ${code})`);
  current?.writerCrashed(error);
  setImmediate(() => {
    throw error;
  });
});

port.on('message', (message: ToWorker) => {
  if (message.type === 'remove') {
    try {
      rmSync(message.path, { recursive: true, force: true });
      send({ type: 'removed', job: message.job });
    } catch (error) {
      send({ type: 'removed', job: message.job, error: (error as Error).message });
    }
    return;
  }
  if (message.type === 'begin') {
    currentId = message.job;
    current = new Job(message.job, message.dir, message.limits, message.chmod);
    return;
  }
  if (message.job !== currentId || !current) return;
  if (message.type === 'chunk') current.write(message.data);
  else if (message.type === 'end') current.end();
  else current.fail('aborted', 'deploy aborted');
});
