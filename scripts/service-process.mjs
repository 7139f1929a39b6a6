// The built service started as `npm start` starts it (the same environment assignments
// and node flags), on an ephemeral port of 127.0.0.1: the one spawner of the tests
// (test/support/child-service.ts) and the benchmarks (bench/service.mjs).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const START = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.start.split(/\s+/);
export const NODE_FLAGS = START.filter((word) => word.startsWith('--'));
export const START_ENV = Object.fromEntries(START.filter((word) => /^[A-Z_][A-Z0-9_]*=/.test(word)).map((word) => word.split('=')));

/** Spawns the service with `env` on top of npm start's; `main` runs another build (an older tree's, to compare). */
export function spawnService(env, { main = MAIN, stderr = 'pipe' } = {}) {
  return spawn(process.execPath, [...NODE_FLAGS, main], {
    env: { ...START_ENV, PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', stderr],
  });
}

const LISTENING = [/"url":"([^"]+)"[^\n]*"msg":"listening"/, /INFO[^\n]*: listening[\s\S]*?url: "([^"]+)"/];

/**
 * Resolves with the service's address once it logs that it listens (as JSON or, with
 * LOG_FORMAT=pretty, as text); rejects if it exits first or is silent for `timeoutMs`.
 * `output` says what it wrote, for the error.
 */
export function whenListening(child, { timeoutMs = 15_000, output = () => '' } = {}) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => fail(new Error(`service did not start:\n${output()}`)), timeoutMs);
    const onExit = (code, signal) => fail(new Error(`service exited (${code ?? signal}) before listening:\n${output()}`));
    const onData = (chunk) => {
      seen += chunk;
      const match = LISTENING.map((pattern) => pattern.exec(seen)).find(Boolean);
      if (!match) return;
      done();
      resolve(match[1]);
    };
    function done() {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.off('exit', onExit);
    }
    function fail(error) {
      done();
      reject(error);
    }
    child.stdout.on('data', onData);
    child.on('exit', onExit);
  });
}
