import { describe, expect, it } from 'vitest';
import { InProcessDeployLock } from '../../src/adapters/lock/in-process-deploy-lock.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { Username } from '../../src/domain/username.js';

const u = 'u' as Username;
const p = (name: string) => name as ProjectName;
const tick = () => new Promise((r) => setTimeout(r, 5));

describe('InProcessDeployLock', () => {
  it('runs one project at a time, in arrival order', async () => {
    const lock = new InProcessDeployLock();
    const log: string[] = [];
    const job = (name: string) => lock.withProject(u, p('a'), async () => {
      log.push(`${name} start`);
      await tick();
      log.push(`${name} end`);
    });
    await Promise.all([job('1'), job('2'), job('3')]);
    expect(log).toEqual(['1 start', '1 end', '2 start', '2 end', '3 start', '3 end']);
  });

  it('runs different projects side by side', async () => {
    const lock = new InProcessDeployLock();
    let inside = 0;
    let most = 0;
    const job = (name: string) => lock.withProject(u, p(name), async () => {
      inside += 1;
      most = Math.max(most, inside);
      await tick();
      inside -= 1;
    });
    await Promise.all([job('a'), job('b'), job('c')]);
    expect(most).toBe(3);
  });

  it('a user-wide job waits for running projects and holds off later ones', async () => {
    const lock = new InProcessDeployLock();
    const log: string[] = [];
    const project = (name: string) => lock.withProject(u, p(name), async () => {
      log.push(`${name} start`);
      await tick();
      log.push(`${name} end`);
    });
    const first = project('a');
    const wipe = lock.withUser(u, async () => {
      log.push('wipe');
    });
    const later = project('b');
    await Promise.all([first, wipe, later]);
    expect(log).toEqual(['a start', 'a end', 'wipe', 'b start', 'b end']);
  });

  it('releases the lock when the work throws', async () => {
    const lock = new InProcessDeployLock();
    await expect(lock.withProject(u, p('a'), async () => { throw new Error('boom'); })).rejects.toThrow('boom');
    await expect(lock.withProject(u, p('a'), async () => 'ok')).resolves.toBe('ok');
  });
});
