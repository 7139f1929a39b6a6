import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const IDLE_WORKERS = 2;

/**
 * Worker threads need JavaScript. Under vitest this module runs from src/*.ts, so it
 * uses the compiled worker that `npm test` builds first.
 */
function workerScript(): string {
  const here = fileURLToPath(new URL('./fs-worker.js', import.meta.url));
  if (existsSync(here)) return here;
  const built = here.replace(/([\\/])src([\\/])adapters([\\/])/, '$1dist$2adapters$3');
  if (existsSync(built)) return built;
  throw new Error(`fs worker not found at ${here} or ${built}: run npm run build`);
}

/**
 * Threads for the release tree's bulk work (unpacking, deleting trees). Each job has
 * a worker to itself; a few stay warm so a deploy does not pay for starting one.
 */
export class WorkerPool {
  private readonly idle: Worker[] = [];
  private readonly script = workerScript();
  private nextJob = 1;

  jobId(): number {
    return this.nextJob++;
  }

  acquire(): Worker {
    const idle = this.idle.pop();
    if (idle) return idle;
    // A small young generation keeps the per-entry garbage of big archives collected early.
    const worker = new Worker(this.script, { resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 256 } });
    // A worker that dies while idle must not be handed out again: nothing would answer.
    worker.once('exit', () => {
      const at = this.idle.indexOf(worker);
      if (at !== -1) this.idle.splice(at, 1);
    });
    return worker;
  }

  release(worker: Worker, healthy: boolean): void {
    if (healthy && this.idle.length < IDLE_WORKERS) this.idle.push(worker);
    else void worker.terminate();
  }

  warmUp(): void {
    this.release(this.acquire(), true);
  }

  async close(): Promise<void> {
    await Promise.all(this.idle.splice(0).map((w) => w.terminate()));
  }
}
