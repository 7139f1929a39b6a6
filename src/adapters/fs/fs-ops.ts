/**
 * File-system operations as bytes, from the thread that parses an archive to the thread
 * that creates its files: one transferable buffer carries hundreds of them, so neither
 * thread pays a message per entry. Paths are relative to the release root and already
 * checked by the archive policy; they are UTF-8 here.
 *
 *   MKDIR  u16 length, path          a directory, 0755
 *   CREATE u16 length, path          a new file (O_EXCL, 0644), which becomes the open one
 *   WRITE  u32 length, bytes         appended to the open file
 *   CLOSE                            closes the open file
 */
export const OP_MKDIR = 1;
export const OP_CREATE = 2;
export const OP_WRITE = 3;
export const OP_CLOSE = 4;

export const BATCH_BYTES = 256 * 1024;

const utf8 = new TextEncoder();

/** Fills batches of operations and ships each one when it is full or flushed. */
export class OpBatcher {
  private batch: Uint8Array;
  private view: DataView;
  private length = 0;

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

  close(): void {
    if (this.length === BATCH_BYTES) this.flush();
    this.batch[this.length++] = OP_CLOSE;
  }

  /** Ships what is batched so far, if anything. */
  flush(): void {
    if (this.length === 0) return;
    this.ship(this.batch.subarray(0, this.length));
    this.batch = this.fresh();
    this.view = new DataView(this.batch.buffer);
    this.length = 0;
  }

  private pathOp(op: number, path: string): void {
    // A UTF-8 path takes at most 3 bytes per UTF-16 unit; the policy caps it at 1024 bytes.
    if (BATCH_BYTES - this.length < 3 + path.length * 3) this.flush();
    const { written } = utf8.encodeInto(path, this.batch.subarray(this.length + 3));
    this.batch[this.length] = op;
    this.view.setUint16(this.length + 1, written);
    this.length += 3 + written;
  }
}
