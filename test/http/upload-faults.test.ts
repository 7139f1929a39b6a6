import { readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { multipart, rawRequest } from '../support/raw-http.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { releaseVersion, versionedSite } from '../support/sites.js';
import { slowUpload } from '../support/slow-upload.js';
import { until } from '../support/until.js';

describe('uploads that go wrong (real server, real directories)', () => {
  let h: Harness;
  let token: string;
  const staging = () => readdir(join(h.deploysRoot, '.staging'));

  beforeAll(async () => {
    h = await startHarness({ MAX_UPLOAD_BYTES: String(4 * 1024 * 1024) });
    token = await h.createUser('uploader');
    expect((await h.deploy(token, 'site', versionedSite('v1', 50))).status).toBe(200);
  });
  afterAll(async () => {
    await h.close();
  });

  it('asks for the body (100 Continue) only when the deploy is acceptable', async () => {
    const archive = versionedSite('v-continue', 10);
    const body = multipart('c0nt', [{ name: 'project', body: 'cont' }, { name: 'file', filename: 's.tgz', body: archive }]);
    const r = await rawRequest(h.url, {
      path: '/api/v1/deploy',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=c0nt', 'content-length': String(body.length), expect: '100-continue' },
      chunks: [body],
      waitForContinue: true,
    });
    expect(r.continued).toBe(true);
    expect(r.status).toBe(200);
  });

  it('a client that disconnects mid-upload leaves no staging area, and the server keeps serving', async () => {
    const live = await readlink(join(h.docsRoot, 'uploader/site'));
    const archive = versionedSite('v2', 2000, 512);
    const upload = slowUpload(h.url, token, 'site', archive, Math.floor(archive.length / 2));
    await until(async () => (await staging()).length === 1, 'a staging area');
    upload.req.destroy();
    await until(async () => (await staging()).length === 0, 'the staging area to go');
    expect(await readlink(join(h.docsRoot, 'uploader/site'))).toBe(live);
    expect((await readdir(join(h.deploysRoot, 'uploader/site'))).length).toBe(1);
    expect((await h.call('GET', '/api/v1/status')).status).toBe(200);
    expect((await h.deploy(token, 'site', versionedSite('v3', 50))).status).toBe(200);
  });

  it('a client that hangs up after its archive, before its preview\'s name is through, publishes nothing: not the live site, not a preview', async () => {
    const live = await readlink(join(h.docsRoot, 'uploader/site'));
    const releases = await readdir(join(h.deploysRoot, 'uploader/site'));
    const body = multipart('cut', [{ name: 'project', body: 'site' }, { name: 'file', filename: 's.tgz', body: versionedSite('v-cut', 20) }, { name: 'preview', body: 'pr-42' }]);
    const req = request(`${h.url}/api/v1/deploy`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'multipart/form-data; boundary=cut', 'content-length': String(body.length) } });
    req.on('error', () => undefined);
    // All but the end of the preview's name and the closing delimiter.
    req.write(body.subarray(0, body.length - 14));
    await new Promise((resolve) => setTimeout(resolve, 300));
    req.destroy();
    await until(async () => (await staging()).length === 0, 'the staging area to go');
    await h.settled();
    expect(await readlink(join(h.docsRoot, 'uploader/site'))).toBe(live);
    expect(await readdir(join(h.deploysRoot, 'uploader/site'))).toEqual(releases);
    expect((await h.call('GET', '/api/v1/projects/site/previews', { token })).body).toMatchObject({ previews: [] });
  });

  it('answers a declared Content-Length over the limit with 413 before the body is sent', async () => {
    const r = await rawRequest(h.url, {
      path: '/api/v1/deploy',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'multipart/form-data; boundary=x',
        'content-length': String(5 * 1024 * 1024),
        expect: '100-continue',
      },
      chunks: [],
      waitForContinue: true,
    });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ status: 'error', error: 'request body too large' });
    expect(r.continued).toBe(false);
  });

  it('answers 401 to a bad token before asking for the body', async () => {
    const r = await rawRequest(h.url, {
      path: '/api/v1/deploy',
      headers: { authorization: 'Bearer nope', 'content-type': 'multipart/form-data; boundary=x', 'content-length': '1000', expect: '100-continue' },
      chunks: [],
      waitForContinue: true,
    });
    expect(r.status).toBe(401);
    expect(r.continued).toBe(false);
  });

  it('a client still uploading when refused reads the refusal, and can keep writing', async () => {
    const body = multipart('late', [{ name: 'project', body: 'site' }, { name: 'file', filename: 's.tgz', body: Buffer.alloc(2 * 1024 * 1024, 1) }]);
    const outcome = await new Promise<{ status: number; writeError?: string }>((resolve) => {
      const req = request(`${h.url}/api/v1/deploy`, {
        method: 'POST',
        headers: { authorization: `Bearer ${'B'.repeat(32)}`, 'content-type': 'multipart/form-data; boundary=late', 'content-length': String(body.length) },
      });
      let status = 0;
      let writeError: string | undefined;
      req.on('error', (error) => {
        writeError = error.message;
        resolve({ status, writeError });
      });
      req.on('response', (res) => {
        status = res.statusCode ?? 0;
        res.resume();
        // The answer is in; a slow uploader only now sends the rest of its body, and is
        // done once its connection closes (an error writing it would have come first).
        req.once('close', () => resolve({ status, writeError }));
        req.end(body.subarray(64 * 1024));
      });
      req.write(body.subarray(0, 64 * 1024));
    });
    expect(outcome).toEqual({ status: 401, writeError: undefined });
    expect((await h.call('GET', '/api/v1/status')).status).toBe(200);
  });

  it('deleting a user while one of their deploys runs leaves no half-deleted tree', async () => {
    const doomed = await h.createUser('doomed');
    expect((await h.deploy(doomed, 'site', versionedSite('d1', 20))).status).toBe(200);
    const archive = versionedSite('d2', 500, 256);
    const upload = slowUpload(h.url, doomed, 'site', archive, Math.floor(archive.length / 2));
    await until(async () => (await staging()).length === 1, 'a staging area');
    const del = await h.call('DELETE', '/api/v1/auth', { token: 'admin-token-for-tests-0123456789abcdef', json: { username: 'doomed', files: 'delete' } });
    expect(del.status).toBe(200);
    upload.finish();
    const r = await upload.response;
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ status: 'error', error: 'unauthorized' });
    await expect(readdir(join(h.docsRoot, 'doomed'))).rejects.toThrow(/ENOENT/);
    await expect(readdir(join(h.deploysRoot, 'doomed'))).rejects.toThrow(/ENOENT/);
    expect(await staging()).toEqual([]);
  });

  it('a deploy racing another of the same project never prunes what goes live', async () => {
    const uploads = Array.from({ length: 8 }, (_, i) => h.deploy(token, 'busy', versionedSite(`b${i}`, 30)));
    const results = await Promise.all(uploads);
    expect(results.every((r) => r.status === 200)).toBe(true);
    const newest = results.map((r) => r.body.release as string).sort().at(-1)!;
    const target = await readlink(join(h.docsRoot, 'uploader/busy'));
    expect(target).toBe(`${join(h.deploysRoot, 'uploader/busy', newest)}/`);
    expect(await readdir(join(h.deploysRoot, 'uploader/busy'))).toHaveLength(5);
    expect(await releaseVersion(target, 30)).toMatch(/^b\d$/);
  });
});
