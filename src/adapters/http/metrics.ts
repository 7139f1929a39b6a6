import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * What operators alert on, in Prometheus' text format. One registry per service, not
 * prom-client's global one, so several services in one process (the tests) do not clash.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly deploys = new Counter({ name: 'sitedrop_deploys_total', help: 'Deploys by outcome', labelNames: ['outcome'] as const, registers: [this.registry] });
  private readonly duration = new Histogram({
    name: 'sitedrop_deploy_duration_seconds',
    help: 'Time from the request to the answer, for deploys that published',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  private readonly bytes = new Histogram({
    name: 'sitedrop_deploy_unpacked_bytes',
    help: 'Bytes a published deploy unpacked to',
    buckets: [1e5, 1e6, 1e7, 5e7, 1e8, 5e8, 1e9],
    registers: [this.registry],
  });
  private readonly files = new Histogram({
    name: 'sitedrop_deploy_files',
    help: 'Files in a published deploy',
    buckets: [10, 100, 1_000, 5_000, 10_000, 50_000],
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({ name: 'sitedrop_deploys_in_flight', help: 'Deploys running now', registers: [this.registry] });
  readonly waiting = new Gauge({ name: 'sitedrop_deploys_waiting', help: 'Deploys waiting for a slot (DEPLOYS_MAX_CONCURRENT), their bodies not yet read', registers: [this.registry] });
  private readonly requests = new Counter({
    name: 'sitedrop_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'sitedrop_' });
  }

  request(method: string, route: string, status: number): void {
    this.requests.inc({ method, route, status: String(status) });
  }

  deployed(seconds: number, bytes: number, files: number): void {
    this.deploys.inc({ outcome: 'success' });
    this.duration.observe(seconds);
    this.bytes.observe(bytes);
    this.files.observe(files);
  }

  /** A refused or failed deploy, by the kind of failure (the HTTP status class). */
  failed(status: number): void {
    // A full quota (507) is the user's doing, not the service failing.
    this.deploys.inc({ outcome: status === 401 ? 'unauthorized' : status < 500 || status === 507 ? 'rejected' : 'failed' });
  }
}
