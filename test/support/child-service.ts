import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnService, whenListening } from '../../scripts/service-process.mjs';

export { MAIN, NODE_FLAGS, START_ENV } from '../../scripts/service-process.mjs';

export interface Child {
  readonly process: ChildProcess;
  readonly url: string;
  output(): string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
}

/** Starts the built service (what `npm start` runs) and waits for its "listening" line (JSON, or text with LOG_FORMAT=pretty). */
export async function startChild(env: Record<string, string>): Promise<Child> {
  const child = spawnService({ PRECOMPRESS: 'off', ...env });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const url = await whenListening(child, { output: () => out });
  return { process: child, url, output: () => out, exited };
}

/** Runs the service expecting it to refuse to start; returns its exit code and output. */
export function runToExit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawnService({ PRECOMPRESS: 'off', ...env });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** A deploy as a client makes it, against any running service. */
export async function deployTo(url: string, token: string, project: string, archive: Buffer): Promise<{ status: number; body: Record<string, string> }> {
  const form = new FormData();
  form.append('project', project);
  form.append('file', new Blob([archive]), 'site.tgz');
  const r = await fetch(`${url}/api/v1/deploy`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  return { status: r.status, body: (await r.json()) as Record<string, string> };
}

/** Creates (or rerolls) a user on any running service; returns the token. */
export async function createUserAt(url: string, adminToken: string, username: string): Promise<string> {
  const r = await fetch(`${url}/api/v1/auth`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}` }, body: JSON.stringify({ username }) });
  if (r.status !== 200) throw new Error(`creating ${username}: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { token: string }).token;
}

/**
 * The service processes and data directories one test file starts: `cleanUp()`, in its
 * afterEach or afterAll, kills whatever still runs and removes the directories.
 */
export class ChildFleet {
  private readonly children: Child[] = [];
  private readonly dirs: string[] = [];

  constructor(
    /** What every service started gets, besides its DATA_DIR (ADMIN_TOKEN, REPLICA_ID). */
    private readonly env: Record<string, string>,
    /** The data directories' name in the temporary directory, before mkdtemp's six characters. */
    private readonly prefix: string,
  ) {}

  async dataDir(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), this.prefix));
    this.dirs.push(dir);
    return dir;
  }

  async start(dataDir: string, env: Record<string, string> = {}): Promise<Child> {
    const child = await startChild({ DATA_DIR: dataDir, ...this.env, ...env });
    this.children.push(child);
    return child;
  }

  /** SIGKILL: no shutdown of any kind; resolves once the process is gone. */
  async kill(child: Child): Promise<void> {
    child.process.kill('SIGKILL');
    await child.exited;
  }

  async cleanUp(): Promise<void> {
    for (const child of this.children.splice(0)) await this.kill(child);
    for (const dir of this.dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  }
}
