import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

const START: string[] = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } }).scripts.start.split(/\s+/);
/** The node flags and environment `npm start` sets, so tests run the service exactly as it is run. */
export const NODE_FLAGS: string[] = START.filter((word) => word.startsWith('--'));
export const START_ENV: Record<string, string> = Object.fromEntries(START.filter((word) => /^[A-Z_][A-Z0-9_]*=/.test(word)).map((word) => word.split('=') as [string, string]));

export interface Child {
  readonly process: ChildProcess;
  readonly url: string;
  output(): string;
  /** Resolves with the exit code (or the signal's name). */
  exited: Promise<number | string>;
}

/** Starts the built service (what `npm start` runs) and waits for its "listening" line. */
export async function startChild(env: Record<string, string>): Promise<Child> {
  const child = spawn(process.execPath, [...NODE_FLAGS, MAIN], { env: { ...START_ENV, PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${out}`)), 15_000);
    const check = () => {
      const match = /"url":"([^"]+)"[^\n]*"msg":"listening"/.exec(out);
      if (match) {
        clearTimeout(timer);
        child.stdout.off('data', check);
        resolve(match[1]!);
      }
    };
    child.stdout.on('data', check);
    void exited.then((code) => reject(new Error(`service exited (${code}) before listening:\n${out}`)));
  });
  return { process: child, url, output: () => out, exited };
}

/** Runs the service expecting it to refuse to start; returns its exit code and output. */
export function runToExit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...NODE_FLAGS, MAIN], { env: { ...START_ENV, PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
