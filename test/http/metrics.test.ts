import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';

describe('GET /api/v1/metrics (Prometheus text, admin token)', () => {
  let h: Harness;
  const scrape = async (token = ADMIN_TOKEN) => {
    const r = await fetch(`${h.url}/api/v1/metrics`, { headers: { authorization: `Bearer ${token}` } });
    return { status: r.status, type: r.headers.get('content-type') ?? '', text: await r.text() };
  };

  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('shows a deploy in its counters and histograms, requests by route pattern, and process metrics', async () => {
    const token = await h.createUser('metered');
    expect((await h.deploy(token, 'site', tgz([file('index.html', 'hi'), file('a.css', 'x')]))).status).toBe(200);
    expect((await h.deploy(token, 'site', tgz([file('../escape')]))).status).toBe(500);
    await h.call('GET', '/api/v1/projects/site/releases', { token });
    const m = await scrape();
    expect(m.status).toBe(200);
    expect(m.type).toMatch(/^text\/plain/);
    expect(m.text).toContain('sitedrop_deploys_total{outcome="success"} 1');
    expect(m.text).toContain('sitedrop_deploys_total{outcome="failed"} 1');
    expect(m.text).toContain('sitedrop_deploy_duration_seconds_count 1');
    expect(m.text).toContain('sitedrop_deploy_files_bucket{le="10"} 1');
    expect(m.text).toContain('sitedrop_deploy_unpacked_bytes_sum 3');
    expect(m.text).toContain('sitedrop_deploys_in_flight 0');
    expect(m.text).toContain('sitedrop_http_requests_total{method="POST",route="/api/v1/deploy",status="200"} 1');
    expect(m.text).toContain('sitedrop_http_requests_total{method="GET",route="/api/v1/projects/:project/releases",status="200"} 1');
    expect(m.text).toMatch(/sitedrop_process_cpu_user_seconds_total \d/);
    expect(m.text).not.toContain(token);
  });

  it('needs the admin token, and says so in JSON', async () => {
    const r = await fetch(`${h.url}/api/v1/metrics`);
    expect(r.status).toBe(401);
    expect(await r.json()).toEqual({ status: 'error', error: 'invalid admin token' });
  });
});
