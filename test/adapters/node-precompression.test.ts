import { existsSync } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeployActivity } from '../../src/adapters/precompress/deploy-activity.js';
import { NodePrecompression } from '../../src/adapters/precompress/node-precompression.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { file, tgz } from '../support/tar-builder.js';

const alice = 'alice' as Username;
const docs = 'docs' as ProjectName;
const OLD = '20261126T100000' as ReleaseId;
const LIVE = '20261126T110000' as ReleaseId;
const page = (text: string) => `<!doctype html><p>${text}</p>\n`.repeat(40);

/** The compressing process over real releases and links: which releases it works on. */
describe('compressed siblings of the releases a web server serves (real directories and links)', () => {
  let d: RealDeploys;
  let logged: { message: string; fields?: Record<string, unknown> }[];
  let precompression: NodePrecompression;
  const previewsRoot = () => join(d.root, 'previews');
  const siblingOf = (release: ReleaseId) => join(d.deploysRoot, alice, docs, release, 'index.html.gz');

  beforeEach(async () => {
    d = await realDeploys('sitedrop-precompression-');
    for (const [release, text] of [[OLD, 'old'], [LIVE, 'live']] as const) {
      const staged = await d.staging.stage(alice, (async function* () { yield tgz([file('index.html', page(text))]); })(), { maxFiles: 100, maxBytes: 1e6 }, new AbortController().signal);
      await d.store.commit(staged, alice, docs, release);
    }
    await mkdir(join(d.docsRoot, alice), { recursive: true });
    await symlink(join(d.deploysRoot, alice, docs, LIVE), join(d.docsRoot, alice, docs));
    logged = [];
    const logger = { info: (message: string, fields?: Record<string, unknown>) => logged.push({ message, fields }), warn: () => {}, error: () => {} };
    precompression = new NodePrecompression(d.tree, { previewsRoot: previewsRoot(), deploysRoot: d.deploysRoot, replica: 'test' }, logger, new DeployActivity());
  });
  afterEach(async () => {
    await precompression.close();
    await d.close();
  });

  it('skips a release no longer served when its turn comes, and makes the live one', async () => {
    precompression.queue(alice, docs, OLD);
    precompression.queue(alice, docs, LIVE);
    await precompression.idle();
    expect(existsSync(siblingOf(LIVE))).toBe(true);
    expect(existsSync(siblingOf(OLD))).toBe(false);
    expect(logged.map((l) => [l.message, l.fields?.release])).toEqual([
      ['precompression skipped: release no longer served', OLD],
      ['precompressed', LIVE],
    ]);
  });

  it("makes a release a preview serves, and one served again after it was skipped", async () => {
    precompression.queue(alice, docs, OLD);
    await precompression.idle();
    expect(existsSync(siblingOf(OLD))).toBe(false);
    await mkdir(join(previewsRoot(), alice, docs), { recursive: true });
    await symlink(join(d.deploysRoot, alice, docs, OLD), join(previewsRoot(), alice, docs, 'pr-7'));
    precompression.queue(alice, docs, OLD);
    await precompression.idle();
    expect(existsSync(siblingOf(OLD))).toBe(true);
  });
});
