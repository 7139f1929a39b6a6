import { mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/adapters/config/config.js';
import { runToExit, startChild } from '../support/child-service.js';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c).toEqual({
      port: 8080,
      host: '0.0.0.0',
      adminToken: undefined,
      dataDir: resolve('var'),
      docsRoot: resolve('var/docs'),
      deploysRoot: resolve('var/deploys'),
      previewsRoot: resolve('var/previews'),
      publicBase: 'http://localhost:8081',
      previewBase: 'http://localhost:8081/_previews',
      previewTtlSeconds: 604_800,
      previewsMax: 20,
      deploySessionsMax: 8,
      deploySessionSeconds: 3600,
      databaseUrl: `sqlite:${resolve('var/sitedrop.db')}`,
      databasePoolMax: 10,
      maxUploadBytes: 104_857_600,
      releasesKeep: 5,
      maxExtractedBytes: 1_073_741_824,
      maxFiles: 50_000,
      userMaxBytes: undefined,
      replicaId: expect.stringMatching(/^[A-Za-z0-9.-]{1,64}$/),
      logLevel: 'info',
      logFormat: 'json',
      precompress: 'on',
      shutdownGraceMs: 30_000,
      deploysMaxConcurrent: 2,
      deploysMaxQueued: 64,
      uploadIdleSeconds: 30,
      uploadStallSeconds: 5,
      deployTurnSeconds: 60,
      domainsRoot: resolve('var/domains'),
      domainsMax: 20,
      dnsServers: undefined,
      domainsHttpsPort: 443,
      domainsTls: 'acme',
    });
  });

  it('reads the custom domain settings: DNS servers as ip or ip:port, the limit, the HTTPS port and TLS', () => {
    const c = loadConfig({ DNS_SERVERS: '127.0.0.1:5353, 9.9.9.9,[::1]:53,::1', DOMAINS_MAX: '3', DOMAINS_ROOT: '/srv/domains', DOMAINS_HTTPS_PORT: '8443', DOMAINS_TLS: 'internal' });
    expect(c).toMatchObject({ dnsServers: ['127.0.0.1:5353', '9.9.9.9', '[::1]:53', '::1'], domainsMax: 3, domainsRoot: '/srv/domains', domainsHttpsPort: 8443, domainsTls: 'internal' });
    for (const bad of ['dns.example.com', '127.0.0.1:0', '127.0.0.1:70000', '1.2.3.4,', '[1.2.3.4]:53', '127.0.0.1:53x']) {
      expect(() => loadConfig({ DNS_SERVERS: bad }), bad).toThrow(/^DNS_SERVERS must be comma-separated IP addresses, each with an optional :port/);
    }
    expect(() => loadConfig({ DOMAINS_MAX: '0' })).toThrow(/^DOMAINS_MAX must be a whole number from 1 to 10000/);
    expect(() => loadConfig({ DOMAINS_HTTPS_PORT: '0' })).toThrow(/^DOMAINS_HTTPS_PORT must be a whole number from 1 to 65535/);
    expect(() => loadConfig({ DOMAINS_TLS: 'letsencrypt' })).toThrow(/^DOMAINS_TLS must be one of acme, internal/);
  });

  it('reads the preview settings; PREVIEW_BASE follows PUBLIC_BASE unless set', () => {
    const c = loadConfig({ PUBLIC_BASE: 'https://sites.example.com/', PREVIEWS_ROOT: '/srv/previews', PREVIEW_TTL_SECONDS: '3600', PREVIEWS_MAX: '3' });
    expect([c.previewsRoot, c.previewBase, c.previewTtlSeconds, c.previewsMax]).toEqual(['/srv/previews', 'https://sites.example.com/_previews', 3600, 3]);
    expect(loadConfig({ PREVIEW_BASE: 'https://previews.example.com/' }).previewBase).toBe('https://previews.example.com');
    expect(() => loadConfig({ PREVIEW_BASE: 'ftp://x' })).toThrow(/^PREVIEW_BASE must be an absolute http\(s\) URL/);
    expect(() => loadConfig({ PREVIEW_TTL_SECONDS: '0' })).toThrow(/^PREVIEW_TTL_SECONDS must be a whole number from 1/);
    expect(() => loadConfig({ PREVIEWS_MAX: '0' })).toThrow(/^PREVIEWS_MAX must be a whole number from 1 to 10000/);
  });

  it('reads the deploy queue and the upload idle time; 0 queues nothing, 0 never times out', () => {
    const c = loadConfig({ DEPLOYS_MAX_CONCURRENT: '1', DEPLOYS_MAX_QUEUED: '0', UPLOAD_IDLE_SECONDS: '0' });
    expect([c.deploysMaxConcurrent, c.deploysMaxQueued, c.uploadIdleSeconds]).toEqual([1, 0, 0]);
  });

  it('reads the upload stall time on its own; 0 never takes a slot back', () => {
    expect(loadConfig({ UPLOAD_STALL_SECONDS: '2' })).toMatchObject({ uploadStallSeconds: 2, uploadIdleSeconds: 30 });
    expect(loadConfig({ UPLOAD_STALL_SECONDS: '0', UPLOAD_IDLE_SECONDS: '0' })).toMatchObject({ uploadStallSeconds: 0, uploadIdleSeconds: 0 });
  });

  it('reads the turn a user may hold more than its share of the slots: 60 s unless set, 0 never takes one back', () => {
    expect(loadConfig({}).deployTurnSeconds).toBe(60);
    expect(loadConfig({ DEPLOY_TURN_SECONDS: '110' }).deployTurnSeconds).toBe(110);
    expect(loadConfig({ DEPLOY_TURN_SECONDS: '0' }).deployTurnSeconds).toBe(0);
  });

  it('derives the roots from DATA_DIR and strips a trailing slash from PUBLIC_BASE', () => {
    const c = loadConfig({ DATA_DIR: '/srv/sd', PUBLIC_BASE: 'https://docs.example.com/' });
    expect(c.docsRoot).toBe('/srv/sd/docs');
    expect(c.deploysRoot).toBe('/srv/sd/deploys');
    expect(c.databaseUrl).toBe('sqlite:/srv/sd/sitedrop.db');
    expect(c.publicBase).toBe('https://docs.example.com');
  });

  it.each([
    ['PORT', '80a'],
    ['PORT', '70000'],
    ['RELEASES_KEEP', '0'],
    ['MAX_UPLOAD_BYTES', '-5'],
    ['MAX_FILES', '1.5'],
    ['MAX_EXTRACTED_BYTES', 'lots'],
    ['PUBLIC_BASE', 'not a url'],
    ['PUBLIC_BASE', 'ftp://x'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_POOL_MAX', '0'],
    ['ADMIN_TOKEN', 'short'],
    ['SHUTDOWN_GRACE_SECONDS', '1h'],
    ['REPLICA_ID', 'a+b'],
    ['LOG_LEVEL', 'loud'],
    ['LOG_FORMAT', 'xml'],
    ['PRECOMPRESS', 'yes'],
    ['USER_MAX_BYTES', '0'],
    ['USER_MAX_BYTES', '-1'],
    ['USER_MAX_BYTES', '1e9'],
    ['USER_MAX_BYTES', '10GB'],
    ['USER_MAX_BYTES', '99999999999999999999'],
    ['DEPLOYS_MAX_CONCURRENT', '0'],
    ['DEPLOYS_MAX_CONCURRENT', 'many'],
    ['DEPLOYS_MAX_QUEUED', '-1'],
    ['UPLOAD_IDLE_SECONDS', '2.5'],
    ['UPLOAD_IDLE_SECONDS', '3601'],
    ['UPLOAD_STALL_SECONDS', '1.5'],
    ['UPLOAD_STALL_SECONDS', '-1'],
    ['UPLOAD_STALL_SECONDS', '3601'],
    ['UPLOAD_STALL_SECONDS', 'soon'],
    ['DEPLOY_TURN_SECONDS', '-1'],
    ['DEPLOY_TURN_SECONDS', '111'],
    ['DEPLOY_TURN_SECONDS', '1.5'],
  ])('refuses %s=%j with an error naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name} must be`));
  });

  describe('roots that overlap', () => {
    const base = mkdtempSync(join(tmpdir(), 'sd-roots-'));
    const at = (p: string) => join(base, p);
    mkdirSync(at('deploys/inner'), { recursive: true });
    symlinkSync(at('deploys/inner'), at('innocent-looking-link'));

    it.each([
      ['DOCS_ROOT equal to DEPLOYS_ROOT', { DOCS_ROOT: at('same'), DEPLOYS_ROOT: at('same') }, /^DOCS_ROOT must be apart from DEPLOYS_ROOT/],
      ['DOCS_ROOT under DEPLOYS_ROOT', { DOCS_ROOT: at('deploys/docs'), DEPLOYS_ROOT: at('deploys') }, /^DOCS_ROOT must be apart from DEPLOYS_ROOT/],
      ['DEPLOYS_ROOT under DOCS_ROOT', { DOCS_ROOT: at('docs'), DEPLOYS_ROOT: at('docs/deploys') }, /^DOCS_ROOT must be apart from DEPLOYS_ROOT/],
      ['DOCS_ROOT under DEPLOYS_ROOT through a symlink', { DOCS_ROOT: at('innocent-looking-link/docs'), DEPLOYS_ROOT: at('deploys') }, /^DOCS_ROOT must be apart from DEPLOYS_ROOT/],
      ['DATA_DIR (the admin token) under DOCS_ROOT', { DATA_DIR: at('docs/data'), DOCS_ROOT: at('docs'), DEPLOYS_ROOT: at('deploys') }, /^DATA_DIR must be outside DOCS_ROOT/],
      ['DATA_DIR equal to DEPLOYS_ROOT', { DATA_DIR: at('deploys'), DOCS_ROOT: at('docs'), DEPLOYS_ROOT: at('deploys') }, /^DATA_DIR must be outside DEPLOYS_ROOT/],
      ['the SQLite file in DOCS_ROOT', { DATA_DIR: at('data'), DOCS_ROOT: at('docs'), DEPLOYS_ROOT: at('deploys'), DATABASE_URL: `sqlite:${at('docs/sitedrop.db')}` }, /^DATABASE_URL must be outside DOCS_ROOT/],
      ['PREVIEWS_ROOT under DOCS_ROOT (a preview served at a live address)', { DOCS_ROOT: at('docs'), DEPLOYS_ROOT: at('deploys'), PREVIEWS_ROOT: at('docs/_previews') }, /^DOCS_ROOT must be apart from PREVIEWS_ROOT/],
      ['PREVIEWS_ROOT equal to DEPLOYS_ROOT', { DOCS_ROOT: at('docs'), DEPLOYS_ROOT: at('deploys'), PREVIEWS_ROOT: at('deploys') }, /^DEPLOYS_ROOT must be apart from PREVIEWS_ROOT/],
      ['DOCS_ROOT under PREVIEWS_ROOT', { DOCS_ROOT: at('previews/docs'), DEPLOYS_ROOT: at('deploys'), PREVIEWS_ROOT: at('previews') }, /^DOCS_ROOT must be apart from PREVIEWS_ROOT/],
      ['DOMAINS_ROOT under DOCS_ROOT (a host link served as a site)', { DOCS_ROOT: at('docs'), DEPLOYS_ROOT: at('deploys'), DOMAINS_ROOT: at('docs/domains') }, /^DOCS_ROOT must be apart from DOMAINS_ROOT/],
      ['DOMAINS_ROOT equal to PREVIEWS_ROOT', { DOCS_ROOT: at('docs'), DEPLOYS_ROOT: at('deploys'), PREVIEWS_ROOT: at('p'), DOMAINS_ROOT: at('p') }, /^PREVIEWS_ROOT must be apart from DOMAINS_ROOT/],
      ['DATA_DIR under DOMAINS_ROOT', { DATA_DIR: at('domains/data'), DOCS_ROOT: at('docs'), DEPLOYS_ROOT: at('deploys'), PREVIEWS_ROOT: at('previews'), DOMAINS_ROOT: at('domains') }, /^DATA_DIR must be outside DOMAINS_ROOT/],
      ['DATA_DIR under PREVIEWS_ROOT', { DATA_DIR: at('previews/data'), DOCS_ROOT: at('docs'), DEPLOYS_ROOT: at('deploys'), PREVIEWS_ROOT: at('previews') }, /^DATA_DIR must be outside PREVIEWS_ROOT/],
    ])('refuses %s, naming both variables', (_name, env, message) => {
      expect(() => loadConfig(env)).toThrow(message);
    });

    it('accepts the default layout (both roots inside DATA_DIR), siblings, and a PostgreSQL database', () => {
      expect(() => loadConfig({ DATA_DIR: at('var') })).not.toThrow();
      expect(() => loadConfig({ DATA_DIR: at('data'), DOCS_ROOT: at('docs'), DEPLOYS_ROOT: at('docs-deploys') })).not.toThrow();
      expect(() => loadConfig({ DATA_DIR: at('x'), DOCS_ROOT: at('x/docs'), DEPLOYS_ROOT: at('x/deploys'), DATABASE_URL: 'postgres://u@h/d' })).not.toThrow();
    });
  });

  it('has no storage quota unless USER_MAX_BYTES is set, and takes any whole number of bytes from 1', () => {
    expect(loadConfig({ USER_MAX_BYTES: '' }).userMaxBytes).toBeUndefined();
    expect(loadConfig({ USER_MAX_BYTES: '1' }).userMaxBytes).toBe(1);
    expect(loadConfig({ USER_MAX_BYTES: ' 10737418240 ' }).userMaxBytes).toBe(10_737_418_240);
  });

  it('never echoes a rejected ADMIN_TOKEN', () => {
    expect(() => loadConfig({ ADMIN_TOKEN: 'secret-but-short' })).toThrow(/<hidden>/);
  });
});

describe('start-up (the built service, as npm start runs it)', () => {
  it('refuses a bad variable: exit code 2, one line naming it, no stack trace', async () => {
    const { code, output } = await runToExit({ DATA_DIR: mkdtempSync(join(tmpdir(), 'sd-')), RELEASES_KEEP: 'none' });
    expect(code).toBe(2);
    expect(output).toBe('sitedrop: RELEASES_KEEP must be a whole number from 1 to 10000 (got "none")\n');
  });

  it('refuses overlapping roots: exit code 2, one line naming the two variables', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sd-'));
    const { code, output } = await runToExit({ DATA_DIR: dataDir, DOCS_ROOT: join(dataDir, 'deploys/docs'), DEPLOYS_ROOT: join(dataDir, 'deploys') });
    expect(code).toBe(2);
    expect(output).toBe(`sitedrop: DOCS_ROOT must be apart from DEPLOYS_ROOT (${join(dataDir, 'deploys')}): neither may hold the other (got "${join(dataDir, 'deploys/docs')}")\n`);
  });

  it('generates an admin token once, keeps it 0600, prints it only when generated', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sd-'));
    const first = await startChild({ DATA_DIR: dataDir });
    first.process.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    expect(token).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(statSync(join(dataDir, 'admin-token')).mode & 0o777).toBe(0o600);
    expect(first.output()).toContain(`generated an admin token (kept in ${join(dataDir, 'admin-token')}): ${token}`);

    const second = await startChild({ DATA_DIR: dataDir });
    const reply = await fetch(`${second.url}/api/v1/auth`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: '{"username":"ops"}' });
    expect(reply.status).toBe(200);
    second.process.kill('SIGINT');
    expect(await second.exited).toBe(0);
    expect(second.output()).not.toContain(token);
  });
});
