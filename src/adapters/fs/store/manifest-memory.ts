import { injectable } from 'inversify';
import type { PackedManifest } from '../../../domain/packed-manifest.js';

/**
 * Bytes of packed manifests held at most: a file costs 8 bytes and its path's, a distinct
 * content 40 more (about 90 a file for the benchmark's docs site), so this holds the last
 * release of a 40,000-page site and a few smaller ones; counted in bytes, not files, as
 * paths may be up to 1,024 bytes long.
 * Past it the least recently used go. It is memory every later deploy runs beside: the
 * service is held to 128 MiB with three deploys at once (docs/performance.md).
 */
export const REMEMBERED_BYTES_MAX = 5 * 1024 * 1024;

/**
 * The manifests of releases this process built or walked, so the next deploy relative
 * to one need not walk its files again (0.75-1.6 s for 40,000 here). Each is kept with the
 * identity of its directory (device, inode and birth time: what a release removed and
 * made again under the same id does not share; not its ctime, which the compressed
 * siblings made after each publish change), packed (packed-manifest.ts) rather than 40,000 objects on
 * the heap. Only ever a shortcut: a miss walks the release, and the manifest is checked
 * against the client's digest either way.
 */
@injectable()
export class ManifestMemory {
  /** By release directory, in order of use (a Map iterates in insertion order); `held` counts their packed bytes. */
  private readonly releases = new Map<string, { identity: string; manifest: PackedManifest }>();
  /** Staged releases' manifests, by staging area, until they are committed or discarded. */
  private readonly staged = new Map<string, PackedManifest>();
  private held = 0;

  /** A staging area holds exactly the manifest's files (an assembly): remembered if it becomes a release. */
  stage(handle: string, manifest: PackedManifest): void {
    this.staged.set(handle, manifest);
  }

  /** The staging area's manifest, if it had one, forgotten there. */
  takeStaged(handle: string): PackedManifest | undefined {
    const manifest = this.staged.get(handle);
    this.staged.delete(handle);
    return manifest;
  }

  remember(dir: string, identity: string, manifest: PackedManifest): void {
    this.forget(dir);
    if (manifest.packed.length > REMEMBERED_BYTES_MAX) return;
    this.releases.set(dir, { identity, manifest });
    this.held += manifest.packed.length;
    for (const [oldest] of this.releases) {
      if (this.held <= REMEMBERED_BYTES_MAX) break;
      this.forget(oldest);
    }
  }

  /** The manifest of `dir` if it is still the directory it was remembered as. */
  recall(dir: string, identity: string): PackedManifest | undefined {
    const known = this.releases.get(dir);
    if (known === undefined) return undefined;
    if (known.identity !== identity) {
      this.forget(dir);
      return undefined;
    }
    this.releases.delete(dir);
    this.releases.set(dir, known);
    return known.manifest;
  }

  forget(dir: string): void {
    const known = this.releases.get(dir);
    if (known === undefined) return;
    this.releases.delete(dir);
    this.held -= known.manifest.packed.length;
  }
}
