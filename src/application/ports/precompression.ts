import type { ServiceIdentifier } from 'inversify';
import type { ProjectName } from '../../domain/project-name.js';
import type { ReleaseId } from '../../domain/release-id.js';
import type { Username } from '../../domain/username.js';

/** Compressed siblings (`X.br`, `X.gz`) of a release's text files, for the web server (domain/precompressible.ts). */
export interface Precompression {
  /** Makes the release's missing compressed siblings in the background; returns at once, never throws. */
  queue(user: Username, project: ProjectName, release: ReleaseId): void;
  /** Resolves once everything queued so far is done (tests, shutdown). */
  idle(): Promise<void>;
}

export const PRECOMPRESSION = Symbol.for('sitedrop.Precompression') as ServiceIdentifier<Precompression>;
