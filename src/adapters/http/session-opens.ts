import type { ServerResponse } from 'node:http';
import { DeploySlots, type Slot, type SlotLimits } from './deploy-slots.js';
import type { UploadSlot } from './upload-body.js';

/** A turn to read a manifest. */
export interface Turn {
  /** Ends it, told how many bytes of manifest it read (inflated); calling it again does nothing. */
  readonly end: (bytesRead: number) => void;
  /** As the reading of the manifest sees it: quiet while the client hardly sends, and taken back then for an open that waits. */
  readonly slot: UploadSlot;
}

/**
 * Manifest bytes read, in all, between major collections begun at a turn's end: what a
 * manifest's reading held is garbage all at once when it ends (50,000 long paths are tens
 * of MB), and V8 let the heap grow to several times that before collecting it. A
 * collection per 32 MiB read keeps the heap near what is live, at a cost spread thin.
 */
const COLLECT_EVERY_BYTES = 32 * 1024 * 1024;

type Collect = (options: { type: 'major'; execution: 'async' }) => void;
/** V8's collector, when the process runs with --expose-gc (`npm start` does). */
const collect = (globalThis as { gc?: Collect }).gc;

/**
 * Turns among the incremental deploys opening a session. Reading a manifest holds what it
 * has checked until the session is answered, up to MAX_FILES entries (some 50 MB of paths
 * at the defaults), and a gzip body of a few hundred KB inflates that far: a few at a time
 * keep the service's memory bounded however many are sent. A waiting open holds only its
 * paused socket, its body read once its turn comes. The turns are slots of their own
 * (DeploySlots, apart from the deploys': an open builds nothing and is short, and should
 * not wait behind uploads, nor they behind it), so they are shared as those are: a freed
 * turn goes to the waiting open whose user reads the fewest, a turn whose client hardly
 * sends is taken back for an open that waits (upload-body.ts), and so is the longest-held
 * of a user over its share at the end of a turn (DEPLOY_TURN_SECONDS). An open is refused
 * as a waiting deploy is (503 and Retry-After) when the queue is full, after `maxWaitMs`,
 * or at shutdown.
 */
export class SessionOpens {
  private readonly turns: DeploySlots;
  private readSinceCollected = 0;

  constructor(limits: SlotLimits) {
    this.turns = new DeploySlots(limits);
  }

  /** Resolves once `user`'s request may read its manifest; a client that hangs up meanwhile leaves the queue (ClientGone). */
  async turn(user: string, res: ServerResponse): Promise<Turn> {
    const gone = new AbortController();
    const onClose = (): void => gone.abort();
    if (res.req.socket.destroyed) gone.abort();
    else res.once('close', onClose);
    let slot: Slot;
    try {
      slot = await this.turns.acquire(user, gone.signal);
    } finally {
      res.off('close', onClose);
    }
    let ended = false;
    const end = (bytesRead: number): void => {
      if (ended) return;
      ended = true;
      slot.release();
      this.readSinceCollected += bytesRead;
      if (this.readSinceCollected < COLLECT_EVERY_BYTES) return;
      this.readSinceCollected = 0;
      // In a task of its own after this request's, not inside it; still one pause of the
      // whole thread (30-40 ms at a 30 MB heap, docs/performance.md), once per 32 MiB read.
      // (Node 20's synchronous { type: 'major' } frees nothing; this and the full gc() do.)
      collect?.({ type: 'major', execution: 'async' });
    };
    return { end, slot };
  }

  /** Refuses every waiting open and any later one; those reading keep their turns. */
  close(): void {
    this.turns.close();
  }
}
