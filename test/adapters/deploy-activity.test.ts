import { describe, expect, it } from 'vitest';
import { DeployActivity } from '../../src/adapters/precompress/deploy-activity.js';

describe('DeployActivity: what background work gives way to', () => {
  it('is busy while a deploy runs, tells its listeners when one starts, and is quiet a while after the last ends', async () => {
    const activity = new DeployActivity();
    let told = 0;
    activity.onBusy(() => (told += 1));
    let finish!: () => void;
    const running = activity.track(() => new Promise<void>((resolve) => (finish = resolve)));
    expect(activity.busy).toBe(true);
    expect(told).toBe(1);
    let quiet = false;
    const waited = activity.quiet(50).then(() => (quiet = true));
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(quiet).toBe(false);
    finish();
    await running;
    const ended = Date.now();
    await waited;
    expect(Date.now() - ended).toBeGreaterThanOrEqual(45);
    expect(activity.busy).toBe(false);
  });

  it('stops waiting once its patience is spent, busy or not', async () => {
    const activity = new DeployActivity();
    void activity.track(() => new Promise<void>(() => undefined));
    const started = Date.now();
    await activity.quiet(50, 150);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(activity.busy).toBe(true);
  });
});
