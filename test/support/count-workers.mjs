// Preloaded (`node --import`) into a CLI run by a test: counts the worker threads the
// CLI's main thread starts and says so on stderr at exit, so that a test can tell that
// the threaded path ran rather than infer it from a result either path gives.
import { syncBuiltinESMExports } from 'node:module';
import workerThreads from 'node:worker_threads';

if (workerThreads.isMainThread) {
  const { Worker } = workerThreads;
  let started = 0;
  workerThreads.Worker = class extends Worker {
    constructor(...args) {
      super(...args);
      started += 1;
    }
  };
  // The CLI imports { Worker } by name: make the named export the counting one too.
  syncBuiltinESMExports();
  process.on('exit', () => process.stderr.write(`worker threads started: ${started}\n`));
}
