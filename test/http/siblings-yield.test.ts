import { chmod, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/service-harness.js';
import { slowUpload } from '../support/slow-upload.js';
import { file, tgz } from '../support/tar-builder.js';
import { until } from '../support/until.js';

const exists = (path: string) => stat(path).then(() => true, () => false);

describe('compressed siblings give way to deploys', () => {
  let h: Harness;
  let token: string;
  beforeAll(async () => {
    h = await startHarness({ PRECOMPRESS: 'on' });
    await chmod(h.root, 0o755);
    token = await h.createUser('busy');
  });
  afterAll(async () => {
    await h.close();
  });

  it('are not made while another deploy is unpacking, and are made once it is done', async () => {
    const big = tgz(Array.from({ length: 200 }, (_, i) => file(`page-${i}.html`, `<p>${'filler '.repeat(400)} ${i}</p>\n`)));
    const held = slowUpload(h.url, token, 'held', big, 2000);
    await until(async () => (await readdir(join(h.deploysRoot, '.staging'))).length > 0, 'the held deploy to be unpacking');

    const js = 'export const answer = 42;\n'.repeat(300);
    expect((await h.deploy(token, 'quick', tgz([file('app.js', js)]))).status).toBe(200);
    const sibling = join(h.docsRoot, 'busy', 'quick', 'app.js.br');
    // The held deploy is still unpacking: for as long as it lasts, nothing is made.
    const deadline = Date.now() + 2000;
    while (Date.now() < deadline) {
      expect(await exists(sibling)).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    held.finish();
    expect((await held.response).status).toBe(200);
    await until(() => exists(sibling), 'the sibling, once deploys are quiet', 30_000);
  }, 60_000);

  it('give way for 15 s at most: under a deploy that never ends, they still come', async () => {
    const big = tgz(Array.from({ length: 200 }, (_, i) => file(`page-${i}.html`, `<p>${'more '.repeat(400)} ${i}</p>\n`)));
    const held = slowUpload(h.url, token, 'held-long', big, 2000);
    await until(async () => (await readdir(join(h.deploysRoot, '.staging'))).length > 0, 'the held deploy to be unpacking');
    const css = 'body { color: red; }\n'.repeat(300);
    expect((await h.deploy(token, 'patient', tgz([file('style.css', css)]))).status).toBe(200);
    await until(() => exists(join(h.docsRoot, 'busy', 'patient', 'style.css.gz')), 'the sibling, once its patience ran out (before the held upload is given up, at 30 s)', 25_000);
    held.req.destroy();
  }, 60_000);
});
