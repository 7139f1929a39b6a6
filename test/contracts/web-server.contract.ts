import { describe, expect, it } from 'vitest';
import type { WebServer } from '../../src/application/ports/web-server.js';
import type { PreviewName } from '../../src/domain/preview.js';
import { compileSiteRules } from '../../src/domain/site-rules.js';
import { alice, docs, R1, R2 } from './deploys-under-test.js';

const rules = compileSiteRules({ redirects: '/a /b 302\n' });

/**
 * What every WebServer must do for the use cases: take the sites it is told of, in any
 * order, and forget what it never served without a failure. (What it then serves is
 * each adapter's own test, through the real web server.)
 */
export function webServerContract(name: string, open: () => Promise<{ server: WebServer; close(): Promise<void> }>): void {
  describe(`WebServer contract: ${name}`, () => {
    it('readies a site for one release and then another, with and without rules', async () => {
      const { server, close } = await open();
      try {
        await server.willServe({ site: { user: alice, project: docs }, release: R1, rules });
        await server.willServe({ site: { user: alice, project: docs }, release: R2, rules: compileSiteRules({}) });
        await server.willServe({ site: { user: alice, project: docs, preview: 'pr-1' as PreviewName }, release: R1, rules });
      } finally {
        await close();
      }
    });

    it('forgets sites, known or not, without throwing, and reconciles to a list', async () => {
      const { server, close } = await open();
      try {
        await expect(server.forget({ user: alice, project: docs, preview: 'never' as PreviewName })).resolves.toBeUndefined();
        await server.willServe({ site: { user: alice, project: docs }, release: R1, rules });
        await expect(server.forget({ user: alice })).resolves.toBeUndefined();
        await expect(server.reconcile([{ site: { user: alice, project: docs }, release: R2, rules }])).resolves.toBeUndefined();
        await expect(server.reconcile([])).resolves.toBeUndefined();
      } finally {
        await close();
      }
    });
  });
}
