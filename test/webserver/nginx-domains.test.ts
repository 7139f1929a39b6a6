import { chmod, readdir } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsResponder, type DnsResponder } from '../support/dns-responder.js';
import { startNginx, type RunningNginx } from '../support/nginx.js';
import { SERVICE_BACKENDS, type Backend } from '../support/service-backends.js';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';
import { domainSites } from './domain-sites.js';


describe.each(SERVICE_BACKENDS)('custom domains served by a real nginx running the generated configuration (%s)', (_name, open) => {
  let h: Harness;
  let backend: Backend;
  let dns: DnsResponder;
  let nginx: RunningNginx;
  let ann: string;
  let bob: string;

  /** A GET through nginx with this Host header, as a browser at that domain would send it. */
  const get = (host: string, path: string) =>
    new Promise<{ status: number; body: string; location: string | undefined; headers: Record<string, unknown> }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: nginx.port, path, headers: { host } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, location: res.headers.location, headers: res.headers }));
      });
      req.on('error', reject).end();
    });
  const { own, deploy } = domainSites(() => h, () => dns);

  beforeAll(async () => {
    backend = await open();
    dns = await startDnsResponder();
    h = await startHarness({ ...backend.env, DNS_SERVERS: dns.address });
    // nginx's workers run as nobody: they must reach the releases and the host links.
    await chmod(h.root, 0o755);
    nginx = await startNginx(h);
    ann = await h.createUser('ann');
    bob = await h.createUser('bob');
  });
  afterAll(async () => {
    await nginx?.stop();
    await h.close();
    await dns.close();
    await backend.drop();
  });

  it("serves a verified domain's live site at its root, in any case, with the site's rules as if at /", async () => {
    await deploy(ann, 'docs', {
      'index.html': 'ann docs home',
      'new.html': 'the new page',
      '404.html': 'ann docs lost',
      'app/index.html': 'the app',
      _redirects: '/old /new.html\n/spa/* /app/index.html 200\n',
      _headers: '/*\n  X-Site: ann-docs\n',
    });
    await own(ann, 'docs', 'docs.example.com');
    expect(await get('docs.example.com', '/')).toMatchObject({ status: 200, body: 'ann docs home' });
    expect(await get('DOCS.Example.COM:80', '/new')).toMatchObject({ status: 200, body: 'the new page' });
    expect(await get('docs.example.com.', '/new.html')).toMatchObject({ status: 200, body: 'the new page' });
    expect(await get('docs.example.com', '/old?x=1')).toMatchObject({ status: 301, location: '/new.html?x=1' });
    expect(await get('docs.example.com', '/spa/deep/route')).toMatchObject({ status: 200, body: 'the app' });
    expect(await get('docs.example.com', '/app')).toMatchObject({ status: 301, location: '/app/' });
    expect(await get('docs.example.com', '/missing')).toMatchObject({ status: 404, body: 'ann docs lost' });
    expect((await get('docs.example.com', '/')).headers['x-site']).toBe('ann-docs');
    for (const hidden of ['/_redirects', '/_headers', '/.sitedrop/head.json']) expect((await get('docs.example.com', hidden)).status, hidden).toBe(404);
    // The path address still serves the same site, and PUBLIC_BASE's own host is not a domain.
    expect(await get(`127.0.0.1:${nginx.port}`, '/ann/docs/old')).toMatchObject({ status: 301, location: '/ann/docs/new.html' });
  });

  it("encodes what a placeholder or splat takes from the request into a Location: no header of the visitor's making, no other host", async () => {
    await deploy(ann, 'links', { 'index.html': 'links', _redirects: '/u/:name /users/:name 302\n/strip/* /:splat 301\n/go/* https://example.com/:splat 302\n' });
    await own(ann, 'links', 'links.example.com');
    const injected = await get('links.example.com', '/u/x%0d%0aSet-Cookie:%20session=attacker%0d%0aX-Injected:%201');
    expect(injected).toMatchObject({ status: 302, location: '/users/x%0D%0ASet-Cookie%3A%20session%3Dattacker%0D%0AX-Injected%3A%201' });
    expect(injected.headers['set-cookie']).toBeUndefined();
    expect(injected.headers['x-injected']).toBeUndefined();
    // A lone CR, which the path address's own pattern lets through.
    expect((await get(`127.0.0.1:${nginx.port}`, '/ann/links/u/x%0dX-Injected:%201')).location).toBe('/ann/links/users/x%0DX-Injected%3A%201');
    // Never a Location a browser reads as another host's: '/\\host', '//host'.
    expect((await get('links.example.com', '/strip/%5Cevil.example')).location).toBe('/%5Cevil.example');
    expect((await get('links.example.com', '/strip/%2F%2Fevil.example')).location).toMatch(/^\/[^/\\]/);
    expect((await get('links.example.com', '/strip/%09/evil.example')).location).toBe('/%09/evil.example');
    expect((await get('links.example.com', '/strip/caf%C3%A9/a%20b%3Fc%23d')).location).toBe('/caf%C3%A9/a%20b%3Fc%23d');
    expect(await get('links.example.com', '/go/a%0dX:%201')).toMatchObject({ status: 302, location: 'https://example.com/a%0DX%3A%201' });
    // Bytes that are not UTF-8 go back as they came.
    expect((await get('links.example.com', '/strip/%FF')).location).toBe('/%FF');
  });

  it('shows a new deploy, a rollback and a promote at once; never a preview', async () => {
    const first = await deploy(ann, 'moving', { 'index.html': 'v1' });
    await own(ann, 'moving', 'moving.example.com');
    expect(await get('moving.example.com', '/')).toMatchObject({ body: 'v1' });
    await deploy(ann, 'moving', { 'index.html': 'v2' });
    expect(await get('moving.example.com', '/')).toMatchObject({ body: 'v2' });
    expect((await h.call('POST', '/api/v1/projects/moving/rollback', { token: ann, json: { release: first } })).status).toBe(200);
    expect(await get('moving.example.com', '/')).toMatchObject({ body: 'v1' });
    await deploy(ann, 'moving', { 'index.html': 'the preview', 'only-in-preview.html': 'p' }, 'pr-1');
    expect(await get('moving.example.com', '/')).toMatchObject({ body: 'v1' });
    expect((await get('moving.example.com', '/only-in-preview.html')).status).toBe(404);
    expect((await get('moving.example.com', '/_previews/ann/moving/pr-1/')).status).toBe(404);
    expect((await h.call('POST', '/api/v1/projects/moving/previews/pr-1/promote', { token: ann })).status).toBe(200);
    expect(await get('moving.example.com', '/')).toMatchObject({ status: 200, body: 'the preview' });
  });

  it('serves no site for an unknown, an unverified or a removed domain, nor after its project or user is deleted', async () => {
    await deploy(bob, 'site', { 'index.html': 'bob site' });
    expect((await get('unknown.example.com', '/')).status).toBe(404);
    expect((await h.call('POST', '/api/v1/projects/site/domains', { token: bob, json: { domain: 'pending.example.com' } })).status).toBe(200);
    expect((await get('pending.example.com', '/')).status).toBe(404);
    await own(bob, 'site', 'bob.example.com');
    expect(await get('bob.example.com', '/')).toMatchObject({ status: 200, body: 'bob site' });
    expect((await h.call('DELETE', '/api/v1/projects/site/domains/bob.example.com', { token: bob })).status).toBe(200);
    expect((await get('bob.example.com', '/')).status).toBe(404);
    await own(bob, 'site', 'bob.example.com');
    expect((await h.call('DELETE', '/api/v1/projects/site', { token: bob })).status).toBe(200);
    expect((await get('bob.example.com', '/')).status).toBe(404);
    await deploy(bob, 'site', { 'index.html': 'bob again' });
    expect((await get('bob.example.com', '/')).status).toBe(404);
    await own(bob, 'site', 'bob.example.com');
    expect(await get('bob.example.com', '/')).toMatchObject({ status: 200, body: 'bob again' });
    expect((await h.call('DELETE', '/api/v1/auth', { token: ADMIN_TOKEN, json: { username: 'bob', files: 'persist' } })).status).toBe(200);
    expect((await get('bob.example.com', '/')).status).toBe(404);
    // Hosts no one could claim find nothing either, whatever they try.
    for (const host of ['..', 'domains', '_', `127.0.0.1:${nginx.port}x`]) expect((await get(host, '/')).status, host).not.toBe(200);
    expect(await readdir(join(h.root, 'domains'))).not.toContain('bob.example.com');
    expect(await nginx.errors()).not.toMatch(/\[(alert|emerg|crit)\]/);
  });
});
