import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SIBLING_SETTINGS } from '../../src/adapters/precompress/sibling-settings.js';
import { until } from '../support/until.js';

const PROCESS = fileURLToPath(new URL('../../dist/adapters/precompress/precompress-process.js', import.meta.url));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The compressing process as the service forks it (the built one), with a parent of its own that the test can kill. */
describe('the precompression process waiting for a deploy', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sitedrop-precompress-process-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('makes nothing while its pause file is there, and ends when its service is killed meanwhile', async () => {
    const release = join(dir, 'release');
    const scratch = join(dir, 'scratch');
    await mkdir(release);
    await mkdir(scratch);
    for (let i = 0; i < 20; i += 1) await writeFile(join(release, `page-${i}.html`), `<p>page ${i}</p>\n`.repeat(50));
    const pauseFile = join(scratch, '.pause');
    await writeFile(pauseFile, '');
    const job = { id: 1, release, store: join(dir, 'store'), scratch, pauseFile, settings: SIBLING_SETTINGS };
    // A stand-in for the service: forks the process, hands it the job, prints its pid, and waits.
    const script = join(dir, 'service.mjs');
    await writeFile(script, `
      import { fork } from 'node:child_process';
      const child = fork(${JSON.stringify(PROCESS)}, [], { serialization: 'advanced', stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
      child.send(${JSON.stringify(job)});
      console.log(child.pid);
      setInterval(() => {}, 1000);
    `);
    const parent = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const child = await new Promise<number>((resolve) => parent.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))));
    try {
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(alive(child)).toBe(true);
      expect((await readdir(release)).filter((name) => name.endsWith('.gz') || name.endsWith('.br'))).toEqual([]);
      parent.kill('SIGKILL');
      // Waiting, it sees its parent go (no message could reach it) and ends, rather than waiting for ever.
      await until(async () => !alive(child) || isZombie(child), 'the orphaned process to end', 10_000);
    } finally {
      parent.kill('SIGKILL');
      if (alive(child) && !isZombie(child)) process.kill(child, 'SIGKILL');
    }
    expect(existsSync(pauseFile)).toBe(true);
  });
});

/** Whether the process has ended and waits only to be reaped: its state in /proc/<pid>/stat is Z. */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    // No such process any more.
    return true;
  }
}
