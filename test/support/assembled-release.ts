import { EMPTY_DIGEST, type ManifestFile } from '../../src/domain/manifest.js';
import type { ReleaseId } from '../../src/domain/release-id.js';
import { alice, digestOf, docs, expecting, going, packed } from '../contracts/deploys-under-test.js';
import type { RealDeploys } from './real-deploys.js';
import { file, tgz } from './tar-builder.js';

const SESSION = '0123456789abcdef0123456789abcdef';

/** A small site as a session's manifest: a page, one under a non-Latin name, an empty file. */
export const ASSEMBLED_FILES: readonly ManifestFile[] = [
  { path: 'index.html', size: 4, digest: digestOf('home') },
  { path: 'docs/深い.html', size: 4, digest: digestOf('deep') },
  { path: 'docs/empty.txt', size: 0, digest: EMPTY_DIGEST },
];

/** Uploads ASSEMBLED_FILES' objects to a session and commits the release assembled from them as alice's docs `id`. */
export async function commitAssembled(d: RealDeploys, id: ReleaseId): Promise<void> {
  const batch = async function* () {
    yield tgz([file(digestOf('home'), 'home'), file(digestOf('deep'), 'deep')]);
  };
  await d.objects.receive(alice, SESSION, batch(), expecting(new Map([[digestOf('home'), 4], [digestOf('deep'), 4]])), going());
  await d.store.commit(await d.staging.assemble(alice, SESSION, packed(ASSEMBLED_FILES)), alice, docs, id);
}
