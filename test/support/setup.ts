import 'reflect-metadata';
import { afterEach } from 'vitest';
import { checkAgainstContract, takeRecordedViolations } from './openapi-contract.js';

// Every answer a test fetches from the service's /api is held to docs/openapi.yaml, so the
// document cannot drift from the code. It is done here, around fetch itself, so that no
// test can forget it; the node:http helpers (raw-http, slow-upload) check their answers
// themselves. The CLI's own requests are not seen here: its tests check what it prints.
const realFetch = globalThis.fetch;
globalThis.fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const response = await realFetch(input, init);
  const url = new URL(input instanceof Request ? input.url : input);
  if (!url.pathname.startsWith('/api')) return response;
  const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
  const body = await response.clone().text();
  checkAgainstContract({ method, path: url.pathname, status: response.status, header: (name) => response.headers.get(name) ?? undefined, body });
  return response;
};

// A violation a test caught and ignored (a poller's catch, say) still fails that test.
afterEach(() => {
  const violations = takeRecordedViolations();
  if (violations.length > 0) throw new Error(`answers broke docs/openapi.yaml:\n  ${violations.join('\n  ')}`);
});
