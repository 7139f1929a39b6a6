// Polls GET /api/v1/status every 5 ms from a process of its own, as a health checker would,
// until its parent says "stop"; then sends back every latency in ms. A poller inside the
// uploading process would time that process's own busy event loop along with the service.
import { request } from 'node:http';

const url = new URL('/api/v1/status', process.argv[2]);
const latencies = [];
let polling = true;

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
  if (message === 'stop') polling = false;
});
process.send('ready');
while (polling) {
  latencies.push(await once());
  await new Promise((resolve) => setTimeout(resolve, 5));
}
process.send({ latencies });
process.disconnect();
