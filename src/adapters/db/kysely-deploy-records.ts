import { inject, injectable } from 'inversify';
import type { Kysely } from 'kysely';
import type { DeployRecord, DeployRecords } from '../../application/ports/deploy-records.js';
import type { PreviewName } from '../../domain/preview.js';
import type { ProjectName } from '../../domain/project-name.js';
import type { ReleaseId } from '../../domain/release-id.js';
import type { Username } from '../../domain/username.js';
import { DATABASE } from './kysely-token-store.js';
import type { Schema } from './schema.js';

@injectable()
export class KyselyDeployRecords implements DeployRecords {
  constructor(@inject(DATABASE) private readonly db: Kysely<Schema>) {}

  async record(entry: DeployRecord): Promise<void> {
    const measured = { bytes: entry.bytes, files: entry.files, created_at: entry.createdAt.toISOString(), preview: entry.preview ?? null };
    await this.db
      .insertInto('deploys')
      .values({ username: entry.user, project: entry.project, release: entry.release, ...measured })
      // A project deleted and deployed again can reuse a release id: the old record is stale.
      .onConflict((oc) => oc.columns(['username', 'project', 'release']).doUpdateSet(measured))
      .execute();
  }

  async forProject(user: Username, project: ProjectName): Promise<DeployRecord[]> {
    const rows = await this.db
      .selectFrom('deploys')
      .selectAll()
      .where('username', '=', user)
      .where('project', '=', project)
      .orderBy('release', 'desc')
      .execute();
    return rows.map((row) => ({
      user: row.username as Username,
      project: row.project as ProjectName,
      release: row.release as ReleaseId,
      bytes: Number(row.bytes),
      files: row.files,
      createdAt: new Date(row.created_at),
      preview: (row.preview ?? undefined) as PreviewName | undefined,
    }));
  }

  async markLive(user: Username, project: ProjectName, release: ReleaseId): Promise<void> {
    await this.db.updateTable('deploys').set({ preview: null }).where('username', '=', user).where('project', '=', project).where('release', '=', release).execute();
  }
}
