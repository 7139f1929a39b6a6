// Writes docs/openapi.yaml, the API's contract as the team edits it, to dist/openapi.json,
// which the service reads at start-up and serves (src/adapters/http/openapi-document.ts,
// which also refuses a file that is no OpenAPI document): the YAML is parsed here, once
// per build, not in every running service.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';

const document = parse(readFileSync(new URL('../docs/openapi.yaml', import.meta.url), 'utf8'));
mkdirSync(new URL('../dist/', import.meta.url), { recursive: true });
writeFileSync(new URL('../dist/openapi.json', import.meta.url), JSON.stringify(document));
