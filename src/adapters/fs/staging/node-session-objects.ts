import { inject, injectable } from 'inversify';
import type { SessionObjects } from '../../../application/ports/session-objects.js';
import { batchLimits } from '../../../domain/object-batch.js';
import type { ProjectScope } from '../../../domain/deploy-session.js';
import { ArchiveRejected, ManifestRejected, MissingArchive, ObjectsRejected } from '../../../domain/errors.js';
import type { Digest } from '../../../domain/manifest.js';
import type { PackedManifest } from '../../../domain/packed-manifest.js';
import type { Username } from '../../../domain/username.js';
import { ARCHIVE_EXTRACTOR, type ArchiveExtractor } from '../threads/archive-extractor.js';
import { DeploysTree } from '../layout/deploys-tree.js';
import { WRITER_TASKS, type WriterTasks } from '../threads/writer-tasks.js';
import { ProjectContent } from '../store/project-content.js';
import { StoreAdoptions } from '../store/store-adoptions.js';
import { openUploads, uploadsTrusted } from './upload-trust.js';

/** Incremental deploys' uploads, DEPLOYS_ROOT/.sessions/<session>/, beside the users' stores. */
@injectable()
export class NodeSessionObjects implements SessionObjects {
  constructor(
    @inject(DeploysTree) private readonly tree: DeploysTree,
    @inject(ARCHIVE_EXTRACTOR) private readonly extractor: ArchiveExtractor,
    @inject(WRITER_TASKS) private readonly tasks: WriterTasks,
    @inject(ProjectContent) private readonly content: ProjectContent,
    @inject(StoreAdoptions) private readonly adoptions: StoreAdoptions,
  ) {}

  async missing(user: Username, session: string | undefined, objects: ReadonlyMap<Digest, number>, scope?: ProjectScope): Promise<Digest[]> {
    // Objects on their way into the store (a published session's, a tarball's) would be asked for again.
    await this.adoptions.settled(user);
    const uploads = session === undefined ? undefined : this.tree.uploadsDir(session);
    // A deploy key's: the store answers only for what its project's releases hold.
    const { missing, wrongSize } =
      scope === undefined ? await this.tasks.probeObjects(this.tree.objectsDir(user), uploads, objects) : await this.content.probe(user, scope.project, uploads, objects);
    const lie = wrongSize[0];
    if (lie !== undefined) throw new ManifestRejected(`size does not match the object's: ${lie} is not ${objects.get(lie as Digest)} bytes`);
    return missing as Digest[];
  }

  async shareUploads(from: readonly string[], session: string, objects: ReadonlyMap<Digest, number>): Promise<Digest[]> {
    const into = this.tree.uploadsDir(session);
    await openUploads(into, this.tree.scratchPath());
    const shared = new Set<string>();
    for (const other of from) {
      // Shared, an object of another boot would pass for one of this boot's (upload-trust.ts): it is sent again instead.
      if (!(await uploadsTrusted(this.tree.uploadsDir(other)))) continue;
      const wanted = new Map([...objects].filter(([digest]) => !shared.has(digest)));
      if (wanted.size === 0) break;
      for (const digest of await this.tasks.shareUploads(this.tree.uploadsDir(other), into, wanted)) shared.add(digest);
    }
    return [...shared] as Digest[];
  }

  async receive(_user: Username, session: string, batch: AsyncIterable<Uint8Array>, expected: PackedManifest, signal: AbortSignal): Promise<number> {
    // Unpacked as an archive is, into a staging area of its own, each object written under
    // its name there; only once every one has been checked do they move on into the
    // session's uploads (a shard at a time where the uploads lack it).
    const area = await this.tree.openStagingArea();
    try {
      // Not linked from the user's store, even where it holds the same bytes: each object
      // is written as the session's own, so that what this answers for stays with the
      // session until its publish or its end, whatever the store's collection does
      // meanwhile. A re-sent object replaces one a crash cut short.
      const objects = { fresh: area.fresh };
      const extracted = await this.extractor.extract(batch, area.dir, objects, batchLimits(expected), area.chmod, signal, expected).catch((error: unknown) => {
        if (error instanceof ArchiveRejected) throw new ObjectsRejected(error.reason);
        if (error instanceof MissingArchive) throw new ObjectsRejected('the batch is empty');
        throw error;
      });
      // Not flushed to disk here: the publish flushes once for every batch, and reads each
      // object again before a release links it only if the machine restarted meanwhile (upload-trust.ts).
      const uploads = this.tree.uploadsDir(session);
      await openUploads(uploads, this.tree.scratchPath());
      await this.tasks.adoptObjects(area.dir, uploads);
      return extracted.files;
    } finally {
      await this.tree.throwAwayStagingArea(area.dir).catch(() => undefined);
    }
  }

  async removeUploads(session: string): Promise<void> {
    await this.tree.throwAway(this.tree.uploadsDir(session));
  }

  sessionsWithUploads(): Promise<string[]> {
    return this.tree.sessionsWithUploads();
  }
}
