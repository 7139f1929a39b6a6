import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ArchiveExtractor } from '../../src/adapters/fs/archive-extractor.js';
import { NodeReleaseFs } from '../../src/adapters/fs/node-release-fs.js';
import { FsThreads } from '../../src/adapters/fs/fs-threads.js';
import { SilentLogger } from '../../src/adapters/log/logger.js';

export interface RealReleaseFs {
  readonly root: string;
  readonly releases: NodeReleaseFs;
  close(): Promise<void>;
}

/** The real release filesystem and its worker threads over a fresh temp directory, for archive properties. */
export async function realReleaseFs(prefix: string): Promise<RealReleaseFs> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  const threads = new FsThreads();
  const releases = new NodeReleaseFs({ docsRoot: join(root, 'docs'), deploysRoot: join(root, 'deploys'), replica: 'test' }, new ArchiveExtractor(threads), threads, new SilentLogger());
  await releases.removeLeftovers();
  return {
    root,
    releases,
    async close() {
      await threads.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}
