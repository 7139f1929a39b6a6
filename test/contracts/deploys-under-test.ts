import { copyFile, readdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { ReleasePreparation } from '../../src/application/ports/release-preparation.js';
import type { ReleaseRules } from '../../src/application/ports/release-rules.js';
import type { ReleaseStore } from '../../src/application/ports/release-store.js';
import type { SessionObjects } from '../../src/application/ports/session-objects.js';
import type { StagedRelease, Staging } from '../../src/application/ports/staging.js';
import { manifestOf as wholeManifest, type Digest, type ManifestFile } from '../../src/domain/manifest.js';
import { PackedManifest } from '../../src/domain/packed-manifest.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { bytes, InMemoryDeploys, pathOf } from '../support/fakes.js';
import { realDeploys } from '../support/real-deploys.js';
import { file, tgz } from '../support/tar-builder.js';
import { sha256 } from '../support/sha256.js';

/**
 * Staging, the release store and session objects over one DEPLOYS_ROOT, as a use case
 * meets them, with what a contract needs besides: inputs in the implementation's own
 * format, and what a web server would read.
 */
export interface DeploysUnderTest {
  readonly staging: Staging;
  /** The same staging's releases built ahead of a publish. */
  readonly preparation: ReleasePreparation;
  readonly store: ReleaseStore;
  readonly objects: SessionObjects;
  readonly rules: ReleaseRules;
  /** An archive of files with these contents, named in the order given. */
  archive(contents: readonly string[]): AsyncIterable<Uint8Array>;
  /** An archive of these files, by path. */
  namedArchive(files: Readonly<Record<string, string>>): AsyncIterable<Uint8Array>;
  /** An archive the archive policy refuses (an entry escaping the release with `..`). */
  refusedArchive(): AsyncIterable<Uint8Array>;
  /** A batch of objects for SessionObjects.receive, each under the name given, whatever its bytes. */
  batch(objects: readonly (readonly [name: string, content: string])[]): AsyncIterable<Uint8Array>;
  /**
   * The contents of a release's files in path order, as a web server reads them: through
   * the live link when `id` is undefined. Undefined when there is nothing to read.
   */
  served(user: Username, project: ProjectName, id?: ReleaseId): Promise<string[] | undefined>;
  /**
   * What is kept of staging areas and of removals once the implementation's background
   * work is done: empty when nothing was left behind.
   */
  leftovers(): Promise<string[]>;
  /**
   * Puts a copy of the same bytes in place of every object of the user's store, as a copy
   * made at the link limit (EMLINK) replaces one: releases keep the bytes they had, but
   * the store names none of their files any more.
   */
  replaceStoredObjects(user: Username): Promise<void>;
  close(): Promise<void>;
}

export { pathOf };

async function* once(chunk: Buffer): AsyncGenerator<Uint8Array> {
  yield chunk;
}

export async function fakeDeploys(): Promise<DeploysUnderTest> {
  const disk = new InMemoryDeploys();
  return {
    staging: disk.staging,
    preparation: disk.staging,
    store: disk.store,
    objects: disk.objects,
    rules: disk.rules,
    archive: (contents) => bytes(contents.join('\n')),
    namedArchive: (files) => bytes(Object.entries(files).map(([path, content]) => `@${path} ${content.replaceAll('\n', '\\n')}`).join('\n')),
    refusedArchive: () => bytes('REJECT ../escape'),
    batch: (objects) => bytes(objects.map(([name, content]) => `${name} ${content}`).join('\n')),
    async served(user, project, id) {
      const release = id ?? disk.live.get(`${user}/${project}`);
      const files = release === undefined ? undefined : disk.tree.get(`${user}/${project}`)?.get(release);
      return files === undefined ? undefined : [...files].sort((a, b) => (a.path < b.path ? -1 : 1)).map((f) => f.content);
    },
    leftovers: async () => [...disk.staged.keys()],
    // A file of the fake is its bytes: there is no inode to lose.
    replaceStoredObjects: async () => undefined,
    close: async () => undefined,
  };
}

/** Every file under `dir`, following the link `dir` may be, by path. */
async function contentsUnder(dir: string): Promise<string[] | undefined> {
  const files: [string, string][] = [];
  async function walk(sub: string): Promise<void> {
    for (const entry of await readdir(join(dir, sub), { withFileTypes: true })) {
      const path = sub === '' ? entry.name : `${sub}/${entry.name}`;
      if (entry.isDirectory()) await walk(path);
      else files.push([path, await readFile(join(dir, path), 'utf8')]);
    }
  }
  try {
    await walk('');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return files.sort(([a], [b]) => (a < b ? -1 : 1)).map(([, content]) => content);
}

export async function realDeploysUnderTest(): Promise<DeploysUnderTest> {
  const real = await realDeploys('sitedrop-contract-');
  return {
    staging: real.staging,
    preparation: real.staging,
    store: real.store,
    objects: real.objects,
    rules: real.rules,
    archive: (contents) => once(tgz(contents.map((content, i) => file(pathOf(i), content)))),
    namedArchive: (files) => once(tgz(Object.entries(files).map(([path, content]) => file(path, content)))),
    refusedArchive: () => once(tgz([file('../escape', 'x')])),
    batch: (objects) => once(tgz(objects.map(([name, content]) => file(name, content)))),
    served: (user, project, id) => contentsUnder(id === undefined ? join(real.docsRoot, user, project) : join(real.deploysRoot, user, project, id)),
    async leftovers() {
      const failed = await real.settle();
      const kept = await Promise.all(['.staging', '.fresh', '.trash'].map(async (dir) => (await readdir(join(real.deploysRoot, dir))).map((name) => `${dir}/${name}`)));
      return [...failed, ...kept.flat()];
    },
    async replaceStoredObjects(user) {
      await real.adoptions.idle();
      const store = join(real.deploysRoot, user, '.objects');
      for (const shard of await readdir(store)) {
        for (const name of await readdir(join(store, shard))) {
          const object = join(store, shard, name);
          await copyFile(object, `${object}.copy`);
          await rename(`${object}.copy`, object);
        }
      }
    },
    close: () => real.close(),
  };
}

export const alice = 'alice' as Username;
export const bob = 'bob' as Username;
export const docs = 'docs' as ProjectName;
export const blog = 'blog' as ProjectName;
export const R1 = '20261123T120000' as ReleaseId;
export const R2 = '20261123T130000' as ReleaseId;
export const LIMITS = { maxFiles: 100, maxBytes: 1_000_000 };
export const going = (): AbortSignal => new AbortController().signal;
export const digestOf = sha256;
/** A manifest's objects, digest to size, of these contents. */
export const objectsOf = (...contents: string[]): Map<Digest, number> => new Map(contents.map((c) => [digestOf(c), Buffer.byteLength(c)]));
/** What a session's batches may hold, as the session keeps it: these objects at these sizes. */
export const expecting = (objects: ReadonlyMap<Digest, number>): PackedManifest => PackedManifest.pack({ files: [], objects, bytes: 0 });
/** A checked manifest of `files`, as a session keeps it. */
export const packed = (files: readonly ManifestFile[]): PackedManifest => PackedManifest.pack(wholeManifest(files));
/** A manifest of files with these contents, named as an archive's are. */
export const manifestOf = (...contents: string[]): ManifestFile[] => contents.map((c, i) => ({ path: pathOf(i), size: Buffer.byteLength(c), digest: digestOf(c) }));

/** Runs `test` over a fresh set from `open`, closed whatever happens. */
export const over =
  (open: () => Promise<DeploysUnderTest>, test: (d: DeploysUnderTest) => Promise<void>) =>
  async (): Promise<void> => {
    const d = await open();
    try {
      await test(d);
    } finally {
      await d.close();
    }
  };

/** Stages an archive of `contents` for `user` and commits it as `project`'s release `id`. */
export async function release(d: DeploysUnderTest, user: Username, project: ProjectName, id: ReleaseId, contents: readonly string[]): Promise<StagedRelease> {
  const staged = await d.staging.stage(user, d.archive(contents), LIMITS, going());
  await d.store.commit(staged, user, project, id);
  return staged;
}
