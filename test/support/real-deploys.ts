import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArchiveExtractor } from '../../src/adapters/fs/threads/archive-extractor.js';
import { DeploysTree, type BackgroundQuiet } from '../../src/adapters/fs/layout/deploys-tree.js';
import { FsThreads } from '../../src/adapters/fs/threads/fs-threads.js';
import { WriterTasks } from '../../src/adapters/fs/threads/writer-tasks.js';
import { KeptManifests } from '../../src/adapters/fs/store/kept-manifests.js';
import { ManifestMemory } from '../../src/adapters/fs/store/manifest-memory.js';
import { NodeReleaseStore } from '../../src/adapters/fs/publish/node-release-store.js';
import { NodeSessionObjects } from '../../src/adapters/fs/staging/node-session-objects.js';
import { NodeStaging } from '../../src/adapters/fs/staging/node-staging.js';
import { ReleaseRulesFiles } from '../../src/adapters/fs/publish/release-rules-files.js';
import { ProjectContent } from '../../src/adapters/fs/store/project-content.js';
import { StoreAdoptions } from '../../src/adapters/fs/store/store-adoptions.js';
import { SilentLogger } from '../../src/adapters/log/logger.js';

export interface RealDeploys {
  readonly root: string;
  readonly docsRoot: string;
  readonly deploysRoot: string;
  readonly staging: NodeStaging;
  readonly store: NodeReleaseStore;
  readonly objects: NodeSessionObjects;
  readonly rules: ReleaseRulesFiles;
  /** The file-system threads they share, and the client of the writer's tasks, to watch what work reaches them. */
  readonly threads: FsThreads;
  readonly tasks: WriterTasks;
  /** The layout of their directories, for adapters built on it. */
  readonly tree: DeploysTree;
  /** Tarball releases' new objects on their way into the store after the commit. */
  readonly adoptions: StoreAdoptions;
  /** Releases' manifests kept beside them, for a store made again over the same directories (a restart). */
  readonly kept: KeptManifests;
  /** Waits for the background adoptions and deletions; returns the deletions that failed. */
  settle(): Promise<string[]>;
  close(): Promise<void>;
}

/** The real file-system adapters, composed as the container composes them, and their threads over a fresh temp directory. */
export async function realDeploys(prefix: string, { quiet }: { quiet?: BackgroundQuiet } = {}): Promise<RealDeploys> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  const threads = new FsThreads();
  const tasks = new WriterTasks(threads);
  const docsRoot = join(root, 'docs');
  const deploysRoot = join(root, 'deploys');
  const tree = new DeploysTree({ docsRoot, deploysRoot, replica: 'test' }, tasks, quiet);
  const extractor = new ArchiveExtractor(threads);
  const manifests = new ManifestMemory();
  const content = new ProjectContent(tree, tasks);
  const adoptions = new StoreAdoptions(tree, tasks, new SilentLogger());
  const kept = new KeptManifests(tree, new SilentLogger());
  const deploys = {
    root,
    docsRoot,
    deploysRoot,
    staging: new NodeStaging(tree, extractor, new SilentLogger(), manifests, content, adoptions),
    store: new NodeReleaseStore(tree, tasks, manifests, adoptions, kept, extractor),
    objects: new NodeSessionObjects(tree, extractor, tasks, content, adoptions),
    rules: new ReleaseRulesFiles(tree),
    threads,
    tasks,
    tree,
    adoptions,
    kept,
    async settle() {
      await adoptions.idle();
      await kept.idle();
      return tree.settle();
    },
    async close() {
      await adoptions.idle();
      await kept.idle();
      await tree.settle();
      await threads.close();
      await rm(root, { recursive: true, force: true });
    },
  };
  await deploys.staging.removeLeftovers();
  await deploys.store.removeLeftovers();
  return deploys;
}
