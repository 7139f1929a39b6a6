import { createHash, hash, type Hash } from 'node:crypto';
import { createGunzip, type Gunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { ArchiveLedger } from '../../../domain/archive-ledger.js';
import { checkEntry, refuseIgnoredEntry, type ArchiveLimits } from '../../../domain/archive-policy.js';
import { assertTarStart, InflatedStream, parserWarning, TAR_BLOCK, unreadable } from '../../../domain/archive-stream.js';
import { assertExpectedObject, assertObjectBytes } from '../../../domain/object-batch.js';
import type { PackedManifest } from '../../../domain/packed-manifest.js';
import { SMALL_FILE_BYTES } from '../threads/fs-ops.js';
import type { StagingObjects } from '../threads/fs-protocol.js';
import { objectPath } from '../store/object-names.js';
import { YoungGarbage } from '../threads/garbage.js';
import { globalPaxFacts, headerName, paxFacts } from './tar-patches.js';
import { WriterJob, type JobChannels } from './writer-job.js';

/**
 * Inflated bytes a job holds waiting to be unpacked before its zlib is paused. Each
 * queued slice pins zlib's 256 KiB output block, so a larger queue is peak memory held;
 * 1 MiB is still four blocks ahead (docs/performance.md).
 */
const QUEUE_LIMIT = 1024 * 1024;
/** zlib's output buffers, once written out, are collected every this many bytes. */
const garbage = new YoungGarbage(4 * 1024 * 1024);

/** An archive (a site, or an incremental deploy's batch of objects) unpacked into a directory. */
export class ArchiveJob extends WriterJob {
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
  private file: { path: string; at: string; chunks: Buffer[] } | { path: string; at: string; hash: Hash } | undefined;
  /** A batch's shards made so far: each of its files is written under its object's name (`<shard>/<name>`). */
  private readonly shards = new Set<string>();

  constructor(
    channels: JobChannels,
    id: number,
    root: string,
    objects: StagingObjects,
    limits: ArchiveLimits,
    chmod: boolean,
    /** Set for a batch of objects: the manifest each entry must be an object of (assertExpectedObject). */
    private readonly expect: PackedManifest | undefined,
  ) {
    // A batch's files are written as the objects they are (objectAt): its entries alone are known to be named by digests.
    super(channels, id, root, expect ? { ...objects, writes: 'objects' } : objects, chmod, { name: 'head', bytes: Buffer.alloc(0) });
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
    const ack = (): void => this.channels.toMain({ type: 'ack', job: this.id, data }, [data.buffer as ArrayBuffer]);
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
    while (this.reading && this.inflated.length > 0 && !this.writerWindow.full) {
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
    const at = this.expect ? this.objectAt(path) : path;
    if (entry.size <= SMALL_FILE_BYTES) {
      this.file = { path, at, chunks: [] };
    } else {
      this.file = { path, at, hash: createHash('sha256') };
      this.ops.create(at);
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
        this.ops.put(file.at, digest, bytes);
      } else {
        const digest = file.hash.digest();
        if (this.expect) assertObjectBytes(file.path, digest.toString('hex'));
        this.ops.close(digest);
      }
    });
  };

  /**
   * Where a batch's object `name` (its hex digest, checked) is written: under the name the
   * store gives it, so that the file written is the object: moved into the session's
   * uploads, linked into the release, and from there into the store, never copied.
   */
  private objectAt(name: string): string {
    const at = objectPath(name);
    const shard = at.slice(0, at.indexOf('/'));
    if (!this.shards.has(shard)) {
      this.shards.add(shard);
      this.ops.mkdir(shard);
    }
    return at;
  }

  private complete(): void {
    if (!this.reading) return;
    this.ledger.assertComplete();
    this.ops.flush();
    this.settle({ type: 'done', job: this.id, files: this.ledger.files, bytes: this.ledger.bytes });
  }
}
