import { inject, injectable } from 'inversify';
import { RELEASE_FS, type ReleaseFs } from './ports/release-fs.js';

/**
 * Run at start-up: a crash can leave staging areas and temporary links, never a
 * half-published release, so only those are removed and everything else is left alone.
 */
@injectable()
export class CleanUpLeftovers {
  constructor(@inject(RELEASE_FS) private readonly releases: ReleaseFs) {}

  execute(): Promise<string[]> {
    return this.releases.removeLeftovers();
  }
}
