import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ChildFleet, MAIN, NODE_FLAGS, START_ENV } from '../support/child-service.js';

const ADMIN = 'umask-probe-admin-token-0123456789abcdef';
const fleet = new ChildFleet({ ADMIN_TOKEN: ADMIN, REPLICA_ID: 'r1' }, 'sitedrop-umask-probe-');

afterEach(() => fleet.cleanUp());

describe('SIGKILL during start-up, at the unlink of the umask probe (deploys-tree.ts, umaskStripsModes)', () => {
  it('the next start leaves DEPLOYS_ROOT/.staging empty before it listens', async () => {
    const dataDir = await fleet.dataDir();
    // Started once already: the database exists, and the next start's first unlink(2) is the probe's.
    await fleet.kill(await fleet.start(dataDir));
    const traced = spawn('strace', ['-f', '-qq', '-o', '/dev/null', '-e', 'trace=unlink', '-e', 'inject=unlink:signal=SIGKILL:when=1', process.execPath, ...NODE_FLAGS, MAIN], {
      env: { ...START_ENV, PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, REPLICA_ID: 'r1', PRECOMPRESS: 'off' },
      stdio: 'ignore',
    });
    await new Promise((resolve) => traced.on('exit', resolve));
    expect((await readdir(join(dataDir, 'deploys/.staging'))).length, 'the kill landed between the probe and its unlink').toBe(1);

    await fleet.start(dataDir);
    expect(await readdir(join(dataDir, 'deploys/.staging'))).toEqual([]);
  }, 60_000);
});
