// Polls GET /api/v1/status every 5 ms from a process of its own, as a health checker would,
// while its parent has it on ("start" to "pause", any number of times), until the parent
// says "stop"; then sends back every latency in ms. A poller inside the uploading process
// would time that process's own busy event loop along with the service.
import { request } from 'node:http';

const url = new URL('/api/v1/status', process.argv[2]);
const latencies = [];
let polling = false;
let stopping = false;
/** Resolves the idle wait when the parent says "start" (or "stop"). */
let wake = () => {};

function once() {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`status answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

process.on('message', (message) => {
  if (message === 'start') polling = true;
  else if (message === 'pause') polling = false;
  else if (message === 'stop') {
    polling = false;
    stopping = true;
  }
  wake();
});
process.send('ready');
while (!stopping) {
  if (!polling) {
    await new Promise((resolve) => (wake = resolve));
    continue;
  }
  latencies.push(await once());
  await new Promise((resolve) => setTimeout(resolve, 5));
}
process.send({ latencies });
process.disconnect();
