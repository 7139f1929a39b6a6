import type { SessionObjects } from './ports/session-objects.js';
import type { ReleasePreparation } from './ports/release-preparation.js';

/**
 * What sessions closed without a publish leave goes with them: their uploads, and the
 * release prepared for them (ReleasePreparation), which holds a staging area and links the
 * user's bytes. The sweep finds either if this is cut short.
 */
export async function forgetClosedSessions(objects: SessionObjects, preparation: ReleasePreparation, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    await objects.removeUploads(id);
    await preparation.forgetPrepared(id);
  }
}
