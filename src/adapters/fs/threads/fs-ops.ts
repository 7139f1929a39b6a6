/**
 * File-system operations as bytes, from the thread that parses an archive to the thread
 * that creates its files: one transferable buffer carries hundreds of them, so neither
 * thread pays a message per entry. Paths are relative to the release root and already
 * checked by the archive policy; they are UTF-8 here.
 *
 *   MKDIR  u16 length, path                      a directory, 0755
 *   CREATE u16 length, path                      a new file (O_EXCL, 0644), which becomes the open one
 *   WRITE  u32 length, bytes                     appended to the open file
 *   CLOSE  digest (32 bytes)                     closes the open file and shares it through the
 *                                                user's store (SHA-256 of its content)
 *   PUT    u16 length, path, digest, u32 length, bytes
 *                                                a whole small file: a link to the stored
 *                                                object if there is one, else written and stored
 *   LINK   u16 length, path, digest              a file built from an object the user already
 *                                                has (an incremental deploy): a link to it, or,
 *                                                if it has gone, noted as missing
 *   LINK_UPLOADED u16 length, path, digest       as LINK, from the session's uploads only: a
 *                                                deploy key's object its project does not hold
 *   UNLINK u16 length, path                      a file of a release being changed into another
 *   RMDIR  u16 length, path                      a directory of it, empty by then
 */
export const OP_MKDIR = 1;
export const OP_CREATE = 2;
export const OP_WRITE = 3;
export const OP_CLOSE = 4;
export const OP_PUT = 5;
export const OP_LINK = 6;
export const OP_LINK_UPLOADED = 7;
export const OP_UNLINK = 8;
export const OP_RMDIR = 9;

export const BATCH_BYTES = 256 * 1024;
/**
 * Operations on paths (a system call each) a batch holds at most: links are small, and a
 * probe a client waits on (task-queue.ts) waits for the batch in hand.
 */
export const BATCH_PATH_OPS = 1024;
export const DIGEST_BYTES = 32;
/**
 * Files up to this size travel whole in one PUT, digest first, so an unchanged one is
 * one link(2) instead of open, write and close. Far below a batch, with room for the
 * longest path (1024 bytes, up to 3 each as UTF-8 from UTF-16) and the header.
 */
export const SMALL_FILE_BYTES = 128 * 1024;

const utf8 = new TextEncoder();

/** Fills batches of operations and ships each one when it is full or flushed. */
export class OpBatcher {
  private batch: Uint8Array;
  private view: DataView;
  private length = 0;
  private pathOps = 0;

  constructor(
    private readonly fresh: () => Uint8Array,
    private readonly ship: (batch: Uint8Array) => void,
  ) {
    this.batch = fresh();
    this.view = new DataView(this.batch.buffer);
  }

  mkdir(path: string): void {
    this.pathOp(OP_MKDIR, path);
  }

  create(path: string): void {
    this.pathOp(OP_CREATE, path);
  }

  unlink(path: string): void {
    this.pathOp(OP_UNLINK, path);
  }

  rmdir(path: string): void {
    this.pathOp(OP_RMDIR, path);
  }

  write(data: Uint8Array): void {
    for (let offset = 0; offset < data.length; ) {
      if (BATCH_BYTES - this.length < 6) this.flush();
      const taken = Math.min(data.length - offset, BATCH_BYTES - this.length - 5);
      this.batch[this.length] = OP_WRITE;
      this.view.setUint32(this.length + 1, taken);
      this.batch.set(data.subarray(offset, offset + taken), this.length + 5);
      this.length += 5 + taken;
      offset += taken;
    }
  }

  close(digest: Uint8Array): void {
    if (BATCH_BYTES - this.length < 1 + DIGEST_BYTES) this.flush();
    this.batch[this.length] = OP_CLOSE;
    this.batch.set(digest, this.length + 1);
    this.length += 1 + DIGEST_BYTES;
  }

  put(path: string, digest: Uint8Array, bytes: Uint8Array): void {
    if (bytes.length > SMALL_FILE_BYTES) throw new Error(`a PUT of ${bytes.length} bytes does not fit a batch`);
    if (BATCH_BYTES - this.length < 3 + path.length * 3 + DIGEST_BYTES + 4 + bytes.length) this.flush();
    this.pathOp(OP_PUT, path);
    this.batch.set(digest, this.length);
    this.view.setUint32(this.length + DIGEST_BYTES, bytes.length);
    this.batch.set(bytes, this.length + DIGEST_BYTES + 4);
    this.length += DIGEST_BYTES + 4 + bytes.length;
  }

  /** LINK, or with `uploadedOnly` LINK_UPLOADED. */
  link(path: string, digest: Uint8Array, uploadedOnly = false): void {
    if (BATCH_BYTES - this.length < 3 + path.length * 3 + DIGEST_BYTES) this.flush();
    this.pathOp(uploadedOnly ? OP_LINK_UPLOADED : OP_LINK, path);
    this.batch.set(digest, this.length);
    this.length += DIGEST_BYTES;
  }

  /** Ships what is batched so far, if anything. */
  flush(): void {
    if (this.length === 0) return;
    this.ship(this.batch.subarray(0, this.length));
    this.batch = this.fresh();
    this.view = new DataView(this.batch.buffer);
    this.length = 0;
    this.pathOps = 0;
  }

  /** The buffer being filled, if nothing is in it: a job that has ended sends no more. */
  unused(): Uint8Array | undefined {
    return this.length === 0 ? this.batch : undefined;
  }

  private pathOp(op: number, path: string): void {
    // A UTF-8 path takes at most 3 bytes per UTF-16 unit; the policy caps it at 1024 bytes.
    if (BATCH_BYTES - this.length < 3 + path.length * 3 || this.pathOps === BATCH_PATH_OPS) this.flush();
    this.pathOps += 1;
    const { written } = utf8.encodeInto(path, this.batch.subarray(this.length + 3));
    this.batch[this.length] = op;
    this.view.setUint16(this.length + 1, written);
    this.length += 3 + written;
  }
}
