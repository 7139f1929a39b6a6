import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

/** docs/openapi.yaml: one level above src/ and dist/ alike, so the same path serves both. */
export const OPENAPI_PATH = new URL('../../../docs/openapi.yaml', import.meta.url);

/**
 * The contract the service serves at /api/v1/openapi.json. Read once at start-up from the
 * YAML the team edits, so the served document and the file the tests hold the code to
 * are the same text; a missing or broken file stops start-up rather than serving nothing.
 */
export function loadOpenApiDocument(path: URL = OPENAPI_PATH): Record<string, unknown> {
  const document: unknown = parse(readFileSync(path, 'utf8'));
  if (typeof document !== 'object' || document === null || !('openapi' in document)) {
    throw new Error(`${path.pathname} is not an OpenAPI document`);
  }
  return document as Record<string, unknown>;
}
