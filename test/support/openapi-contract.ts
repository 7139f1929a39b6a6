import type { IncomingHttpHeaders } from 'node:http';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiYaml } from './openapi-yaml.js';

// ajv-formats is CommonJS: under ESM its function arrives as the module's default.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/** An answer as a test received it. */
export interface ObservedResponse {
  readonly method: string;
  /** The request's path, without the query. */
  readonly path: string;
  readonly status: number;
  header(name: string): string | undefined;
  readonly body: string;
}

interface ResponseObject {
  readonly headers?: Record<string, { $ref?: string; required?: boolean; schema?: unknown }>;
  readonly content?: Record<string, { schema?: unknown }>;
  readonly $ref?: string;
}

interface Operation {
  readonly responses: Record<string, ResponseObject>;
}

/** A header reader over node:http's headers, for ObservedResponse. */
export function nodeHeaders(headers: IncomingHttpHeaders): (name: string) => string | undefined {
  return (name) => {
    const value = headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(', ') : value;
  };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;
const DOCUMENT_ID = 'openapi.json';

/** A JSON pointer to `segments`, as the fragment of a URI. */
const pointer = (...segments: string[]): string =>
  '#/' + segments.map((s) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');

/**
 * Holds HTTP answers to docs/openapi.yaml: the status must be declared for the operation,
 * the required headers present, the media type declared and the body valid against its
 * schema (ajv, JSON Schema 2020-12, the dialect of OpenAPI 3.1). A path the document does
 * not have must answer its NotFound response; a method a path does not offer, its
 * MethodNotAllowed response.
 */
export class OpenApiContract {
  private readonly ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true });
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly paths: { template: string; pattern: RegExp; item: Record<string, unknown> }[];

  constructor(readonly document: Record<string, unknown> = openApiYaml()) {
    addFormats(this.ajv);
    // The document's own top-level fields, so ajv can take it whole and resolve the
    // `#/components/...` references inside it.
    this.ajv.addVocabulary(['openapi', 'info', 'servers', 'tags', 'paths', 'components', 'security', 'jsonSchemaDialect', 'webhooks', 'externalDocs']);
    this.ajv.addSchema(document, DOCUMENT_ID);
    const paths = document.paths as Record<string, Record<string, unknown>>;
    this.paths = Object.entries(paths).map(([template, item]) => ({
      template,
      pattern: new RegExp('^' + template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^/}]+\}/g, '[^/]+') + '$'),
      item,
    }));
  }

  /** What is wrong with `observed`, one line each; empty when it keeps the contract. */
  violations(observed: ObservedResponse): string[] {
    const where = `${observed.method} ${observed.path} → ${observed.status}`;
    const { response, location, problem } = this.expectedResponse(observed);
    if (problem) return [`${where}: ${problem}`];
    return this.responseViolations(observed, response!, location!).map((v) => `${where}: ${v}`);
  }

  /** Throws with every violation listed. */
  check(observed: ObservedResponse): void {
    const found = this.violations(observed);
    if (found.length > 0) throw new Error(`the answer breaks docs/openapi.yaml:\n  ${found.join('\n  ')}\nbody: ${observed.body.slice(0, 500)}`);
  }

  private expectedResponse(observed: ObservedResponse): { response?: ResponseObject; location?: string[]; problem?: string } {
    const path = this.paths.find((p) => p.pattern.test(observed.path));
    if (!path) return this.generic('NotFound', 404, observed, 'a path the document does not describe');
    const method = observed.method.toLowerCase();
    // HEAD is answered by GET's route, without a body.
    const key = METHODS.find((m) => m === method && path.item[m]) ?? (method === 'head' && path.item.get ? 'get' : undefined);
    if (!key) return this.generic('MethodNotAllowed', 405, observed, `a method ${path.template} does not offer`);
    const operation = path.item[key] as Operation;
    const status = String(observed.status);
    if (!(status in operation.responses)) {
      return { problem: `status ${status} is not declared (declared: ${Object.keys(operation.responses).join(', ')})` };
    }
    return this.resolve(['paths', path.template, key, 'responses', status]);
  }

  private generic(name: string, status: number, observed: ObservedResponse, what: string): ReturnType<OpenApiContract['expectedResponse']> {
    if (observed.status !== status) return { problem: `${what} must answer ${status} (${name}), not ${observed.status}` };
    return this.resolve(['components', 'responses', name]);
  }

  /** A response or header object by its location, following a `$ref` to components. */
  private resolve(location: string[]): { response: ResponseObject; location: string[] } {
    let node: unknown = this.document;
    for (const segment of location) node = (node as Record<string, unknown>)[segment];
    const ref = (node as ResponseObject).$ref;
    if (ref) return this.resolve(ref.replace(/^#\//, '').split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~')));
    return { response: node as ResponseObject, location };
  }

  private responseViolations(observed: ObservedResponse, response: ResponseObject, location: string[]): string[] {
    const found: string[] = [];
    for (const name of Object.keys(response.headers ?? {})) {
      const resolved = this.resolve([...location, 'headers', name]);
      const header = resolved.response as { required?: boolean };
      const value = observed.header(name);
      if (value === undefined) {
        if (header.required) found.push(`required header ${name} is missing`);
        continue;
      }
      found.push(...this.schemaViolations([...resolved.location, 'schema'], value, `header ${name}`));
    }

    const contentType = observed.header('content-type')?.split(';')[0]?.trim().toLowerCase();
    const declaredTypes = Object.keys(response.content ?? {});
    if (observed.body === '' && observed.method.toUpperCase() === 'HEAD') return found;
    if (declaredTypes.length === 0) {
      if (observed.body !== '') found.push('the response declares no body, but one came');
      return found;
    }
    if (!contentType || !declaredTypes.includes(contentType)) {
      found.push(`content type ${contentType ?? '(none)'} is not declared (declared: ${declaredTypes.join(', ')})`);
      return found;
    }
    let value: unknown = observed.body;
    if (contentType === 'application/json') {
      try {
        value = JSON.parse(observed.body);
      } catch {
        return [...found, 'the body is not JSON'];
      }
    }
    return [...found, ...this.schemaViolations([...location, 'content', contentType, 'schema'], value, 'body')];
  }

  private schemaViolations(location: string[], value: unknown, what: string): string[] {
    const id = DOCUMENT_ID + pointer(...location);
    let validate = this.compiled.get(id);
    if (!validate) {
      validate = this.ajv.compile({ $ref: id });
      this.compiled.set(id, validate);
    }
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${what}${e.instancePath} ${e.message ?? 'is invalid'}${e.params && 'additionalProperty' in e.params ? `: ${String(e.params.additionalProperty)}` : ''}`);
  }
}

let shared: OpenApiContract | undefined;

/** The contract of docs/openapi.yaml, compiled once per test file. */
export function contract(): OpenApiContract {
  return (shared ??= new OpenApiContract());
}

const recorded: string[] = [];

/**
 * Checks an answer a test received. A violation is thrown to the caller and also kept,
 * so that one swallowed by a test's own error handling still fails the test (setup.ts).
 */
export function checkAgainstContract(observed: ObservedResponse): void {
  const found = contract().violations(observed);
  if (found.length === 0) return;
  recorded.push(...found);
  contract().check(observed);
}

/** The violations recorded since the last call. */
export function takeRecordedViolations(): string[] {
  return recorded.splice(0);
}
