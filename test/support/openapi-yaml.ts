import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { OPENAPI_PATH } from '../../src/adapters/http/openapi-document.js';

/** docs/openapi.yaml as the team wrote it: what the tests hold the service's answers, and the document it serves, to. */
export function openApiYaml(): Record<string, unknown> {
  return parse(readFileSync(OPENAPI_PATH, 'utf8')) as Record<string, unknown>;
}
