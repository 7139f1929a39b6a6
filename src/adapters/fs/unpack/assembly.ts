import { ImpliedDirectories } from '../../../domain/archive-ledger.js';
import { EMPTY_FILE_DIGEST, NO_OBJECT } from '../../../domain/packed-layout.js';
import { PackedManifest } from '../../../domain/packed-manifest.js';
import { PackedPaths } from '../../../domain/packed-paths.js';
import type { AssemblyPart, StagingObjects } from '../threads/fs-protocol.js';
import { releaseChanges, type ReleaseChanges } from './release-changes.js';
import { WriterJob, type JobChannels } from './writer-job.js';

const EMPTY = new Uint8Array(0);

/**
 * A release built from objects the user already has (an incremental deploy's publish):
 * the directories its paths imply, then a LINK per file, a few batches at a time as
 * the writer keeps up; or one part of that (AssemblyPart), or an area holding another
 * release changed into the first part of this one. The manifest was checked when the
 * session opened.
 */
export class Assembly extends WriterJob {
  /**
   * The manifest's files read where they lie, by position: a part that has most of them
   * made already (the rest, an amendment) skips those without making their paths.
   */
  private readonly files: PackedPaths;
  /** The position of the next file to build. */
  private next = 0;
  private readonly dirs: ImpliedDirectories;
  /** The files and bytes this assembly (or its part) made: as an archive's ledger counts them. */
  private readonly made = { files: 0, bytes: 0 };
  /** An amendment's changes, and how many of its `undo` are sent. */
  private readonly changes: ReleaseChanges | undefined;
  private undone = 0;

  constructor(
    channels: JobChannels,
    id: number,
    root: string,
    objects: StagingObjects,
    chmod: boolean,
    manifest: PackedManifest,
    private readonly part: AssemblyPart | undefined,
    /** By object index, 1: an object a deploy key's session may take only from its uploads. */
    private readonly uploadsOnly: Uint8Array | undefined,
  ) {
    super(channels, id, root, objects, chmod, { name: 'entries' });
    this.files = new PackedPaths(manifest);
    this.changes = part?.kind === 'amend' ? releaseChanges(new PackedPaths(PackedManifest.from(part.from)), this.files, part.deferred) : undefined;
    this.dirs = new ImpliedDirectories(this.changes?.dirs);
    this.resume();
  }

  protected override get missingFails(): boolean {
    return this.part?.kind === 'rest' || this.part === undefined;
  }

  private build(i: number): void {
    const { files, part } = this;
    const object = files.object(i);
    if (part?.kind === 'rest') {
      // The directories and the empty files were made ahead.
      if (object !== NO_OBJECT && part.wanted[object] === 1) this.ops.link(files.path(i), files.digest(i), this.uploadsOnly?.[object] === 1);
      return;
    }
    this.made.files += 1;
    this.made.bytes += files.size(i);
    if (this.changes?.kept[i] === 1) return;
    const path = files.path(i);
    for (const dir of this.dirs.missingParents(path)) this.ops.mkdir(dir);
    if (object === NO_OBJECT) this.ops.put(path, EMPTY_FILE_DIGEST, EMPTY);
    else if (part?.deferred[object] !== 1) this.ops.link(path, files.digest(i), this.uploadsOnly?.[object] === 1);
  }

  protected stop(): void {
    this.next = this.files.count;
  }

  /** An amendment's removals, before any file is made: a path may change from a directory to a file, or back. */
  private undo(): void {
    const undo = this.changes?.undo ?? [];
    while (this.reading && this.undone < undo.length && !this.writerWindow.full) {
      for (let batch = 2048; batch > 0 && this.undone < undo.length; batch -= 1, this.undone += 1) {
        const { op, path } = undo[this.undone]!;
        if (op === 'unlink') this.ops.unlink(path);
        else this.ops.rmdir(path);
      }
    }
  }

  protected step(): void {
    this.undo();
    if (this.undone < (this.changes?.undo.length ?? 0)) return;
    const count = this.files.count;
    while (this.reading && this.next < count && !this.writerWindow.full) {
      // About one batch of operations, then the writer's answer brings this back.
      for (let batch = 2048; batch > 0 && this.next < count; batch -= 1) this.build(this.next++);
    }
    if (!this.reading || this.next < count) return;
    this.ops.flush();
    const { files, bytes } = this.made;
    this.settle({ type: 'done', job: this.id, files, bytes });
  }
}
