#!/usr/bin/env node
// Deploys one archive again and again through a built service, then stops it: a whole
// process to time from outside (`/usr/bin/time -v`, or pairs of builds alternated), for
// comparing two builds' CPU, wall time and peak RSS on the same fixture.
//   node bench/deploy-loop.mjs --main <tree>/dist/main.js --archive site.tgz --rounds 6 --concurrent 3
// Each round sends `concurrent` deploys at once, to projects p0, p1, ..., so from the
// sixth round on every deploy also prunes one release, as in steady use.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createUser, httpDeploy, startService } from './service.mjs';

const { values: opts } = parseArgs({
  options: {
    main: { type: 'string' },
    archive: { type: 'string' },
    rounds: { type: 'string', default: '5' },
    concurrent: { type: 'string', default: '1' },
    // tmpfs by default: the disk's swings would drown a difference in CPU.
    dir: { type: 'string', default: '/dev/shm' },
  },
});
if (!opts.archive) throw new Error('--archive <site.tgz> is required');
const dataDir = mkdtempSync(join(opts.dir ?? tmpdir(), 'sitedrop-loop-'));
try {
  const service = await startService(dataDir, opts.main ? { main: opts.main } : {});
  const token = await createUser(service.url, 'loop');
  for (let round = 0; round < Number(opts.rounds); round += 1) {
    await Promise.all(Array.from({ length: Number(opts.concurrent) }, (_, k) => httpDeploy(service.url, token, `p${k}`, opts.archive)));
  }
  await service.stop();
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
