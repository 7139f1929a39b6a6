import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dir, file, tgz, type RawEntry } from '../support/tar-builder.js';
import { startHarness, type Harness } from '../support/service-harness.js';

/**
 * The upload reaches the worker in 256 KiB batches whose buffers are recycled, and the
 * worker inflates ahead of what it writes: every byte must still land in its own file.
 */
function siteOfManySizes(): Map<string, Buffer> {
  const files = new Map<string, Buffer>([
    ['index.html', Buffer.from('<h1>home</h1>\n')],
    ['empty.txt', Buffer.alloc(0)],
    ['one.txt', Buffer.from('1')],
    // Incompressible, so these cross several upload batches: one of exactly a batch's size.
    ['media/a.bin', randomBytes(1_500_000)],
    ['media/b.bin', randomBytes(700_001)],
    ['media/c.bin', randomBytes(256 * 1024)],
  ]);
  for (let i = 0; i < 600; i += 1) files.set(`pages/s${i % 9}/p-${i}.html`, Buffer.from(`<p>${'page '.repeat(i * 5)}${i}</p>\n`));
  return files;
}

describe('large and many-file archives (real server, real directories)', () => {
  let h: Harness;
  let token: string;
  const site = siteOfManySizes();
  const entries: RawEntry[] = [dir('media/'), ...[...site].map(([path, body]) => file(path, body))];
  const archive = tgz(entries);

  beforeAll(async () => {
    h = await startHarness();
    token = await h.createUser('bulk');
  });
  afterAll(async () => {
    await h.close();
  });

  const expectPublished = async (project: string) => {
    const live = join(h.docsRoot, 'bulk', project);
    for (const [path, body] of site) {
      const written = await readFile(join(live, path));
      expect(written.equals(body), `${project}/${path}: ${written.length} bytes written of ${body.length}`).toBe(true);
    }
  };

  it('publishes every byte of every file, large and small', async () => {
    expect(archive.length).toBeGreaterThan(4 * 256 * 1024);
    expect((await h.deploy(token, 'bulk', archive)).status).toBe(200);
    await expectPublished('bulk');
  });

  it('keeps concurrent deploys apart, byte for byte', async () => {
    const replies = await Promise.all(['one', 'two', 'three'].map((project) => h.deploy(token, project, archive)));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200]);
    for (const project of ['one', 'two', 'three']) await expectPublished(project);
  });
});
