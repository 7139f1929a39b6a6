import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';

export interface TarEntry {
  path: string;
  type: string;
  mode: number;
  uname: string;
  /** None where the header gives none (a directory packed portably). */
  mtime?: Date;
  bytes: Buffer;
}

/** Every byte a stream gives, once it has ended. */
export async function bytesOf(stream: AsyncIterable<Buffer | Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/**
 * Every entry of a gzip-compressed tar, read with node-tar's parser. Inflated first, with
 * no ratio limit: a batch of one large run of zeros is a fair thing for a site to hold.
 */
export async function tarEntries(archive: NodeJS.ReadableStream | Buffer): Promise<TarEntry[]> {
  const entries: TarEntry[] = [];
  const parser = new Parser({
    strict: true,
    onReadEntry: (entry: ReadEntry) => {
      const chunks: Buffer[] = [];
      entry.on('data', (chunk: Buffer) => chunks.push(chunk));
      entry.on('end', () => entries.push({ path: entry.path, type: entry.type, mode: entry.mode ?? -1, uname: entry.header.uname ?? '', ...(entry.mtime && { mtime: entry.mtime }), bytes: Buffer.concat(chunks) }));
    },
  });
  const stream = Buffer.isBuffer(archive) ? Readable.from([archive]) : archive;
  const gunzip = createGunzip();
  await new Promise<void>((resolve, reject) => {
    stream.on('error', reject);
    gunzip.on('error', reject);
    parser.on('error', reject);
    parser.on('end', resolve);
    stream.pipe(gunzip).pipe(parser as unknown as NodeJS.WritableStream);
  });
  return entries;
}
