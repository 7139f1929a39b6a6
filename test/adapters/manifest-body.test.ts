import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BodyNotGzip, InvalidRequestBody, UploadTooLarge } from '../../src/adapters/http/http-errors.js';
import { readManifestBody } from '../../src/adapters/http/manifest-body.js';
import { jsonObject, optionalString } from '../../src/adapters/http/request-body.js';
import { ManifestRejected } from '../../src/domain/errors.js';
import { EMPTY_DIGEST, ManifestReader, parseManifest, parseManifestBase, parseManifestChanges } from '../../src/domain/manifest.js';
import { sha256 } from '../support/sha256.js';

const limits = { maxFiles: 8, maxBytes: 20 };

/** A request whose body is `chunks`, as the route sees one: complete once it has ended. */
function request(chunks: readonly Buffer[], encoding?: string): IncomingMessage {
  const req = Object.assign(new PassThrough(), { headers: encoding ? { 'content-encoding': encoding } : {}, complete: false });
  req.on('end', () => (req.complete = true));
  for (const chunk of chunks) req.write(chunk);
  req.end();
  return req as unknown as IncomingMessage;
}

/** The body cut at `cuts`, each piece a chunk. */
function pieces(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  return [...at, bytes.length].map((end, i) => bytes.subarray(i === 0 ? 0 : at[i - 1], end));
}

type Outcome = { fields: unknown; result: unknown } | { refused: string; kind: string };

const outcome = async (run: () => Promise<{ fields: unknown; result: unknown }>): Promise<Outcome> => {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof ManifestRejected || error instanceof InvalidRequestBody)) throw error;
    return { refused: error.message, kind: error.constructor.name };
  }
};

/** The body read as it streams, then taken as the use case takes it. */
const streamed = (chunks: readonly Buffer[], encoding?: string) =>
  outcome(async () => {
    const reader = new ManifestReader(limits);
    const { project, preview, base } = await readManifestBody(request(chunks, encoding), reader, { maxBytes: 1 << 20, idleSeconds: 0, stallSeconds: 0 });
    const result = base === undefined ? reader.whole() : [parseManifestBase(base), reader.changes()];
    return { fields: { project, preview }, result };
  });

/** The same body as JSON.parse reads it, checked whole by the batch parsers. */
const parsedWhole = (text: string) =>
  outcome(() => {
    const body = jsonObject(JSON.parse(text));
    const fields = { project: optionalString(body, 'project'), preview: optionalString(body, 'preview') };
    if (body.base === undefined) {
      if (body.removed !== undefined) throw new ManifestRejected('removed needs a base');
      return Promise.resolve({ fields, result: parseManifest(body.files, limits) });
    }
    const base = parseManifestBase(body.base);
    return Promise.resolve({ fields, result: [base, parseManifestChanges(body.files, body.removed ?? [], limits)] });
  });

const path = fc.oneof(
  fc.array(fc.constantFrom('a', 'b', 'c', '.', ''), { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/')),
  fc.constantFrom('../x', '/abs', 'a\\b', 'a\u0001b', 'é/ü.html', 'a\ud800', 'x'.repeat(300)),
);
const entry = fc.oneof(
  { weight: 6, arbitrary: fc.record({ path, size: fc.constantFrom(0, 1, 2, 7, 30, -1, 0.5), digest: fc.constantFrom(EMPTY_DIGEST, sha256('a'), sha256('b'), 'B'.repeat(64)) }) },
  // Members the manifest does not read, objects and arrays where it wants scalars.
  { weight: 1, arbitrary: fc.record({ path: fc.oneof(path, fc.jsonValue({ maxDepth: 2 })), size: fc.jsonValue({ maxDepth: 2 }), digest: fc.constant(sha256('a')), note: fc.jsonValue({ maxDepth: 3 }) }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);
// Mostly honest manifests, so that most bodies are taken and what is taken is compared;
// now and then one faulty entry among them, or a list of anything.
const honestFile = fc.constantFrom('index.html', 'a/b.html', 'a/c.css', 'd/e/f.js', 'é/ü.html').chain((name) =>
  fc.constantFrom(0, 1, 2).map((size) => ({ path: name, size, digest: size === 0 ? EMPTY_DIGEST : sha256(String(size)) })),
);
const honestFiles = fc.uniqueArray(honestFile, { selector: (f) => f.path, minLength: 1, maxLength: 5 });
const files = fc.oneof(
  { weight: 4, arbitrary: honestFiles },
  { weight: 3, arbitrary: fc.tuple(honestFiles, entry, fc.nat()).map(([list, odd, at]) => [...list.slice(0, at % (list.length + 1)), odd, ...list.slice(at % (list.length + 1))]) },
  { weight: 1, arbitrary: fc.array(entry, { maxLength: 10 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);
const removed = fc.oneof(
  { weight: 4, arbitrary: fc.uniqueArray(fc.constantFrom('old.html', 'old/2.html', './gone.css', 'index.html')) },
  { weight: 1, arbitrary: fc.array(fc.oneof(path, fc.jsonValue({ maxDepth: 1 })), { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) },
);
const base = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ release: '20260101T000000', digest: sha256('base') }) },
  { weight: 1, arbitrary: fc.record({ release: fc.constantFrom('20260101T000000', 'latest'), digest: fc.constantFrom(sha256('base'), 'x') }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);
const body = fc.record(
  { project: fc.constantFrom('docs', 'x'), preview: fc.constant('pr-1'), files, base, removed, other: fc.jsonValue({ maxDepth: 3 }) },
  { requiredKeys: ['files'] },
);
/** The body's members in an order of the test's choosing: the stream reads them in that order. */
const ordered = fc.tuple(body, fc.array(fc.nat())).map(([fields, keys]) => {
  const names = Object.keys(fields);
  const order = names.map((name, i) => [name, keys[i] ?? i] as const).sort((a, b) => a[1] - b[1]);
  return Object.fromEntries(order.map(([name]) => [name, fields[name as keyof typeof fields]])) as Record<string, unknown>;
});

describe('a manifest body read as it streams (manifest-body.ts)', () => {
  it('agrees with JSON.parse and the batch parsers on any body: the same manifest taken, or refused (a whole manifest in the same words)', async () => {
    await fc.assert(
      fc.asyncProperty(ordered, fc.boolean(), fc.array(fc.nat(), { maxLength: 5 }), fc.constantFrom(undefined, 2), async (fields, gzip, cuts, indent) => {
        const text = JSON.stringify(fields, null, indent);
        const bytes = gzip ? gzipSync(text) : Buffer.from(text);
        const mine = await streamed(pieces(bytes, cuts), gzip ? 'gzip' : undefined);
        const theirs = await parsedWhole(text);
        if (!('refused' in theirs)) {
          expect(mine).toEqual(theirs);
          return;
        }
        // Both refuse. Of several faults, the stream names the first it reads, the batch the
        // first it looks for (a base before the entries, a count before them): the words agree
        // for a whole manifest of no more than MAX_FILES entries.
        expect(mine).toMatchObject({ kind: 'ManifestRejected' });
        const long = Array.isArray(fields.files) && fields.files.length > limits.maxFiles;
        if (!long && !('base' in fields) && !('removed' in fields)) expect(mine).toEqual(theirs);
      }),
      { numRuns: 1500 },
    );
  });

  it('is refused at its first entry over a limit: what follows is never read, garbage or not', async () => {
    const over = Array.from({ length: 9 }, (_, i) => JSON.stringify({ path: `f${i}`, size: 1, digest: sha256('f') })).join(',');
    const reader = new ManifestReader(limits);
    const req = new PassThrough();
    Object.assign(req, { headers: {}, complete: false });
    let asked = 0;
    req.on('data', () => (asked += 1));
    const read = readManifestBody(req as unknown as IncomingMessage, reader, { maxBytes: 1 << 20, idleSeconds: 0, stallSeconds: 0 });
    req.write(`{"project":"docs","files":[${over}`);
    await expect(read).rejects.toThrow(new ManifestRejected('more than 8 files and directories'));
    // The rest of the body, megabytes of it, is not the reader's concern: it was never asked for.
    const seen = asked;
    req.write('#'.repeat(1 << 20));
    expect(asked).toBe(seen);
  });

  it('refuses a member named twice, and a body whose gzip stops making sense, as the request it is', async () => {
    const manifest = { path: 'a', size: 1, digest: sha256('a') };
    const twice = `{"project":"docs","files":[${JSON.stringify(manifest)}],"files":[]}`;
    expect(await streamed([Buffer.from(twice)])).toEqual({ refused: 'invalid request body', kind: 'InvalidRequestBody' });
    const zipped = gzipSync(JSON.stringify({ project: 'docs', files: [manifest] }));
    await expect(readManifestBody(request([zipped, Buffer.from('trailing')], 'gzip'), new ManifestReader(limits), { maxBytes: 1 << 20, idleSeconds: 0, stallSeconds: 0 })).rejects.toBeInstanceOf(BodyNotGzip);
    // 20 bytes inflate to 1 MiB: the limit holds for what the body inflates to.
    const spaces = gzipSync(`{${' '.repeat(1 << 20)}}`);
    await expect(readManifestBody(request([spaces], 'gzip'), new ManifestReader(limits), { maxBytes: 64 * 1024, idleSeconds: 0, stallSeconds: 0 })).rejects.toBeInstanceOf(UploadTooLarge);
  });
});
