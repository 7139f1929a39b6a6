/**
 * The deploys in flight, so a shutdown can wait for them, then give up on the
 * stragglers through their abort signals (which clean their staging areas).
 */
export class DeployTracker {
  private readonly running = new Set<AbortController>();
  private idleWaiters: (() => void)[] = [];

  async track<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    this.running.add(controller);
    try {
      return await work(controller.signal);
    } finally {
      this.running.delete(controller);
      if (this.running.size === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    }
  }

  /** Waits for running deploys up to `graceMs`, then aborts the rest and waits for their clean-up. */
  async drain(graceMs: number): Promise<number> {
    if (this.running.size === 0) return 0;
    const idle = new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      idle.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), graceMs))),
    ]);
    clearTimeout(timer);
    if (!timedOut) return 0;
    const cut = this.running.size;
    for (const controller of this.running) controller.abort();
    await idle;
    return cut;
  }
}
