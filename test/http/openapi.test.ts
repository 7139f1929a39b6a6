import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type HttpDeps } from '../../src/adapters/http/app.js';
import { loadOpenApiDocument } from '../../src/adapters/http/openapi-document.js';
import { OpenApiContract, type ObservedResponse } from '../support/openapi-contract.js';
import { openApiYaml } from '../support/openapi-yaml.js';
import { ADMIN_TOKEN, startHarness, type Harness } from '../support/service-harness.js';

const document = openApiYaml();

describe('docs/openapi.yaml', () => {
  it('is a valid OpenAPI 3.1 document, version 1.0.0, with its three bearer schemes', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    expect((document.info as { version: string }).version).toBe('1.0.0');
    const schemes = (document.components as { securitySchemes: Record<string, unknown> }).securitySchemes;
    expect(schemes).toEqual({
      AdminAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      UserAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      DeployKeyAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
  });

  it("holds every error message of the spec's Errors table, at its status", () => {
    const text = JSON.stringify(document.paths);
    const rows: [string, string, string, string][] = [
      ['/api/v1/auth', 'post', '400', 'invalid request body'],
      ['/api/v1/auth', 'post', '400', 'invalid username format'],
      ['/api/v1/auth', 'post', '401', 'invalid admin token'],
      ['/api/v1/auth', 'post', '500', 'failed to create user'],
      ['/api/v1/auth', 'delete', '400', 'invalid request body'],
      ['/api/v1/auth', 'delete', '400', 'invalid username format'],
      ['/api/v1/auth', 'delete', '400', "files must be 'persist' or 'delete'"],
      ['/api/v1/auth', 'delete', '401', 'invalid admin token'],
      ['/api/v1/auth', 'delete', '500', 'user not found'],
      ['/api/v1/deploy', 'post', '400', 'missing or invalid file'],
      ['/api/v1/deploy', 'post', '400', 'invalid project name format'],
      ['/api/v1/deploy', 'post', '400', 'failed to parse multipart form'],
      ['/api/v1/deploy', 'post', '401', 'unauthorized'],
      ['/api/v1/deploy', 'post', '413', 'request body too large'],
      ['/api/v1/deploy', 'post', '500', 'deployment failed'],
      ['/api/v1/deploy', 'post', '500', "failed to extract tarball: path contains '..' component which is not allowed: ../x"],
    ];
    expect(text).toContain('/api/v1/status');
    const checker = new OpenApiContract(document);
    for (const [path, method, status, error] of rows) {
      const answer = observed({ method, path, status: Number(status), body: JSON.stringify({ status: 'error', error }) });
      expect(checker.violations(answer), `${method} ${path} ${status} ${error}`).toEqual([]);
    }
  });
});

function observed(over: Partial<ObservedResponse> & { headers?: Record<string, string> }): ObservedResponse {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r-1', ...over.headers };
  return {
    method: 'GET',
    path: '/api/v1/status',
    status: 200,
    body: '{"status":"ok"}',
    ...over,
    header: (name) => headers[name.toLowerCase()],
  };
}

describe('the contract checker the HTTP tests use', () => {
  const checker = new OpenApiContract(document);

  it('accepts a declared answer', () => {
    expect(checker.violations(observed({}))).toEqual([]);
  });

  it('refuses an undeclared status', () => {
    expect(checker.violations(observed({ status: 418, body: '{"status":"error","error":"teapot"}' }))).toEqual([
      'GET /api/v1/status → 418: status 418 is not declared (declared: 200)',
    ]);
  });

  it('refuses an undeclared field, a missing field and a wrong value', () => {
    expect(checker.violations(observed({ body: '{"status":"ok","uptime":3}' })).join()).toContain('must NOT have additional properties: uptime');
    const deploy = { method: 'POST', path: '/api/v1/deploy' };
    expect(checker.violations(observed({ ...deploy, body: '{"status":"ok","project":"site","username":"ann","release":"20261123T000000"}' })).join()).toContain("must have required property 'url'");
    expect(checker.violations(observed({ ...deploy, body: '{"status":"ok","project":"site","username":"ann","url":"x","release":"20261123T000000"}' })).join()).toContain('must match format "uri"');
  });

  it("refuses an error message that is not the operation's", () => {
    const answer = observed({ method: 'POST', path: '/api/v1/auth', status: 401, body: '{"status":"error","error":"unauthorized"}' });
    expect(checker.violations(answer).join()).toContain('must be equal to constant');
  });

  it('refuses a missing X-Request-Id, an undeclared content type and a body that is not JSON', () => {
    expect(checker.violations(observed({ headers: { 'x-request-id': undefined as unknown as string } }))).toEqual([
      'GET /api/v1/status → 200: required header X-Request-Id is missing',
    ]);
    expect(checker.violations(observed({ headers: { 'content-type': 'text/html' } })).join()).toContain('content type text/html is not declared');
    expect(checker.violations(observed({ body: 'ok' })).join()).toContain('the body is not JSON');
  });

  it('matches path templates, and holds unknown paths and methods to 404 and 405', () => {
    const releases = { path: '/api/v1/projects/site/releases', body: '{"status":"ok","project":"site","releases":[]}' };
    expect(checker.violations(observed(releases))).toEqual([]);
    expect(checker.violations(observed({ path: '/api/v1/nothing', status: 200 })).join()).toContain('must answer 404 (NotFound)');
    expect(checker.violations(observed({ path: '/api/v1/nothing', status: 404, body: '{"status":"error","error":"not found"}' }))).toEqual([]);
    const put = { method: 'PUT', status: 405, body: '{"status":"error","error":"method not allowed"}' };
    expect(checker.violations(observed(put)).join()).toContain('required header Allow is missing');
    expect(checker.violations(observed({ ...put, headers: { allow: 'GET, HEAD' } }))).toEqual([]);
  });
});

describe('GET /api/v1/openapi.json', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('serves the document as JSON without a token', async () => {
    const response = await fetch(`${h.url}/api/v1/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual(document);
  });

  it('asks each operation for the token its security declares, and no other', async () => {
    const paths = document.paths as Record<string, Record<string, { security?: Record<string, unknown>[] }>>;
    const userToken = await h.createUser('contract');
    const unauthorized = { AdminAuth: 'invalid admin token', UserAuth: 'unauthorized', DeployKeyAuth: 'unauthorized' } as const;
    let checked = 0;
    for (const [template, item] of Object.entries(paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (method === 'parameters') continue;
        const path = template.replace('{project}', 'site').replace('{id}', 'some-key').replace('{name}', 'pr-1').replace('{domain}', 'docs.example.com');
        const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement)) as (keyof typeof unauthorized)[];
        if (schemes.length === 0) {
          // The domain check answers without a token: 404 for a domain nobody verified.
          expect((await h.call(method.toUpperCase(), path)).status, `${method} ${path} without a token`).toBe(template === '/api/v1/domains/check' ? 404 : 200);
        } else {
          // Several schemes (a user token or a deploy key) must be refused alike.
          const refusal = new Set(schemes.map((scheme) => unauthorized[scheme]));
          expect(refusal.size).toBe(1);
          const admin = schemes.includes('AdminAuth');
          // The other scheme's token is as good as none.
          const wrong = admin ? userToken : ADMIN_TOKEN;
          for (const token of [undefined, wrong]) {
            const reply = await h.call(method.toUpperCase(), path, { token });
            expect(reply, `${method} ${path} with ${token === undefined ? 'no token' : 'the wrong one'}`).toMatchObject({ status: 401, body: { error: [...refusal][0] } });
          }
        }
        checked++;
      }
    }
    expect(checked).toBe(31);
  });

});

describe('the document and the routes', () => {
  it('describe the same paths with the same methods', () => {
    // Only settings and the document are read while routes are set up; no request is made.
    const app = createApp({ settings: { adminToken: 'x', publicBase: 'https://x.test/', maxUploadBytes: 1 }, openApi: document } as HttpDeps);
    const stack = (app as unknown as { router: { stack: { route?: { path: string; methods: Record<string, boolean> } }[] } }).router.stack;
    const served = stack
      .filter((layer) => layer.route)
      .map(({ route }) => `${Object.keys(route!.methods).filter((m) => m !== '_all').sort().join(',')} ${route!.path.replace(/:(\w+)/g, '{$1}')}`)
      .sort();
    const paths = document.paths as Record<string, Record<string, unknown>>;
    const documented = Object.entries(paths)
      .map(([path, item]) => `${Object.keys(item).filter((k) => k !== 'parameters').sort().join(',')} ${path}`)
      .sort();
    expect(served).toEqual(documented);
    expect(documented).toHaveLength(26);
  });
});

describe('dist/openapi.json, the document the service reads at start-up', () => {
  it('is docs/openapi.yaml as npm run build wrote it', () => {
    expect(loadOpenApiDocument()).toEqual(document);
  });

  it('stops start-up, naming the build, when it is missing, broken or no OpenAPI document', () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
    try {
      const at = (name: string, text?: string): URL => {
        if (text !== undefined) writeFileSync(join(dir, name), text);
        return pathToFileURL(join(dir, name));
      };
      expect(() => loadOpenApiDocument(at('missing.json'))).toThrow(/ENOENT.*npm run build writes it from docs\/openapi\.yaml/);
      expect(() => loadOpenApiDocument(at('cut.json', '{"openapi":"3.1.0","paths":'))).toThrow(/npm run build/);
      expect(() => loadOpenApiDocument(at('other.json', '{"swagger":"2.0"}'))).toThrow(/is not an OpenAPI document/);
      expect(() => loadOpenApiDocument(at('null.json', 'null'))).toThrow(/is not an OpenAPI document/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
