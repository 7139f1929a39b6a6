import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const PACKAGE = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } };
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/**
 * An operator who runs the service another way (a systemd unit, a container) copies the
 * command from the README; the memory figures in docs/performance.md hold only with its
 * environment and flags, which the tests and benches take from package.json
 * (scripts/service-process.mjs).
 */
describe("npm start's command", () => {
  it('is the one the README tells an operator to keep', () => {
    expect(README).toContain(`\`npm start\` runs \`${PACKAGE.scripts.start}\``);
  });
});
