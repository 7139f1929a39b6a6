import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { count } from '../../src/adapters/cli/output.js';

describe('count', () => {
  it('groups thousands with commas', () => {
    expect([0, 7, 999, 1000, 40_000, 1_234_567].map(count)).toEqual(['0', '7', '999', '1,000', '40,000', '1,234,567']);
  });

  it('reads as en-US would, for any whole count', () => {
    fc.assert(fc.property(fc.nat({ max: Number.MAX_SAFE_INTEGER }), (n) => count(n) === n.toLocaleString('en-US')));
  });
});
