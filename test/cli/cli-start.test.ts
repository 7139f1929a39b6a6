import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runNode } from './run-cli.js';

/** The one-file bundle `npm run build` leaves, as the server serves it. */
const BUNDLE = fileURLToPath(new URL('../../dist/sitedrop.mjs', import.meta.url));

/** Preloaded: at exit, prints the Node built-ins the process loaded, one line after the CLI's own output. */
const LIST_BUILTINS = 'data:text/javascript,process.on("exit",()=>process.stderr.write(`\\nbuilt-ins: ${process.moduleLoadList.filter((m)=>m.startsWith("NativeModule ")).map((m)=>m.slice(13)).join(" ")}\\n`))';

async function builtinsLoaded(args: string[]): Promise<{ code: number; builtins: string[] }> {
  const run = await runNode(['--import', LIST_BUILTINS, BUNDLE, ...args], { env: {} });
  const listed = /\nbuilt-ins: (.*)\n$/.exec(run.stderr);
  expect(listed, run.stderr).not.toBeNull();
  return { code: run.code, builtins: listed![1]!.split(' ') };
}

// Loading a module is most of what a short command costs: each stays out until a command needs it.
describe('what the bundle loads before it is needed', () => {
  it('--help loads no HTTP client, no zlib (node-tar, the manifest), no threads and no progress bars', async () => {
    const { code, builtins } = await builtinsLoaded(['--help']);
    expect(code).toBe(0);
    expect(builtins).toEqual(expect.arrayContaining(['fs']));
    for (const lazy of ['http', 'https', 'zlib', 'worker_threads', 'readline']) expect(builtins, lazy).not.toContain(lazy);
  });

  it("deploy, off a terminal, loads no progress bars, no threads for a site it has not walked, and no archive writer (node-tar's assert)", async () => {
    const { code, builtins } = await builtinsLoaded(['deploy', '/nonexistent', '--project', 'p', '--token', 't']);
    expect(code).toBe(2);
    // The deploy path itself did load: this is not a usage error from before it.
    expect(builtins).toContain('zlib');
    for (const lazy of ['worker_threads', 'readline', 'assert']) expect(builtins, lazy).not.toContain(lazy);
  });
});
