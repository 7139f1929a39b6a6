import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { dir, file, tgz, type RawEntry } from '../support/tar-builder.js';

const u = 'alice' as Username;
const p = 'docs' as ProjectName;
const id = '20261123T120000' as ReleaseId;

describe('NodeReleaseStore.releaseBytes: a release measured on disk', () => {
  let real: RealDeploys;
  let root: string;
  const deploy = async (entries: RawEntry[], release = id) => {
    async function* upload() {
      yield tgz(entries);
    }
    const staged = await real.staging.stage('alice' as Username, upload(), { maxFiles: 1000, maxBytes: 10_000_000 }, new AbortController().signal);
    await real.store.commit(staged, u, p, release);
    return staged;
  };

  beforeAll(async () => {
    real = await realDeploys('sitedrop-bytes-');
    ({ root } = real);
  });
  afterAll(async () => {
    await real.close();
  });

  it('adds up the files at every depth, as the deploy counted them; empty files and directories add nothing', async () => {
    const staged = await deploy([file('index.html', 'x'.repeat(1000)), dir('a/'), file('a/b/c.css', 'y'.repeat(70_000)), file('empty.txt', ''), dir('deep/er/')]);
    expect(staged.bytes).toBe(71_000);
    expect(await real.store.releaseBytes(u, p, id)).toBe(71_000);
  });

  it('remembers a release it measured (a release never changes once committed)', async () => {
    await writeFile(join(root, 'deploys', u, p, id, 'a', 'b', 'planted'), 'z'.repeat(500));
    expect(await real.store.releaseBytes(u, p, id)).toBe(71_000);
  });

  it('measures again a release removed and committed anew under the same id', async () => {
    await real.store.removeRelease(u, p, id);
    expect(await real.store.releaseBytes(u, p, id)).toBe(0);
    await deploy([file('index.html', 'new')]);
    expect(await real.store.releaseBytes(u, p, id)).toBe(3);
  });

  it('is 0 for a release that is not there', async () => {
    expect(await real.store.releaseBytes(u, 'nothing' as ProjectName, id)).toBe(0);
  });
});
