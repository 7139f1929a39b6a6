import { readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsResponder, type DnsResponder } from '../support/dns-responder.js';
import { SERVICE_BACKENDS, type Backend } from '../support/service-backends.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';

const site = (text: string) => tgz([file('index.html', text)]);

describe.each(SERVICE_BACKENDS)('custom domains through the real API (%s, a DNS server in the test)', (_name, open) => {
  let h: Harness;
  let backend: Backend;
  let dns: DnsResponder;
  let ann: string;
  let bob: string;
  const domainsRoot = () => join(h.root, 'domains');
  const linkOf = (domain: string) => readlink(join(domainsRoot(), domain)).catch(() => undefined);

  const add = (token: string, project: string, domain: unknown) => h.call('POST', `/api/v1/projects/${project}/domains`, { token, json: { domain } });
  const verify = (token: string, project: string, domain: string) => h.call('POST', `/api/v1/projects/${project}/domains/${domain}/verify`, { token });
  const remove = (token: string, project: string, domain: string) => h.call('DELETE', `/api/v1/projects/${project}/domains/${domain}`, { token });
  const list = async (token: string, project: string) => {
    const r = await h.call('GET', `/api/v1/projects/${project}/domains`, { token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.domains as { domain: string; verified: boolean; verifiedAt: string | null; verification: { value: string } }[];
  };
  const check = (domain: string) => h.call('GET', `/api/v1/domains/check?domain=${encodeURIComponent(domain)}`);
  /** Claims, publishes the TXT record, verifies. */
  const own = async (token: string, project: string, domain: string) => {
    const added = await add(token, project, domain);
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const verification = added.body.verification as { name: string; value: string };
    dns.txt.set(verification.name, [verification.value]);
    const verified = await verify(token, project, domain);
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
    return verified;
  };

  beforeAll(async () => {
    backend = await open();
    dns = await startDnsResponder();
    h = await startHarness({ ...backend.env, DNS_SERVERS: dns.address, DOMAINS_MAX: '3', PREVIEW_BASE: 'https://previews.example.test' });
    ann = await h.createUser('ann');
    bob = await h.createUser('bob');
    for (const [token, project] of [[ann, 'docs'], [ann, 'blog'], [ann, 'full'], [bob, 'docs']] as const) {
      expect((await h.deploy(token, project, site(`${project}`))).status).toBe(200);
    }
  });
  afterAll(async () => {
    await h.close();
    await dns.close();
    await backend.drop();
  });

  it('adds a domain, lower-cased without its trailing dot, with a challenge; the same again answers the same', async () => {
    const r = await add(ann, 'docs', 'Docs.Example.COM.');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      status: 'ok',
      domain: 'docs.example.com',
      verified: false,
      verification: { type: 'TXT', name: '_sitedrop-challenge.docs.example.com', value: expect.stringMatching(/^.{16,}$/) },
    });
    expect((await add(ann, 'docs', 'docs.example.com')).body).toEqual(r.body);
    const bobs = await add(bob, 'docs', 'docs.example.com');
    expect(bobs.status).toBe(200);
    expect((bobs.body.verification as { value: string }).value).not.toBe((r.body.verification as { value: string }).value);
  });

  it('refuses bad names with 400 invalid domain, an unknown project with 404, and changes nothing', async () => {
    const refused = [
      'com', '1.2.3.4', '[::1]', '*.example.com', 'localhost', 'a..b.com', '-a.example.com', `${'a'.repeat(64)}.com`,
      `${'abcdefghi.'.repeat(26)}com`, 'sites.example.test', 'PREVIEWS.example.test.', 'a_b.example.com', 42, null, undefined,
    ];
    for (const domain of refused) {
      expect(await add(ann, 'blog', domain), String(domain)).toMatchObject({ status: 400, body: { status: 'error', error: 'invalid domain' } });
    }
    expect(await add(ann, 'nothing', 'n.example.com')).toMatchObject({ status: 404, body: { error: 'project not found' } });
    expect(await add(ann, 'Bad!', 'n.example.com')).toMatchObject({ status: 400, body: { error: 'invalid project name format' } });
    expect(await h.call('POST', '/api/v1/projects/blog/domains', { token: ann, body: '[1]', headers: { 'content-type': 'application/json' } })).toMatchObject({ status: 400, body: { error: 'invalid request body' } });
    expect(await list(ann, 'blog')).toEqual([]);
    expect(await h.call('GET', '/api/v1/projects/nothing/domains', { token: ann })).toMatchObject({ status: 404, body: { error: 'project not found' } });
  });

  it('verifies on the TXT record, serves the link, and says what it found when the record is wrong or missing', async () => {
    const added = await add(ann, 'blog', 'blog.example.com');
    const value = (added.body.verification as { value: string }).value;
    const missing = await verify(ann, 'blog', 'blog.example.com');
    expect(missing).toMatchObject({ status: 409, body: { error: 'domain not verified: no TXT record at _sitedrop-challenge.blog.example.com' } });
    dns.txt.set('_sitedrop-challenge.blog.example.com', ['wrong\nvalue "quoted"', 'y'.repeat(500)]);
    const wrong = await verify(ann, 'blog', 'blog.example.com');
    expect(wrong.status).toBe(409);
    expect(wrong.body.error).toBe(`domain not verified: found 2 TXT record(s) at _sitedrop-challenge.blog.example.com, none the challenge: "wrong\\nvalue \\"quoted\\"", "${'y'.repeat(64)}…"`);
    expect(await linkOf('blog.example.com')).toBeUndefined();
    expect(await check('blog.example.com')).toMatchObject({ status: 404, body: { error: 'domain not found' } });
    dns.txt.set('_sitedrop-challenge.blog.example.com', ['v=spf1 -all', value]);
    const ok = await verify(ann, 'blog', 'BLOG.example.com');
    expect(ok).toMatchObject({ status: 200, body: { status: 'ok', domain: 'blog.example.com', verified: true } });
    expect(await linkOf('blog.example.com')).toBe(join(h.docsRoot, 'ann', 'blog'));
    expect(await check('blog.example.com')).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await check('Blog.Example.com.')).toMatchObject({ status: 200 });
    const listed = await list(ann, 'blog');
    expect(listed).toEqual([{ domain: 'blog.example.com', verified: true, verifiedAt: expect.any(String), verification: { type: 'TXT', name: '_sitedrop-challenge.blog.example.com', value } }]);
  });

  it("one user's verified domain: another can neither claim it, verify it, remove it, nor see it", async () => {
    await add(bob, 'docs', 'shared.example.com');
    await own(ann, 'docs', 'shared.example.com');
    expect(await add(bob, 'docs', 'shared.example.com')).toMatchObject({ status: 409, body: { error: 'domain already in use' } });
    expect(await add(ann, 'blog', 'shared.example.com')).toMatchObject({ status: 409, body: { error: 'domain already in use' } });
    expect(await verify(bob, 'docs', 'shared.example.com')).toMatchObject({ status: 409, body: { error: 'domain already in use' } });
    expect((await list(bob, 'docs')).map((d) => [d.domain, d.verified])).toEqual([['docs.example.com', false], ['shared.example.com', false]]);
    expect(await remove(bob, 'docs', 'unknown.example.com')).toMatchObject({ status: 404, body: { error: 'domain not found' } });
    // Bob's own unverified claim goes; Ann's verified one stays, and keeps serving.
    expect(await remove(bob, 'docs', 'shared.example.com')).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await remove(bob, 'docs', 'shared.example.com')).toMatchObject({ status: 404, body: { error: 'domain not found' } });
    expect(await linkOf('shared.example.com')).toBe(join(h.docsRoot, 'ann', 'docs'));
    expect(await check('shared.example.com')).toMatchObject({ status: 200 });
    expect((await list(bob, 'docs')).map((d) => d.domain)).not.toContain('shared.example.com');
  });

  it('holds DOMAINS_MAX per project: one more is 409 too many domains, the same one again is not', async () => {
    for (const n of [1, 2, 3]) expect((await add(ann, 'full', `f${n}.example.com`)).status).toBe(200);
    expect(await add(ann, 'full', 'f4.example.com')).toMatchObject({ status: 409, body: { error: 'too many domains' } });
    expect((await add(ann, 'full', 'f3.example.com')).status).toBe(200);
    expect(await list(ann, 'full')).toHaveLength(3);
  });

  it('removes a verified domain: the link goes, the check says 404, and another project may claim it', async () => {
    await own(ann, 'blog', 'moving.example.com');
    expect(await remove(ann, 'blog', 'Moving.example.com')).toMatchObject({ status: 200 });
    expect(await linkOf('moving.example.com')).toBeUndefined();
    expect(await check('moving.example.com')).toMatchObject({ status: 404 });
    await own(bob, 'docs', 'moving.example.com');
    expect(await linkOf('moving.example.com')).toBe(join(h.docsRoot, 'bob', 'docs'));
  });

  it('refuses deploy keys (401) on every domain route, and takes no token on the check', async () => {
    const key = await h.call('POST', '/api/v1/projects/docs/keys', { token: ann, json: { name: 'ci', scope: 'deploy' } });
    const token = key.body.token as string;
    for (const reply of [await add(token, 'docs', 'k.example.com'), await verify(token, 'docs', 'docs.example.com'), await remove(token, 'docs', 'docs.example.com'), await h.call('GET', '/api/v1/projects/docs/domains', { token })]) {
      expect(reply).toMatchObject({ status: 401, body: { error: 'unauthorized' } });
    }
    expect(await check('')).toMatchObject({ status: 404 });
    expect((await h.call('GET', '/api/v1/domains/check')).status).toBe(404);
    expect((await h.call('POST', '/api/v1/domains/check?domain=blog.example.com')).status).toBe(405);
  });

  it('a failing DNS server is a 409 naming the failure, not a hang', async () => {
    const silent = await startDnsResponder({ silent: true });
    const other = await startHarness({ DNS_SERVERS: silent.address });
    try {
      const token = await other.createUser('cat');
      await other.deploy(token, 'site', site('x'));
      await other.call('POST', '/api/v1/projects/site/domains', { token, json: { domain: 'cat.example.com' } });
      const r = await other.call('POST', '/api/v1/projects/site/domains/cat.example.com/verify', { token });
      expect(r).toMatchObject({ status: 409, body: { error: 'domain not verified: the lookup of TXT records at _sitedrop-challenge.cat.example.com failed: ETIMEOUT' } });
    } finally {
      await other.close();
      await silent.close();
    }
  }, 30_000);

  it('deleting a project, then a user (files kept), removes their domains and links, and frees them', async () => {
    await own(ann, 'full', 'f1.example.com');
    expect(await h.call('DELETE', '/api/v1/projects/full', { token: ann })).toMatchObject({ status: 200 });
    expect(await linkOf('f1.example.com')).toBeUndefined();
    expect(await check('f1.example.com')).toMatchObject({ status: 404 });
    expect((await h.deploy(ann, 'full', site('again'))).status).toBe(200);
    expect(await list(ann, 'full')).toEqual([]);
    expect(await check('f1.example.com')).toMatchObject({ status: 404 });
    expect(await h.call('DELETE', '/api/v1/auth', { token: 'admin-token-for-tests-0123456789abcdef', json: { username: 'ann', files: 'persist' } })).toMatchObject({ status: 200 });
    for (const domain of ['blog.example.com', 'shared.example.com', 'docs.example.com']) {
      expect(await linkOf(domain), domain).toBeUndefined();
      expect(await check(domain), domain).toMatchObject({ status: 404 });
    }
    expect(await linkOf('moving.example.com')).toBe(join(h.docsRoot, 'bob', 'docs'));
    await own(bob, 'docs', 'shared.example.com');
  });
});
