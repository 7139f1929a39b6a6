import type { Username } from '../../src/domain/username.js';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArchiveRejected } from '../../src/domain/errors.js';
import { pax, tgz, type RawEntry } from '../support/tar-builder.js';
import { realDeploys, type RealDeploys } from '../support/real-deploys.js';
import { snapshot } from '../support/tree.js';

const segment = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,8}$/);
/** Valid entries cannot clash: directories are d-*, files f-*.html. */
const validFile = fc.tuple(fc.array(segment, { maxLength: 3 }), segment, fc.string({ maxLength: 40 })).map(
  ([dirs, name, body]): RawEntry => ({ path: [...dirs.map((d) => `d-${d}`), `f-${name}.html`].join('/'), body }),
);
const validDir = fc.array(segment, { minLength: 1, maxLength: 3 }).map((dirs): RawEntry => ({ path: `${dirs.map((d) => `d-${d}`).join('/')}/`, type: '5' }));
const hostile = fc.oneof(
  segment.map((s): RawEntry => ({ path: `../${s}-pwned`, body: 'x' })),
  segment.map((s): RawEntry => ({ path: `d-a/../../${s}-pwned`, body: 'x' })),
  segment.map((s): RawEntry => ({ path: `/tmp/${s}-pwned`, body: 'x' })),
  segment.map((s): RawEntry => ({ path: `f-${s}`, type: '2', linkpath: '/etc' })),
  segment.map((s): RawEntry => ({ path: `f-${s}`, type: '2', linkpath: '..' })),
  segment.map((s): RawEntry => ({ path: `f-${s}`, type: '1', linkpath: '/etc/passwd' })),
  segment.map((s): RawEntry => ({ path: `f-${s}`, type: '3' })),
  segment.map((s): RawEntry => ({ path: `f-${s}`, type: '6' })),
  segment.map((s): RawEntry => ({ path: `C:${s}`, body: 'x' })),
  fc.constant<RawEntry>({ path: 'f-dup.html', body: 'dup' }),
);

type Plan = { entries: RawEntry[]; hostileCount: number };

const plans: fc.Arbitrary<Plan> = fc
  .tuple(fc.array(fc.oneof(validFile, validFile, validDir), { minLength: 1, maxLength: 25 }), fc.array(hostile, { maxLength: 3 }), fc.nat())
  .map(([valid, bad, seed]) => {
    // Drop repeated valid paths: a duplicate is a hostile case of its own.
    const seen = new Set<string>();
    const entries = valid.filter((e) => {
      const key = String(e.path).replace(/\/$/, '');
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    if (!entries.some((e) => e.type !== '5')) entries.push({ path: 'f-index.html', body: 'index' });
    const all = [...entries];
    for (const [i, entry] of bad.entries()) {
      if (entry.path === 'f-dup.html') all.push(entry, entry);
      else if (i % 2 === 0) all.push(pax({ path: String(entry.path) }), { ...entry, path: 'f-innocent.html' });
      else all.splice((seed + i) % (all.length + 1), 0, entry);
    }
    return { entries: all, hostileCount: bad.length };
  });

describe('generated archives on the real staging and release store', () => {
  let fsx: RealDeploys;
  beforeAll(async () => {
    fsx = await realDeploys('sitedrop-gen-');
  });
  afterAll(() => fsx.close());

  it('never leave anything outside the release root and never a partial release', async () => {
    const empty = await snapshot(fsx.root);
    await fc.assert(
      fc.asyncProperty(plans, async ({ entries, hostileCount }) => {
        async function* upload() {
          yield tgz(entries);
        }
        const limits = { maxFiles: 1000, maxBytes: 1_000_000 };
        if (hostileCount > 0) {
          await expect(fsx.staging.stage('alice' as Username, upload(), limits, new AbortController().signal)).rejects.toBeInstanceOf(ArchiveRejected);
          expect(await fsx.settle()).toEqual([]);
          expect(await snapshot(fsx.root)).toEqual(empty);
          return;
        }
        const staged = await fsx.staging.stage('alice' as Username, upload(), limits, new AbortController().signal);
        const files = entries.filter((e) => e.type === undefined);
        expect(staged.files).toBe(files.length);
        for (const entry of files) expect(await readFile(join(staged.handle, String(entry.path)), 'utf8')).toBe(String(entry.body ?? ''));
        const tree = await snapshot(staged.handle);
        expect(Object.values(tree).every((v) => /^(dir 755|file 644 )/.test(v))).toBe(true);
        await fsx.staging.discard(staged);
        expect(await fsx.settle()).toEqual([]);
        expect(await snapshot(fsx.root)).toEqual(empty);
      }),
      { numRuns: 80 },
    );
  });
});
