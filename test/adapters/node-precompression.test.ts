import { existsSync } from 'node:fs';
import { mkdir, readdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeployActivity } from '../../src/adapters/precompress/deploy-activity.js';
import { NodePrecompression } from '../../src/adapters/precompress/node-precompression.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { file, tgz } from '../support/tar-builder.js';
import { until } from '../support/until.js';

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
  let activity: DeployActivity;
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
    activity = new DeployActivity();
    precompression = new NodePrecompression(d.tree, { previewsRoot: previewsRoot(), deploysRoot: d.deploysRoot, replica: 'test' }, logger, activity);
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

describe('compressed siblings and a deploy that starts meanwhile (real process, real files)', () => {
  it('wait where they are for the deploy, then go on from there: each sibling made once, in one run', async () => {
    const d = await realDeploys('sitedrop-precompression-pause-');
    const logged: { message: string; fields?: Record<string, unknown> }[] = [];
    const logger = { info: (message: string, fields?: Record<string, unknown>) => logged.push({ message, fields }), warn: (message: string, fields?: Record<string, unknown>) => logged.push({ message, fields }), error: () => {} };
    const activity = new DeployActivity();
    const precompression = new NodePrecompression(d.tree, { previewsRoot: join(d.root, 'previews'), deploysRoot: d.deploysRoot, replica: 'test' }, logger, activity);
    try {
      const files = 3000;
      const pages = Array.from({ length: files }, (_, i) => file(`p/${i % 30}/page-${i}.html`, page(`page ${i} `.repeat(8))));
      const staged = await d.staging.stage(alice, (async function* () { yield tgz(pages); })(), { maxFiles: 10_000, maxBytes: 1e9 }, new AbortController().signal);
      await d.store.commit(staged, alice, docs, LIVE);
      await mkdir(join(d.docsRoot, alice), { recursive: true });
      await symlink(join(d.deploysRoot, alice, docs, LIVE), join(d.docsRoot, alice, docs));
      const release = join(d.deploysRoot, alice, docs, LIVE);
      const made = async () => (await Promise.all(Array.from({ length: 30 }, (_, i) => readdir(join(release, 'p', String(i)))))).flat().filter((n) => n.endsWith('.gz')).length;

      precompression.queue(alice, docs, LIVE);
      await until(async () => (await made()) > 0, 'the run to be under way');
      let during: { before: number; after: number } | undefined;
      await activity.track(async () => {
        // It looks every 5 ms of work, between files and before a flush: what is under way may still finish.
        let before = await made();
        for (let again = -1; again !== before; ) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          [again, before] = [before, await made()];
        }
        await new Promise((resolve) => setTimeout(resolve, 700));
        during = { before, after: await made() };
      });
      // Waiting for the whole deploy: nothing made meanwhile.
      expect(during!.after).toBe(during!.before);
      expect(during!.before).toBeLessThan(files);
      await precompression.idle();
      expect(await made()).toBe(files);
      // One run, which gave way once and made every sibling itself: none was begun again.
      const runs = logged.filter((l) => l.message === 'precompressed');
      expect(runs).toHaveLength(1);
      expect(runs[0]!.fields).toMatchObject({ made: 2 * files, linked: 0, pauses: 1 });
      expect(logged.filter((l) => l.message !== 'precompressed')).toEqual([]);
    } finally {
      await precompression.close();
      await d.close();
    }
  }, 120_000);
});
