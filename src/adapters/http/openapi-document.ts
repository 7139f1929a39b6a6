import { readFileSync } from 'node:fs';

/** docs/openapi.yaml, the contract the team edits: one level above src/ and dist/ alike. */
export const OPENAPI_PATH = new URL('../../../docs/openapi.yaml', import.meta.url);

/** The same document as JSON, written from it by `npm run build` (scripts/openapi-json.mjs). */
export const OPENAPI_JSON_PATH = new URL('../../../dist/openapi.json', import.meta.url);

/**
 * The contract the service serves at /api/v1/openapi.json, read once at start-up as the
 * build wrote it: a YAML parser in the service would hold some 6 MiB of the main thread's
 * heap for a 100 KB document (docs/performance.md). The tests hold every answer to the
 * YAML itself and this to it. A missing or broken file stops start-up rather than serving
 * nothing.
 */
export function loadOpenApiDocument(path: URL = OPENAPI_JSON_PATH): Record<string, unknown> {
  let document: unknown;
  try {
    document = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`${path.pathname}: ${(error as Error).message} (npm run build writes it from docs/openapi.yaml)`, { cause: error });
  }
  if (typeof document !== 'object' || document === null || !('openapi' in document)) {
    throw new Error(`${path.pathname} is not an OpenAPI document`);
  }
  return document as Record<string, unknown>;
}
