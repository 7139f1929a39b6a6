import { describe, expect, it } from 'vitest';
import type { DeployRecords } from '../../src/application/ports/deploy-records.js';
import { KyselyDeployRecords } from '../../src/adapters/db/kysely-deploy-records.js';
import type { PreviewName } from '../../src/domain/preview.js';
import type { ProjectName } from '../../src/domain/project-name.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import type { Username } from '../../src/domain/username.js';
import { InMemoryDeployRecords } from '../support/fakes.js';
import { postgresDatabase, sqliteDatabase } from '../support/databases.js';
import { PG_URL } from '../support/postgres.js';

const entry = (release: string, bytes = 5_000_000_000) => ({
  user: 'alice' as Username,
  project: 'docs' as ProjectName,
  release: release as ReleaseId,
  bytes,
  files: 42,
  createdAt: new Date('2026-11-23T12:00:00.000Z'),
  preview: undefined as PreviewName | undefined,
});

function deployRecordsContract(name: string, open: () => Promise<{ records: DeployRecords; close(): Promise<void> }>): void {
  describe(`DeployRecords contract: ${name}`, () => {
    it('keeps each deploy, newest first, with sizes over 4 GiB intact', async () => {
      const { records, close } = await open();
      try {
        await records.record(entry('20261123T120000'));
        await records.record(entry('20261123T120005', 7));
        await records.record({ ...entry('20261123T120001'), project: 'other' as ProjectName });
        const kept = await records.forProject('alice' as Username, 'docs' as ProjectName);
        expect(kept.map((r) => r.release)).toEqual(['20261123T120005', '20261123T120000']);
        expect(kept[1]).toEqual(entry('20261123T120000'));
      } finally {
        await close();
      }
    });

    it('recording a release again replaces its record', async () => {
      const { records, close } = await open();
      try {
        await records.record(entry('20261123T120000'));
        const again = { ...entry('20261123T120000', 12), files: 3, createdAt: new Date('2026-11-24T08:00:00.000Z') };
        await records.record(again);
        expect(await records.forProject('alice' as Username, 'docs' as ProjectName)).toEqual([again]);
      } finally {
        await close();
      }
    });

    it('keeps the preview a release was deployed for until the release is marked live', async () => {
      const { records, close } = await open();
      try {
        const alice = 'alice' as Username;
        const docs = 'docs' as ProjectName;
        await records.record({ ...entry('20261123T120000'), preview: 'pr-7' as PreviewName });
        await records.record({ ...entry('20261123T120000'), project: 'other' as ProjectName, preview: 'pr-7' as PreviewName });
        await records.record(entry('20261123T120005'));
        expect((await records.forProject(alice, docs)).map((r) => r.preview)).toEqual([undefined, 'pr-7']);
        await records.markLive(alice, docs, '20261123T120000' as ReleaseId);
        await records.markLive(alice, docs, '20261123T999999' as ReleaseId);
        expect((await records.forProject(alice, docs)).map((r) => r.preview)).toEqual([undefined, undefined]);
        // Only that project's record.
        expect((await records.forProject(alice, 'other' as ProjectName)).map((r) => r.preview)).toEqual(['pr-7']);
        // A live deploy reusing the id (the project deleted and deployed again) is live.
        await records.record({ ...entry('20261123T120000'), project: 'other' as ProjectName });
        expect((await records.forProject(alice, 'other' as ProjectName)).map((r) => r.preview)).toEqual([undefined]);
      } finally {
        await close();
      }
    });
  });
}

deployRecordsContract('in-memory fake', async () => ({ records: new InMemoryDeployRecords(), close: async () => undefined }));

deployRecordsContract('sqlite file', async () => {
  const { db, close } = await sqliteDatabase();
  return { records: new KyselyDeployRecords(db), close };
});

if (PG_URL) {
  deployRecordsContract('postgresql server', async () => {
    const { db, close } = await postgresDatabase();
    return { records: new KyselyDeployRecords(db), close };
  });
}
