/**
 * Whether a deploy is writing now. Compressed siblings are background work: they give
 * way to every deploy, so a deploy's time, memory and the status endpoint's latency are
 * what they were without them (docs/performance.md, "Compressed siblings").
 */
export class DeployActivity {
  private active = 0;
  private lastEnd = 0;
  private readonly busyListeners = new Set<() => void>();

  /** Runs a deploy's work, counted as activity from start to end. */
  async track<T>(work: () => Promise<T>): Promise<T> {
    this.active += 1;
    if (this.active === 1) for (const listener of this.busyListeners) listener();
    try {
      return await work();
    } finally {
      this.active -= 1;
      this.lastEnd = Date.now();
    }
  }

  get busy(): boolean {
    return this.active > 0;
  }

  /** Calls `listener` each time a deploy starts while none ran; returns the unsubscribe. */
  onBusy(listener: () => void): () => void {
    this.busyListeners.add(listener);
    return () => this.busyListeners.delete(listener);
  }

  /** Resolves once no deploy has run for `ms`, or once `patienceMs` have gone by. */
  async quiet(ms: number, patienceMs = Infinity): Promise<void> {
    const giveUp = Date.now() + patienceMs;
    for (;;) {
      const left = Math.min(this.busy ? ms : this.lastEnd + ms - Date.now(), giveUp - Date.now());
      if (left <= 0) return;
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, ms)).unref());
    }
  }
}
