import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** dist/sitedrop.mjs, written by `npm run build`: one level above src/ and dist/ alike. */
export const CLI_BUNDLE_PATH = new URL('../../../dist/sitedrop.mjs', import.meta.url);

export interface CliBundle {
  readonly body: Buffer;
  /** A strong ETag from the content's digest: a pipeline's cache revalidates for free. */
  readonly etag: string;
}

/**
 * The CLI as one self-contained file, read once at start-up; undefined when the build
 * did not make it (tsc alone), so the service still starts and the route says why.
 */
export function loadCliBundle(path: URL = CLI_BUNDLE_PATH): CliBundle | undefined {
  let body: Buffer;
  try {
    body = readFileSync(path);
  } catch {
    return undefined;
  }
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"` };
}
