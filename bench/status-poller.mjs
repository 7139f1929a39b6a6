// Polls GET /api/v1/status every 5 ms from a process of its own, as a health checker would,
// while its parent has it on ("start" to "pause", any number of times), until the parent
// says "stop"; then sends back every latency in ms, and how many polls failed (an error
// or another status than 200: a service that died or reset the connection). A poller
// inside the uploading process would time that process's own busy event loop along with
// the service.
import { request } from 'node:http';

const url = new URL('/api/v1/status', process.argv[2]);
const latencies = [];
let failed = 0;
let polling = false;
let stopping = false;
/** Resolves the idle wait when the parent says "start" (or "stop"). */
let wake = () => {};

/** Resolves with the latency in ms, or undefined for a failed poll. */
function once() {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(url, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? performance.now() - started : undefined));
    });
    req.on('error', () => resolve(undefined));
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
  const ms = await once();
  if (ms === undefined) failed += 1;
  else latencies.push(ms);
  await new Promise((resolve) => setTimeout(resolve, 5));
}
process.send({ latencies, failed });
process.disconnect();
