import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOOKUP_MS, NodeDnsTxt } from '../../src/adapters/dns/node-dns-txt.js';
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
    const started = performance.now();
    const lookup = await new NodeDnsTxt([silent.address]).lookup('_sitedrop-challenge.docs.example.com');
    expect(lookup).toEqual({ failure: 'ETIMEOUT' });
    expect(silent.asked.length).toBeGreaterThan(0);
    // The contract's "a few seconds", with room for a loaded machine: not a speed target.
    expect(performance.now() - started).toBeLessThan(LOOKUP_MS + 2000);
  }, 20_000);

  it('bounds the whole lookup, however many silent servers it is given', async () => {
    const more = await Promise.all([startDnsResponder({ silent: true }), startDnsResponder({ silent: true })]);
    try {
      const started = performance.now();
      const lookup = await new NodeDnsTxt([silent.address, ...more.map((m) => m.address)]).lookup('_sitedrop-challenge.docs.example.com');
      expect(lookup).toEqual({ failure: 'ETIMEOUT' });
      // Without the deadline, c-ares tries the three in turn, twice each: about 13.5 s.
      expect(performance.now() - started).toBeLessThan(LOOKUP_MS + 2000);
    } finally {
      await Promise.all(more.map((m) => m.close()));
    }
  }, 30_000);

  it('answers lookups made at once each on their own: one cut at its deadline leaves the other', async () => {
    dns.txt.set('_sitedrop-challenge.both.example.com', ['v']);
    dns.unanswered.add('_sitedrop-challenge.dropped.example.com');
    // Two servers: the slow lookup outlasts the deadline (c-ares alone would take about 9 s).
    const txt = new NodeDnsTxt([dns.address, silent.address]);
    const started = performance.now();
    const [slow, fast] = await Promise.all([
      txt.lookup('_sitedrop-challenge.dropped.example.com').then((lookup) => ({ lookup, ms: performance.now() - started })),
      // Begun a second before that deadline and answered only on its retry, after it.
      new Promise((resolve) => setTimeout(resolve, LOOKUP_MS - 1000)).then(() => {
        dns.unanswered.add('_sitedrop-challenge.both.example.com');
        setTimeout(() => dns.unanswered.delete('_sitedrop-challenge.both.example.com'), 1500);
        return txt.lookup('_sitedrop-challenge.both.example.com').then((lookup) => ({ lookup, ms: performance.now() - started }));
      }),
    ]);
    expect(slow.lookup).toEqual({ failure: 'ETIMEOUT' });
    expect(slow.ms).toBeGreaterThanOrEqual(LOOKUP_MS - 100);
    expect(fast.lookup).toEqual({ records: ['v'] });
    expect(fast.ms).toBeGreaterThan(LOOKUP_MS);
  }, 20_000);
});
