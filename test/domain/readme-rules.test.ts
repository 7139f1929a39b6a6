import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileSiteRules, redirectFor } from '../../src/domain/site-rules.js';

/** The README's worked example, as a reader would copy it. */
const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const block = (first: string): string => {
  const found = new RegExp('```text\\n(' + first + '[\\s\\S]*?)```').exec(README);
  if (!found) throw new Error(`README has no block starting ${first}`);
  return found[1]!;
};

describe("the README's example rules", () => {
  it('compile, and mean what the README says', () => {
    const rules = compileSiteRules({ redirects: block('# _redirects'), headers: block('# _headers') });
    expect(rules.redirects).toHaveLength(6);
    expect(rules.headers).toHaveLength(2);
    expect(redirectFor(rules, '/old-blog/a/b', false)?.target).toBe('/blog/a/b');
    expect(redirectFor(rules, '/blog/2024/hi', false)).toMatchObject({ target: '/posts/2024-hi', rule: { status: 302 } });
    expect(redirectFor(rules, '/beta/x', true)).toMatchObject({ target: '/index.html', rule: { status: 200, force: true } });
  });
});
