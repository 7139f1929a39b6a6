/**
 * Creates archives' directories and files from batches of operations (fs-ops.ts), on a
 * thread of its own, while the unpack thread parses the next entries: per entry, the
 * parsing and the system calls each cost about as much, so doing them side by side
 * roughly halves the time of a site of many small files (docs/performance.md). One
 * writer serves every deploy (each job has its own root and open file) and deletes the
 * trees the main thread sends it, a few entries at a time between batches.
 */
import { closeSync, constants, fchmodSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { PUBLISHED_DIRECTORY_MODE, PUBLISHED_FILE_MODE } from '../../domain/archive-policy.js';
import { OP_CLOSE, OP_CREATE, OP_MKDIR, OP_WRITE } from './fs-ops.js';
import type { FromWriter, RemoveRequest, Removed, ThreadData, ToWriter } from './fs-protocol.js';
import { TreeRemoval } from './tree-removal.js';

/** O_CREAT|O_EXCL: never follows a link or truncates anything already there. */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;
/** Entries a removal deletes before the writer looks at its messages again. */
const REMOVAL_STEP = 256;

if (!parentPort) throw new Error('the writer must run as a worker thread');
const main = parentPort;
const unpacker = (workerData as ThreadData).peer;
const toUnpacker = (message: FromWriter, transfer?: ArrayBuffer[]): void => unpacker.postMessage(message, transfer);
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** One archive being written. */
class Target {
  private openFd: number | undefined;
  failed = false;

  constructor(
    private readonly root: string,
    /** The umask would strip the published modes: set them explicitly. */
    private readonly chmod: boolean,
  ) {}

  apply(batch: Uint8Array): void {
    const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
    let at = 0;
    while (at < batch.length) {
      const op = batch[at]!;
      if (op === OP_MKDIR || op === OP_CREATE) {
        const length = view.getUint16(at + 1);
        const path = `${this.root}/${utf8.decode(batch.subarray(at + 3, at + 3 + length))}`;
        at += 3 + length;
        if (op === OP_MKDIR) this.mkdir(path);
        else this.create(path);
      } else if (op === OP_WRITE) {
        const length = view.getUint32(at + 1);
        if (this.openFd === undefined) throw new Error('file data arrived with no file open');
        writeFully(this.openFd, batch.subarray(at + 5, at + 5 + length));
        at += 5 + length;
      } else if (op === OP_CLOSE) {
        this.close();
        at += 1;
      } else {
        throw new Error(`unknown file-system operation ${op}`);
      }
    }
  }

  close(): void {
    const fd = this.openFd;
    this.openFd = undefined;
    if (fd !== undefined) closeSync(fd);
  }

  private mkdir(path: string): void {
    mkdirSync(path, PUBLISHED_DIRECTORY_MODE);
    if (!this.chmod) return;
    const fd = openSync(path, 'r');
    try {
      fchmodSync(fd, PUBLISHED_DIRECTORY_MODE);
    } finally {
      closeSync(fd);
    }
  }

  private create(path: string): void {
    if (this.openFd !== undefined) throw new Error('a file was created while another was open');
    this.openFd = openSync(path, CREATE_NEW, PUBLISHED_FILE_MODE);
    if (this.chmod) fchmodSync(this.openFd, PUBLISHED_FILE_MODE);
  }
}

function writeFully(fd: number, data: Uint8Array): void {
  let offset = 0;
  while (offset < data.length) offset += writeSync(fd, data, offset, data.length - offset);
}

const targets = new Map<number, Target>();

unpacker.on('message', (message: ToWriter) => {
  if (message.type === 'begin') {
    targets.set(message.job, new Target(message.root, message.chmod));
    return;
  }
  const target = targets.get(message.job);
  if (message.type === 'flush') {
    targets.delete(message.job);
    try {
      target?.close();
    } catch (error) {
      if (!target!.failed) toUnpacker({ type: 'failed', job: message.job, message: (error as Error).message });
    }
    toUnpacker({ type: 'flushed', job: message.job });
    return;
  }
  if (target && !target.failed) {
    try {
      target.apply(message.data);
    } catch (error) {
      target.failed = true;
      try {
        target.close();
      } catch {
        // The first failure is the one worth reporting.
      }
      toUnpacker({ type: 'failed', job: message.job, message: (error as Error).message });
    }
  }
  toUnpacker({ type: 'ack', job: message.job, data: message.data }, [message.data.buffer as ArrayBuffer]);
});

/** Removals in the order asked, the first one in progress. */
const removals: { id: number; removal: TreeRemoval }[] = [];
let removing = false;

function removeSome(): void {
  const current = removals[0];
  if (!current) {
    removing = false;
    return;
  }
  let answer: Removed | undefined;
  try {
    if (current.removal.step(REMOVAL_STEP)) answer = { type: 'removed', id: current.id };
  } catch (error) {
    answer = { type: 'removed', id: current.id, error: (error as Error).message };
  }
  if (answer) {
    removals.shift();
    main.postMessage(answer);
  }
  // The unpack thread's batches, queued meanwhile, are handled before the next step.
  setImmediate(removeSome);
}

main.on('message', (message: RemoveRequest) => {
  removals.push({ id: message.id, removal: new TreeRemoval(message.path) });
  if (!removing) {
    removing = true;
    setImmediate(removeSome);
  }
});
