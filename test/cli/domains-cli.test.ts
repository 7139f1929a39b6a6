import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsResponder, type DnsResponder } from '../support/dns-responder.js';
import { startHarness, type Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';
import { CLI, runNode, type Run } from './run-cli.js';

describe('sitedrop domains add|list|verify|remove, the built CLI against the real service', () => {
  let h: Harness;
  let dns: DnsResponder;
  let work: string;
  let token: string;
  const sitedrop = (args: string[]): Promise<Run> => runNode([CLI, ...args], { env: { SITEDROP_URL: h.url, SITEDROP_TOKEN: token, SITEDROP_CACHE_DIR: join(work, 'cache') } });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'sitedrop-cli-domains-'));
    dns = await startDnsResponder();
    h = await startHarness({ DNS_SERVERS: dns.address });
    token = await h.createUser('ann');
    expect((await h.deploy(token, 'docs', tgz([file('index.html', 'hi')]))).status).toBe(200);
  });
  afterAll(async () => {
    await h.close();
    await dns.close();
    await rm(work, { recursive: true, force: true });
  });

  it('adds a domain and prints its TXT record, verifies it once published, lists and removes it', async () => {
    const added = await sitedrop(['domains', 'add', 'docs', 'Docs.Example.com']);
    expect(added.code, added.stderr).toBe(0);
    const [, value] = /^_sitedrop-challenge\.docs\.example\.com\. TXT "(\w{16,})"\n$/.exec(added.stdout) ?? [];
    expect(value).toBeDefined();
    expect(added.stderr).toBe('publish this record, then: sitedrop domains verify docs docs.example.com\n');

    expect(await sitedrop(['domains', 'list', 'docs'])).toMatchObject({ code: 0, stdout: `docs.example.com  unverified  _sitedrop-challenge.docs.example.com. TXT "${value}"\n` });
    const early = await sitedrop(['domains', 'verify', 'docs', 'docs.example.com']);
    expect(early).toMatchObject({ code: 1, stderr: 'sitedrop: domain not verified: no TXT record at _sitedrop-challenge.docs.example.com\n' });

    dns.txt.set('_sitedrop-challenge.docs.example.com', [value!]);
    expect(await sitedrop(['domains', 'verify', 'docs', 'docs.example.com'])).toMatchObject({ code: 0, stdout: 'verified docs.example.com\n' });
    expect((await sitedrop(['domains', 'list', 'docs'])).stdout).toMatch(/^docs\.example\.com {2}verified \d{4}-\d\d-\d\dT/);
    const json = JSON.parse((await sitedrop(['domains', 'list', 'docs', '--json'])).stdout);
    expect(json.domains[0]).toMatchObject({ domain: 'docs.example.com', verified: true });

    expect(await sitedrop(['domains', 'remove', 'docs', 'docs.example.com'])).toMatchObject({ code: 0, stdout: 'removed docs.example.com\n' });
    expect(await sitedrop(['domains', 'remove', 'docs', 'docs.example.com'])).toMatchObject({ code: 1, stderr: 'sitedrop: domain not found\n' });
    expect(await sitedrop(['domains', 'add', 'docs', '127.0.0.1'])).toMatchObject({ code: 1, stderr: 'sitedrop: invalid domain\n' });
  });
});
