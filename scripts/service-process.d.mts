import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';

export const MAIN: string;
export const NODE_FLAGS: string[];
export const START_ENV: Record<string, string>;
export function spawnService(env: Record<string, string>, options?: { main?: string; stderr?: 'pipe' | 'inherit' }): ChildProcessByStdio<null, Readable, Readable>;
export function whenListening(child: ChildProcessByStdio<null, Readable, Readable | null>, options?: { timeoutMs?: number; output?: () => string }): Promise<string>;
