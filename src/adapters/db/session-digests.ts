import type { Digest } from '../../domain/manifest.js';

/** Digests as deploy_session_manifests.unconfirmed holds them: 32 bytes each, one after another. */
export function packDigests(digests: readonly Digest[]): Uint8Array {
  return Buffer.from(digests.join(''), 'hex');
}

export function unpackDigests(bytes: Uint8Array): Digest[] {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
  return Array.from({ length: hex.length / 64 }, (_, i) => hex.slice(i * 64, i * 64 + 64) as Digest);
}
