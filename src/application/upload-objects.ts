import { inject, injectable } from 'inversify';
import { manifestOf } from '../domain/manifest.js';
import type { Username } from '../domain/username.js';
import { DeploySessionAccess, type SessionState } from './deploy-session-access.js';
import { SESSION_OBJECTS, type SessionObjects } from './ports/session-objects.js';

export interface UploadObjectsInput {
  readonly user: Username;
  readonly token: string;
  readonly id: string;
  /** A gzip-compressed tar of objects, each named by its digest. */
  readonly batch: AsyncIterable<Uint8Array>;
  readonly signal: AbortSignal;
}

/**
 * One batch of an incremental deploy's objects: each must be one the manifest lists,
 * of its size, with bytes that hash to its name; a batch with any other is refused whole.
 */
@injectable()
export class UploadObjects {
  constructor(
    @inject(DeploySessionAccess) private readonly access: DeploySessionAccess,
    @inject(SESSION_OBJECTS) private readonly objects: SessionObjects,
  ) {}

  async execute(input: UploadObjectsInput): Promise<SessionState & { stored: number }> {
    const session = await this.access.use(input.user, input.token, input.id);
    const stored = await this.objects.receive(input.user, session.id, input.batch, manifestOf(session.files).objects, input.signal);
    return { ...(await this.access.state(session)), stored };
  }
}
