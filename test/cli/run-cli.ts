import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The built CLI, as `npm run build` leaves it (tsc's output, not the bundle). */
export const CLI = fileURLToPath(new URL('../../dist/adapters/cli/main.js', import.meta.url));

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Node running `args` with only the environment given (and PATH): what a shell or a pipeline would start. */
export function startNode(args: string[], options: { env: Record<string, string>; cwd?: string }): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(process.execPath, args, { cwd: options.cwd, env: { PATH: process.env.PATH ?? '', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<Run>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal === null ? 1 : 128), stdout, stderr }));
  });
  return { child, done };
}

export const runNode = (args: string[], options: { env: Record<string, string>; cwd?: string }): Promise<Run> => startNode(args, options).done;
