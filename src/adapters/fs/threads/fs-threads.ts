import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker, type WorkerOptions } from 'node:worker_threads';
import type { ServiceIdentifier } from 'inversify';
import type { FromUnpacker, ThreadData, ToUnpacker, WriterTaskAnswer, WriterTaskRequest } from './fs-protocol.js';

/**
 * Worker threads need JavaScript. Under vitest this module runs from src/*.ts, so it
 * uses the compiled scripts that `npm test` builds first.
 */
export function script(name: string): string {
  const here = fileURLToPath(new URL(`./${name}.js`, import.meta.url));
  if (existsSync(here)) return here;
  const built = here.replace(/([\\/])src([\\/])adapters([\\/])/, '$1dist$2adapters$3');
  if (existsSync(built)) return built;
  throw new Error(`${name} not found at ${here} or ${built}: run npm run build`);
}

export const FS_THREADS = Symbol.for('sitedrop.FsThreads') as ServiceIdentifier<FsThreads>;

/** One deploy's conversation with the unpack thread. */
export interface UnpackJob {
  post(message: ToUnpacker, transfer?: ArrayBuffer[]): void;
  /** Stops listening; the job's answer, if any is still to come, is dropped. */
  close(): void;
}

/** Starts a worker thread; tests pass one that keeps hold of the threads it starts. */
export type StartThread = (script: string, options: WorkerOptions) => Worker;

export interface FsThreadsOptions {
  /**
   * The unpack thread's heap: every deploy unpacking at once keeps its archive's
   * ledger (each path seen) there, and running out ends the thread, failing every one
   * of them. `unpackHeapMb()` sizes it from the settings.
   */
  readonly unpackHeapMb?: number;
  readonly start?: StartThread;
  /**
   * Called once no deploy has used the threads for `idleMs`: returns the memory their
   * jobs freed to the system (heap-trim.ts), so the next deploy's peak does not stack on it.
   */
  readonly whenIdle?: () => Promise<unknown>;
  readonly idleMs?: number;
}

/**
 * Room for DEPLOYS_MAX_CONCURRENT archives of MAX_FILES entries each, at up to about
 * 1.2 KiB of ledger per entry (a 1,000-byte path; docs/performance.md),
 * above the thread's own 64 MiB; never less than 256 MiB.
 */
export function unpackHeapMb(concurrent: number, maxFiles: number): number {
  return Math.max(256, 64 + concurrent * Math.ceil((maxFiles * 1.2) / 1024));
}

interface Threads {
  readonly unpacker: Worker;
  readonly writer: Worker;
}

/** Who hears the writer's answers to tasks (writer-tasks.ts), and of the threads stopping. */
export interface WriterListener {
  answered(message: WriterTaskAnswer): void;
  /** The threads stopped: every task in hand is lost. */
  stopped(error: Error): void;
}

/**
 * The supervisor of the two threads that do the release tree's bulk work for the whole
 * process: the unpack thread (unpack-thread.ts) and the writer thread (writer-thread.ts),
 * joined by a channel of their own. Deploys share them, each a job with its own id, so a
 * deploy running beside another costs its buffers rather than two more isolates; tasks
 * reach the writer through WriterTasks. If either thread stops, both are ended,
 * everything in hand fails, and the next use starts two new ones.
 */
export class FsThreads {
  private threads: Threads | undefined;
  private nextId = 1;
  private readonly jobs = new Map<number, (message: FromUnpacker) => void>();
  private writerListener: WriterListener | undefined;
  private readonly unpackerScript = script('../unpack/unpack-thread');
  private readonly writerScript = script('../write/writer-thread');

  private closed = false;
  private readonly start: StartThread;
  private readonly unpackHeap: number;
  private readonly whenIdle: (() => Promise<unknown>) | undefined;
  private readonly idleMs: number;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(options: FsThreadsOptions = {}) {
    this.start = options.start ?? ((path, workerOptions) => new Worker(path, workerOptions));
    this.unpackHeap = options.unpackHeapMb ?? 256;
    this.whenIdle = options.whenIdle;
    this.idleMs = options.idleMs ?? 1000;
  }

  /** Starts the threads now, so the first deploy does not wait for them. */
  warmUp(): void {
    this.running();
  }

  openJob(onMessage: (message: FromUnpacker) => void): UnpackJob & { readonly id: number } {
    const threads = this.running();
    const id = this.nextId++;
    this.jobs.set(id, onMessage);
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    return {
      id,
      post: (message, transfer) => {
        // A job whose threads have stopped has already been told; there is no one to post to.
        if (this.threads === threads) threads.unpacker.postMessage(message, transfer);
      },
      close: () => {
        if (this.jobs.delete(id) && this.jobs.size === 0) this.idleSoon();
      },
    };
  }

  /** Once the last job has ended and no other has begun for `idleMs`, calls `whenIdle`. */
  private idleSoon(): void {
    if (!this.whenIdle || this.closed) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.jobs.size === 0) this.whenIdle?.().catch(() => undefined);
    }, this.idleMs);
    // A service with nothing else to do may stop meanwhile.
    this.idleTimer.unref();
  }

  /** Where the writer's answers go: one listener, the process's WriterTasks. */
  listenToWriter(listener: WriterListener): void {
    this.writerListener = listener;
  }

  /** Posts a task to the writer thread, starting the threads if need be (which throws once closed). */
  postToWriter(request: WriterTaskRequest, transfer?: ArrayBuffer[]): void {
    this.running().writer.postMessage(request, transfer);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.idleTimer);
    const threads = this.threads;
    if (!threads) return;
    this.stopped(threads, new Error('the file-system threads were closed'));
    await Promise.all([threads.unpacker.terminate(), threads.writer.terminate()]);
  }

  private running(): Threads {
    if (this.threads) return this.threads;
    // Nothing may start threads that no one will end.
    if (this.closed) throw new Error('the file-system threads were closed');
    const { port1, port2 } = new MessageChannel();
    // A small young generation keeps the per-entry garbage of big archives collected early.
    const unpacker = this.start(this.unpackerScript, {
      workerData: { peer: port1 } satisfies ThreadData,
      transferList: [port1],
      resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: this.unpackHeap },
    });
    let writer: Worker;
    try {
      // A limit, not a use: listing a directory of 200,000 entries takes some 65 MiB.
      writer = this.start(this.writerScript, {
        workerData: { peer: port2 } satisfies ThreadData,
        transferList: [port2],
        resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 256 },
      });
    } catch (error) {
      void unpacker.terminate();
      throw error;
    }
    const threads = { unpacker, writer };
    unpacker.on('message', (message: FromUnpacker) => this.jobs.get(message.job)?.(message));
    writer.on('message', (message: WriterTaskAnswer) => this.writerListener?.answered(message));
    for (const worker of [unpacker, writer]) {
      worker.on('error', (error: Error) => this.stopped(threads, error));
      worker.on('exit', (code: number) => this.stopped(threads, new Error(`a file-system thread stopped (exit code ${code})`)));
    }
    this.threads = threads;
    return threads;
  }

  /** Fails everything the stopped threads had in hand; the next use starts new ones. */
  private stopped(threads: Threads, error: Error): void {
    if (this.threads !== threads) return;
    this.threads = undefined;
    void threads.unpacker.terminate();
    void threads.writer.terminate();
    const jobs = [...this.jobs];
    this.jobs.clear();
    for (const [job, onMessage] of jobs) onMessage({ type: 'failed', job, kind: 'io', message: error.message });
    this.writerListener?.stopped(error);
  }
}
