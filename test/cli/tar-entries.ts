import { Readable } from 'node:stream';
import { Parser, type ReadEntry } from 'tar';

export interface TarEntry {
  path: string;
  type: string;
  mode: number;
  uname: string;
  bytes: Buffer;
}

/** Every entry of a (gzip-compressed or plain) tar, read with node-tar's parser as the server reads uploads. */
export async function tarEntries(archive: NodeJS.ReadableStream | Buffer): Promise<TarEntry[]> {
  const entries: TarEntry[] = [];
  const parser = new Parser({
    strict: true,
    onReadEntry: (entry: ReadEntry) => {
      const chunks: Buffer[] = [];
      entry.on('data', (chunk: Buffer) => chunks.push(chunk));
      entry.on('end', () => entries.push({ path: entry.path, type: entry.type, mode: entry.mode ?? -1, uname: entry.header.uname ?? '', bytes: Buffer.concat(chunks) }));
    },
  });
  const stream = Buffer.isBuffer(archive) ? Readable.from([archive]) : archive;
  await new Promise<void>((resolve, reject) => {
    stream.on('error', reject);
    parser.on('error', reject);
    parser.on('end', resolve);
    stream.pipe(parser as unknown as NodeJS.WritableStream);
  });
  return entries;
}
