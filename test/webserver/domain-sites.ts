import { expect } from 'vitest';
import type { DnsResponder } from '../support/dns-responder.js';
import type { Harness } from '../support/service-harness.js';
import { file, tgz } from '../support/tar-builder.js';

/** What the domain tests do through the API, whatever web server serves the result. */
export function domainSites(h: () => Harness, dns: () => DnsResponder) {
  const site = (files: Record<string, string>): Buffer => tgz(Object.entries(files).map(([path, body]) => file(path, body)));
  return {
    site,
    /** Claims `domain` for the project, publishes its challenge in the test's DNS, and verifies it. */
    async own(token: string, project: string, domain: string): Promise<void> {
      const added = await h().call('POST', `/api/v1/projects/${project}/domains`, { token, json: { domain } });
      expect(added.status, JSON.stringify(added.body)).toBe(200);
      const v = added.body.verification as { name: string; value: string };
      dns().txt.set(v.name, [v.value]);
      expect((await h().call('POST', `/api/v1/projects/${project}/domains/${domain}/verify`, { token })).status).toBe(200);
    },
    /** Deploys these files (to a preview, if named); returns the release. */
    async deploy(token: string, project: string, files: Record<string, string>, preview?: string): Promise<string> {
      const r = await h().deploy(token, project, site(files), preview === undefined ? {} : { preview });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.release as string;
    },
  };
}
