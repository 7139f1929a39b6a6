type Collect = (options?: { type: 'minor' | 'major' }) => void;

/** V8's collector, when the process runs with --expose-gc (`npm start` does). */
const collect = (globalThis as { gc?: Collect }).gc;

/**
 * Collects the young generation after every `everyBytes` of buffers a thread has let go of.
 * Upload and inflate buffers live outside V8's heap, and V8 collects them only once tens of
 * MB have piled up: a 100 MB upload peaked at 143 MiB RSS that way. A minor collection of a
 * small young generation takes well under a millisecond; docs/performance.md has the figures.
 * Without --expose-gc this does nothing, and memory is bounded only by V8's own schedule.
 */
export class YoungGarbage {
  private sinceCollected = 0;

  constructor(private readonly everyBytes: number) {}

  dropped(bytes: number): void {
    this.sinceCollected += bytes;
    if (this.sinceCollected < this.everyBytes || !collect) return;
    this.sinceCollected = 0;
    collect({ type: 'minor' });
  }
}
