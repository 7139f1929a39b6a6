import { createHash } from 'node:crypto';
import { closeSync, fchmodSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { isPrecompressible, PRECOMPRESSED_CODINGS, siblingOf, type PrecompressedCoding } from '../../domain/precompressible.js';
import { derivedObjectPath, GENERATED_SIBLING_MODE, SITEDROP_DIR } from '../fs/store/generated-siblings.js';
import { compressorsFor, type SiblingSettings } from './sibling-settings.js';

const code = (error: unknown): string | undefined => (error as NodeJS.ErrnoException).code;

/** What one release's run did. */
export interface SiblingTally {
  /** Siblings compressed here, and the bytes compressed and written. */
  made: number;
  bytesIn: number;
  bytesOut: number;
  /** Siblings linked to a derived object the store had already. */
  linked: number;
  /** Codings that did not make a file smaller (no sibling). */
  notSmaller: number;
  /** The release went away (pruned, removed) during the run: what was made for it is undone. */
  gone: boolean;
}

interface Pending {
  readonly temp: string;
  readonly derived: string;
  readonly sibling: string;
}

/** The release is not there (any more); the run stops and undoes its part. */
class ReleaseGone extends Error {}

/**
 * Makes the missing compressed siblings of one release's text files (domain/precompressible.ts),
 * synchronously, on the precompression thread. Each file's bytes are hashed to find the
 * store's derived object of that coding (fs/generated-siblings.ts): linked if the store has
 * it, else compressed. A sibling appears whole: the compressed bytes go to a scratch file
 * first, every batch is flushed with one syncfs, and only then is each linked into the
 * store and beside its file, by link(2), which never replaces a name: a sibling the site
 * uploaded is kept. A release that goes while this runs leaves nothing: what is in the
 * scratch goes with it (the caller throws it away), and a derived object made here that
 * no release links is unlinked again.
 */
export class ReleaseSiblings {
  readonly tally: SiblingTally = { made: 0, bytesIn: 0, bytesOut: 0, linked: 0, notSmaller: 0, gone: false };
  private readonly compress: Record<PrecompressedCoding, (bytes: Buffer) => Buffer>;
  private identity: Stats | undefined;
  private pending: Pending[] = [];
  private pendingBytes = 0;
  private scratchCount = 0;
  /** Derived objects this run put in the store: unlinked again if the release goes. */
  private readonly added: string[] = [];

  constructor(
    private readonly release: string,
    private readonly store: string,
    private readonly scratch: string,
    private readonly settings: SiblingSettings,
    private readonly sync: (path: string) => Promise<void>,
    /** Called between files (and, `now`, before each flush): returns once the run may go on (it waits while a deploy runs). */
    private readonly giveWay: (now?: boolean) => void = () => {},
  ) {
    this.compress = compressorsFor(settings);
  }

  async run(): Promise<SiblingTally> {
    try {
      this.identity = this.releaseRead(() => lstatSync(this.release));
      if (!this.identity.isDirectory()) throw new ReleaseGone();
      const dirs = [''];
      for (let dir = dirs.pop(); dir !== undefined; dir = dirs.pop()) {
        const entries = this.releaseRead(() => readdirSync(join(this.release, dir), { withFileTypes: true }));
        const names = new Set(entries.map((entry) => entry.name));
        for (const entry of entries) {
          const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
          if (entry.isDirectory() && path !== SITEDROP_DIR) dirs.push(path);
          if (!entry.isFile() || !isPrecompressible(entry.name)) continue;
          this.giveWay();
          const wanted = PRECOMPRESSED_CODINGS.filter((coding) => !names.has(siblingOf(entry.name, coding)));
          if (wanted.length > 0) this.consider(path, wanted);
          if (this.pendingBytes >= this.settings.batchBytes || this.pending.length >= this.settings.batchFiles) await this.flush();
        }
      }
      await this.flush();
    } catch (error) {
      if (!(error instanceof ReleaseGone)) throw error;
      this.undo();
    }
    return this.tally;
  }

  private consider(path: string, wanted: readonly PrecompressedCoding[]): void {
    const file = join(this.release, path);
    const info = this.releaseRead(() => lstatSync(file));
    if (!info.isFile() || info.size < this.settings.minBytes || info.size > this.settings.maxBytes) return;
    const bytes = this.releaseRead(() => readFileSync(file));
    const digest = createHash('sha256').update(bytes).digest();
    for (const coding of wanted) {
      const derived = join(this.store, derivedObjectPath(digest, coding));
      const sibling = siblingOf(file, coding);
      if (this.linkExisting(derived, sibling)) continue;
      const compressed = this.compress[coding](bytes);
      this.tally.bytesIn += bytes.length;
      // Nothing is kept of a coding that does not pay: no store entry outlives its releases' links.
      // Such a file is compressed again in each release that has it (rare from 256 bytes on).
      if (compressed.length >= bytes.length) {
        this.tally.notSmaller += 1;
        continue;
      }
      const temp = join(this.scratch, String(this.scratchCount++));
      writeWhole(temp, compressed);
      this.pending.push({ temp, derived, sibling });
      this.pendingBytes += compressed.length;
    }
  }

  /** Links the derived object if the store has it; false if not, and it is made. */
  private linkExisting(derived: string, sibling: string): boolean {
    try {
      linkSync(derived, sibling);
      this.tally.linked += 1;
    } catch (error) {
      if (code(error) === 'ENOENT') {
        // Not in the store, or the release went (then the run stops here).
        this.assertReleaseThere();
        return false;
      }
      // EEXIST: there already; EMLINK: that object is shared as often as the filesystem allows,
      // and this file goes without (served as it is).
      if (code(error) !== 'EEXIST' && code(error) !== 'EMLINK') throw error;
    }
    return true;
  }

  /** Makes the batch durable, then links each into the store and beside its file. */
  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    if (batch.length === 0) return;
    // Not a syncfs while a deploy runs: it would flush the deploy's writes with the batch's.
    this.giveWay(true);
    await this.sync(this.scratch);
    this.assertReleaseThere();
    for (const { temp, derived, sibling } of batch) {
      let source = temp;
      try {
        linkInto(temp, derived);
        this.added.push(derived);
      } catch (error) {
        // Made meanwhile by another release's run, on this replica or another: shared.
        if (code(error) !== 'EEXIST') throw error;
        source = derived;
      }
      try {
        linkSync(source, sibling);
        this.counted(source === temp, temp);
      } catch (error) {
        if (code(error) !== 'ENOENT' && code(error) !== 'EEXIST' && code(error) !== 'EMLINK') throw error;
        if (code(error) === 'ENOENT') {
          this.assertReleaseThere();
          // The release is there: the shared object was collected meanwhile; this one serves.
          linkSync(temp, sibling);
          this.counted(true, temp);
        }
      }
      unlinkSync(temp);
    }
  }

  private counted(madeHere: boolean, temp: string): void {
    if (!madeHere) {
      this.tally.linked += 1;
      return;
    }
    this.tally.made += 1;
    this.tally.bytesOut += lstatSync(temp).size;
  }

  private assertReleaseThere(): void {
    const now = lstatSync(this.release, { throwIfNoEntry: false });
    if (!now?.isDirectory() || now.ino !== this.identity!.ino || now.dev !== this.identity!.dev) throw new ReleaseGone();
  }

  /** A read of the release: a path not there means the release went. */
  private releaseRead<T>(read: () => T): T {
    try {
      return read();
    } catch (error) {
      if (code(error) === 'ENOENT' || code(error) === 'ENOTDIR') throw new ReleaseGone();
      throw error;
    }
  }

  /** The release went: the derived objects this run added that no release links (one link left) go too. */
  private undo(): void {
    this.tally.gone = true;
    this.pending = [];
    // The scratch's links first: until they go, an object made here has two.
    for (const name of readdirSync(this.scratch)) unlinkSync(join(this.scratch, name));
    for (const derived of this.added) {
      const info = lstatSync(derived, { throwIfNoEntry: false });
      if (info?.isFile() && info.nlink === 1) unlinkSync(derived);
    }
  }
}

/** link(2) into the store, making the shard first if it is not there. */
function linkInto(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch (error) {
    if (code(error) !== 'ENOENT') throw error;
    mkdirSync(dirname(to), { recursive: true, mode: 0o755 });
    linkSync(from, to);
  }
}

function writeWhole(path: string, bytes: Buffer): void {
  const fd = openSync(path, 'wx', GENERATED_SIBLING_MODE);
  try {
    // The umask may have taken bits off; the mode is what tells a generated sibling.
    fchmodSync(fd, GENERATED_SIBLING_MODE);
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
  } finally {
    closeSync(fd);
  }
}

