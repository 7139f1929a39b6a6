import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProjectInodes } from '../../src/adapters/fs/store/project-inodes.js';

const sorted = (inodes: readonly number[]): Float64Array => Float64Array.from(inodes).sort();

/** Releases added (inodes with repeats, as files of one content share one) and removed, in any order. */
const steps = fc.array(
  fc.oneof(
    fc.record({ add: fc.constantFrom('a', 'b', 'c', 'd'), inodes: fc.array(fc.integer({ min: 1, max: 60 }), { maxLength: 30 }) }),
    fc.record({ remove: fc.constantFrom('a', 'b', 'c', 'd') }),
  ),
  { maxLength: 40 },
);

describe('ProjectInodes: the inodes of a project\'s releases, kept once for all of them', () => {
  it('holds exactly the inodes of the releases it holds now, sorted, whatever came and went before', () => {
    fc.assert(
      fc.property(steps, (plan) => {
        const inodes = new ProjectInodes();
        const model = new Map<string, readonly number[]>();
        for (const step of plan) {
          if ('remove' in step) {
            inodes.remove(step.remove);
            model.delete(step.remove);
          } else {
            inodes.add(step.add, `identity of ${step.add}`, sorted(step.inodes));
            if (!model.has(step.add)) model.set(step.add, step.inodes);
          }
          const expected = [...new Set([...model.values()].flat())].sort((x, y) => x - y);
          expect([...inodes.held()]).toEqual(expected);
          expect(inodes.known()).toEqual(new Map([...model.keys()].map((name) => [name, `identity of ${name}`])));
        }
      }),
    );
  });

  it('keeps an inode two releases share until both are gone', () => {
    const inodes = new ProjectInodes();
    inodes.add('old', 'i1', sorted([3, 5, 9]));
    inodes.add('new', 'i2', sorted([5, 9, 12, 12]));
    inodes.remove('old');
    expect([...inodes.held()]).toEqual([5, 9, 12]);
    inodes.remove('new');
    expect([...inodes.held()]).toEqual([]);
  });
});
