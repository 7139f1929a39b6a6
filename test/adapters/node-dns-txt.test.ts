import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeDnsTxt } from '../../src/adapters/dns/node-dns-txt.js';
import { startDnsResponder, type DnsResponder } from '../support/dns-responder.js';

describe('TXT lookups through node:dns at DNS_SERVERS', () => {
  let dns: DnsResponder;
  let silent: DnsResponder;
  beforeAll(async () => {
    dns = await startDnsResponder();
    silent = await startDnsResponder({ silent: true });
  });
  afterAll(async () => {
    await dns.close();
    await silent.close();
  });

  it('reads every TXT record at a name, a long one joined from its strings', async () => {
    const long = 'x'.repeat(300);
    dns.txt.set('_sitedrop-challenge.docs.example.com', ['first value', long, 'ünïcode']);
    const lookup = await new NodeDnsTxt([dns.address]).lookup('_sitedrop-challenge.docs.example.com');
    expect(lookup).toEqual({ records: ['first value', long, 'ünïcode'] });
    expect(dns.asked).toContain('_sitedrop-challenge.docs.example.com');
  });

  it('finds no records at an unknown name, or a name with none', async () => {
    dns.txt.set('empty.example.com', []);
    expect(await new NodeDnsTxt([dns.address]).lookup('nothing.example.com')).toEqual({ records: [] });
    expect(await new NodeDnsTxt([dns.address]).lookup('empty.example.com')).toEqual({ records: [] });
  });

  it('gives up on a server that never answers within a few seconds, saying so', async () => {
    const lookup = await new NodeDnsTxt([silent.address]).lookup('_sitedrop-challenge.docs.example.com');
    expect(lookup).toEqual({ failure: 'ETIMEOUT' });
    expect(silent.asked.length).toBeGreaterThan(0);
  }, 20_000);
});
