import { injectable } from 'inversify';
import type { Digest, ManifestFile } from '../../domain/manifest.js';

/**
 * Bytes of packed manifests held at most: a file costs 44 bytes and its path's (80-90 for
 * the benchmark's docs site), so this holds the last release of a 40,000-page site and a
 * few smaller ones; counted in bytes, not files, as paths may be up to 1,024 bytes long.
 * Past it the least recently used go. It is memory every later deploy runs beside: the
 * service is held to 128 MiB with three deploys at once (docs/performance.md).
 */
export const REMEMBERED_BYTES_MAX = 5 * 1024 * 1024;

const DIGEST_BYTES = 32;
const SIZE_BYTES = 8;
const PATH_LENGTH_BYTES = 4;

/**
 * The manifests of releases this process built or walked, so the next deploy relative
 * to one need not walk its files again (0.75 s for 40,000 here). Each is kept with the
 * identity of its directory as it was then (device, inode, ctime: what a release removed
 * and made again under the same id does not share), packed into one buffer rather than
 * 40,000 objects on the heap. Only ever a shortcut: a miss walks the release, and the
 * manifest is checked against the client's digest either way.
 */
@injectable()
export class ManifestMemory {
  /** By release directory, in order of use (a Map iterates in insertion order); `held` counts their packed bytes. */
  private readonly releases = new Map<string, { identity: string; files: number; packed: Buffer }>();
  /** Staged releases' manifests, by staging area, until they are committed or discarded. */
  private readonly staged = new Map<string, readonly ManifestFile[]>();
  private held = 0;

  /** A staging area holds exactly `files` (an assembly): remembered if it becomes a release. */
  stage(handle: string, files: readonly ManifestFile[]): void {
    this.staged.set(handle, files);
  }

  /** The staging area's manifest, if it had one, forgotten there. */
  takeStaged(handle: string): readonly ManifestFile[] | undefined {
    const files = this.staged.get(handle);
    this.staged.delete(handle);
    return files;
  }

  remember(dir: string, identity: string, files: readonly ManifestFile[]): void {
    this.forget(dir);
    if (packedBytes(files) > REMEMBERED_BYTES_MAX) return;
    const packed = pack(files);
    this.releases.set(dir, { identity, files: files.length, packed });
    this.held += packed.length;
    for (const [oldest] of this.releases) {
      if (this.held <= REMEMBERED_BYTES_MAX) break;
      this.forget(oldest);
    }
  }

  /** The manifest of `dir` if it is still the directory it was remembered as. */
  recall(dir: string, identity: string): ManifestFile[] | undefined {
    const known = this.releases.get(dir);
    if (known === undefined) return undefined;
    if (known.identity !== identity) {
      this.forget(dir);
      return undefined;
    }
    this.releases.delete(dir);
    this.releases.set(dir, known);
    return unpack(known.packed, known.files);
  }

  forget(dir: string): void {
    const known = this.releases.get(dir);
    if (known === undefined) return;
    this.releases.delete(dir);
    this.held -= known.packed.length;
  }
}

function packedBytes(files: readonly ManifestFile[]): number {
  let length = 0;
  for (const file of files) length += DIGEST_BYTES + SIZE_BYTES + PATH_LENGTH_BYTES + Buffer.byteLength(file.path);
  return length;
}

/** Each file as its digest's 32 bytes, its size, its path's length in bytes, then its path (UTF-8). */
function pack(files: readonly ManifestFile[]): Buffer {
  const packed = Buffer.allocUnsafeSlow(packedBytes(files));
  let at = 0;
  for (const file of files) {
    at += packed.write(file.digest, at, DIGEST_BYTES, 'hex');
    at = packed.writeDoubleLE(file.size, at);
    const pathAt = at + PATH_LENGTH_BYTES;
    const pathBytes = packed.write(file.path, pathAt, 'utf8');
    at = packed.writeUInt32LE(pathBytes, at) + pathBytes;
  }
  return packed;
}

function unpack(packed: Buffer, count: number): ManifestFile[] {
  const files = new Array<ManifestFile>(count);
  let at = 0;
  for (let i = 0; i < count; i += 1) {
    const digest = packed.toString('hex', at, at + DIGEST_BYTES) as Digest;
    const size = packed.readDoubleLE(at + DIGEST_BYTES);
    const pathBytes = packed.readUInt32LE(at + DIGEST_BYTES + SIZE_BYTES);
    const pathAt = at + DIGEST_BYTES + SIZE_BYTES + PATH_LENGTH_BYTES;
    files[i] = { path: packed.toString('utf8', pathAt, pathAt + pathBytes), size, digest };
    at = pathAt + pathBytes;
  }
  return files;
}
