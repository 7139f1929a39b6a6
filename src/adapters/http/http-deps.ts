import type { Logger } from '../log/logger.js';
import type { CliBundle } from './cli-bundle.js';
import type { DeploySlots } from './deploy-slots.js';
import type { DeployTracker } from './deploy-tracker.js';
import type { ServiceMetrics } from './metrics.js';
import type { SessionOpens } from './session-opens.js';

export interface HttpSettings {
  readonly adminToken: string;
  readonly publicBase: string;
  /** PREVIEW_BASE: a preview's address is `<previewBase>/<user>/<project>/<preview>/`. */
  readonly previewBase: string;
  readonly maxUploadBytes: number;
  /** MAX_FILES: an incremental deploy's manifest may list this many files, so its body may be this large. */
  readonly maxFiles: number;
  /** UPLOAD_IDLE_SECONDS: a deploy whose body stops arriving this long fails; 0 never does. */
  readonly uploadIdleSeconds: number;
  /** UPLOAD_STALL_SECONDS: a deploy whose body stops arriving this long loses its slot to one that waits; 0 never does. */
  readonly uploadStallSeconds: number;
}

/** A use case by its class, resolved once the service runs (service.ts: the container). */
export type UseCases = <T>(useCase: new (...args: never[]) => T) => T;

/**
 * What the HTTP adapter drives. Routes read these when a request comes, never while
 * they are set up: the route table can be built from `settings` and `openApi` alone.
 */
export interface HttpDeps {
  readonly settings: HttpSettings;
  /** The use cases, as the composition root binds them: a route names the one it runs. */
  readonly useCases: UseCases;
  /** Deploys in flight, for the shutdown. */
  readonly deploys: DeployTracker;
  readonly slots: DeploySlots;
  /** Turns to read a manifest (POST /api/v1/deploys). */
  readonly opens: SessionOpens;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /** The bundled CLI, served at /api/v1/cli; undefined when the build did not make it. */
  readonly cli: CliBundle | undefined;
  /** docs/openapi.yaml, parsed; served as JSON. */
  readonly openApi: Record<string, unknown>;
}
