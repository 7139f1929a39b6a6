import type { AuthenticateDeployer } from '../../application/authenticate-deployer.js';
import type { AuthenticateUser } from '../../application/authenticate-user.js';
import type { CancelDeploySession } from '../../application/cancel-deploy-session.js';
import type { ListDeploySessions } from '../../application/list-deploy-sessions.js';
import type { OpenDeploySession } from '../../application/open-deploy-session.js';
import type { PublishDeploySession } from '../../application/publish-deploy-session.js';
import type { ShowDeploySession } from '../../application/show-deploy-session.js';
import type { UploadObjects } from '../../application/upload-objects.js';
import type { CreateDeployKey } from '../../application/create-deploy-key.js';
import type { CreateOrRerollUser } from '../../application/create-or-reroll-user.js';
import type { DeleteUser } from '../../application/delete-user.js';
import type { DeleteProject } from '../../application/delete-project.js';
import type { DeletePreview } from '../../application/delete-preview.js';
import type { DeployRelease } from '../../application/deploy-release.js';
import type { ListDeployKeys } from '../../application/list-deploy-keys.js';
import type { ListPreviews } from '../../application/list-previews.js';
import type { ListProjects } from '../../application/list-projects.js';
import type { PromotePreview } from '../../application/promote-preview.js';
import type { ListReleases } from '../../application/list-releases.js';
import type { ListUsers } from '../../application/list-users.js';
import type { RevokeDeployKey } from '../../application/revoke-deploy-key.js';
import type { RollbackRelease } from '../../application/rollback-release.js';
import type { AddDomain } from '../../application/add-domain.js';
import type { CheckDomain } from '../../application/check-domain.js';
import type { ListDomains } from '../../application/list-domains.js';
import type { RemoveDomain } from '../../application/remove-domain.js';
import type { VerifyDomain } from '../../application/verify-domain.js';
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

/**
 * What the HTTP adapter drives. Routes read these when a request comes, never while
 * they are set up: the route table can be built from `settings` and `openApi` alone.
 */
export interface HttpDeps {
  readonly settings: HttpSettings;
  readonly createUser: CreateOrRerollUser;
  readonly deleteUser: DeleteUser;
  readonly authenticate: AuthenticateUser;
  /** A deploy's bearer token: a user token or a deploy key. */
  readonly authenticateDeployer: AuthenticateDeployer;
  readonly deploy: DeployRelease;
  readonly deploys: DeployTracker;
  /** The incremental deploy's steps (routes/deploy-sessions.ts). */
  readonly sessions: {
    readonly open: OpenDeploySession;
    readonly show: ShowDeploySession;
    readonly upload: UploadObjects;
    readonly publish: PublishDeploySession;
    readonly cancel: CancelDeploySession;
    readonly list: ListDeploySessions;
  };
  readonly slots: DeploySlots;
  /** Turns to read a manifest (POST /api/v1/deploys). */
  readonly opens: SessionOpens;
  readonly listProjects: ListProjects;
  readonly listReleases: ListReleases;
  readonly rollback: RollbackRelease;
  readonly deleteProject: DeleteProject;
  readonly listUsers: ListUsers;
  readonly createKey: CreateDeployKey;
  readonly listKeys: ListDeployKeys;
  readonly revokeKey: RevokeDeployKey;
  readonly listPreviews: ListPreviews;
  readonly promotePreview: PromotePreview;
  readonly deletePreview: DeletePreview;
  /** Custom domains (routes/domains.ts). */
  readonly domains: {
    readonly add: AddDomain;
    readonly list: ListDomains;
    readonly verify: VerifyDomain;
    readonly remove: RemoveDomain;
    readonly check: CheckDomain;
  };
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  /** The bundled CLI, served at /api/v1/cli; undefined when the build did not make it. */
  readonly cli: CliBundle | undefined;
  /** docs/openapi.yaml, parsed; served as JSON. */
  readonly openApi: Record<string, unknown>;
}
