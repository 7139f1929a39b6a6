/**
 * Creates an archive's directories and files from batches of operations (fs-ops.ts),
 * on a thread of its own, while fs-worker parses the next entries: per entry, the
 * parsing and the system calls each cost about as much, so doing them side by side
 * roughly halves the time of a site of many small files (docs/performance.md).
 */
import { closeSync, constants, fchmodSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { OP_CLOSE, OP_CREATE, OP_MKDIR, OP_WRITE } from './fs-ops.js';

export type ToWriter =
  | { type: 'begin'; job: number; root: string; chmod: boolean }
  | { type: 'ops'; job: number; data: Uint8Array }
  | { type: 'flush'; job: number };

export type FromWriter =
  /** A batch was carried out (or skipped after a failure); its buffer comes back. */
  | { type: 'ack'; job: number; data: Uint8Array }
  | { type: 'failed'; job: number; message: string }
  /** Every batch sent before the flush has been dealt with. */
  | { type: 'flushed'; job: number };

/** O_CREAT|O_EXCL: never follows a link or truncates anything already there. */
const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;

const port = parentPort;
if (!port) throw new Error('fs-writer must run as a worker thread');
const send = (message: FromWriter, transfer?: ArrayBuffer[]): void => port.postMessage(message, transfer);
const utf8 = new TextDecoder('utf-8', { fatal: true });

let job = -1;
let root = '';
let chmod = false;
let openFd: number | undefined;
let failed = false;

function closeOpen(): void {
  const fd = openFd;
  openFd = undefined;
  if (fd !== undefined) closeSync(fd);
}

function apply(batch: Uint8Array): void {
  const view = new DataView(batch.buffer, batch.byteOffset, batch.byteLength);
  let at = 0;
  while (at < batch.length) {
    const op = batch[at]!;
    if (op === OP_MKDIR || op === OP_CREATE) {
      const length = view.getUint16(at + 1);
      const path = `${root}/${utf8.decode(batch.subarray(at + 3, at + 3 + length))}`;
      at += 3 + length;
      if (op === OP_MKDIR) {
        mkdirSync(path, 0o755);
        if (chmod) chmodDirectory(path);
      } else {
        if (openFd !== undefined) throw new Error('a file was created while another was open');
        openFd = openSync(path, CREATE_NEW, 0o644);
        if (chmod) fchmodSync(openFd, 0o644);
      }
    } else if (op === OP_WRITE) {
      const length = view.getUint32(at + 1);
      if (openFd === undefined) throw new Error('file data arrived with no file open');
      writeFully(openFd, batch.subarray(at + 5, at + 5 + length));
      at += 5 + length;
    } else if (op === OP_CLOSE) {
      closeOpen();
      at += 1;
    } else {
      throw new Error(`unknown file-system operation ${op}`);
    }
  }
}

function writeFully(fd: number, data: Uint8Array): void {
  let offset = 0;
  while (offset < data.length) offset += writeSync(fd, data, offset, data.length - offset);
}

/** mkdir's mode is filtered by the umask; a restrictive one is undone explicitly. */
function chmodDirectory(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fchmodSync(fd, 0o755);
  } finally {
    closeSync(fd);
  }
}

port.on('message', (message: ToWriter) => {
  if (message.type === 'begin') {
    job = message.job;
    root = message.root;
    chmod = message.chmod;
    failed = false;
    openFd = undefined;
    return;
  }
  if (message.type === 'flush') {
    if (message.job === job) {
      try {
        closeOpen();
      } catch (error) {
        if (!failed) send({ type: 'failed', job, message: (error as Error).message });
        failed = true;
      }
    }
    send({ type: 'flushed', job: message.job });
    return;
  }
  if (message.job === job && !failed) {
    try {
      apply(message.data);
    } catch (error) {
      failed = true;
      try {
        closeOpen();
      } catch {
        // The first failure is the one worth reporting.
      }
      send({ type: 'failed', job, message: (error as Error).message });
    }
  }
  send({ type: 'ack', job: message.job, data: message.data }, [message.data.buffer as ArrayBuffer]);
});
