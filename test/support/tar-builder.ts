import { gzipSync } from 'node:zlib';

/**
 * Writes tar archives byte by byte, so tests can build what no honest tar tool
 * would: links that escape, `..` in PAX records, devices, duplicates, bad names.
 */
export interface RawEntry {
  /** A string is written as UTF-8; a Buffer as is (for invalid UTF-8). */
  readonly path: string | Buffer;
  /** ustar typeflag: '0' file, '5' directory, '1' hard link, '2' symlink, '3' char device, '4' block device, '6' FIFO, 'x' PAX. */
  readonly type?: string;
  readonly body?: Buffer | string;
  readonly mode?: number;
  readonly linkpath?: string;
  /** Declared size when it must differ from the body (truncation tests). */
  readonly size?: number;
  readonly uid?: number;
  /** The ustar prefix field (bytes 345-499), prepended to the name by readers. */
  readonly prefix?: string;
}

const BLOCK = 512;

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

export function header(entry: RawEntry, size: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  const name = typeof entry.path === 'string' ? Buffer.from(entry.path, 'utf8') : entry.path;
  if (name.length > 100) throw new Error(`header name over 100 bytes, use pax(): ${name.length}`);
  name.copy(block, 0);
  block.write(octal(entry.mode ?? (entry.type === '5' ? 0o755 : 0o644), 8), 100, 'ascii');
  block.write(octal(entry.uid ?? 0, 8), 108, 'ascii');
  block.write(octal(entry.uid ?? 0, 8), 116, 'ascii');
  block.write(octal(size, 12), 124, 'ascii');
  block.write(octal(1_700_000_000, 12), 136, 'ascii');
  block.write(entry.type ?? '0', 156, 'ascii');
  if (entry.linkpath) block.write(entry.linkpath, 157, 'utf8');
  block.write('ustar\u000000', 257, 'ascii');
  block.write('root', 265, 'ascii');
  block.write('root', 297, 'ascii');
  if (entry.prefix) block.write(entry.prefix, 345, 'utf8');
  block.fill(' ', 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return block;
}

function padded(body: Buffer): Buffer {
  const rest = body.length % BLOCK;
  return rest === 0 ? body : Buffer.concat([body, Buffer.alloc(BLOCK - rest)]);
}

/** A PAX extended header entry that applies to the entry after it. */
export function pax(records: Record<string, string>, name = 'PaxHeader'): RawEntry {
  let text = '';
  for (const [key, value] of Object.entries(records)) {
    const line = ` ${key}=${value}\n`;
    let length = Buffer.byteLength(line) + 1;
    while (String(length).length + Buffer.byteLength(line) !== length) length = String(length).length + Buffer.byteLength(line);
    text += `${length}${line}`;
  }
  return { path: name, type: 'x', body: text };
}

export function tar(entries: readonly RawEntry[], options: { endMarker?: boolean } = {}): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const body = entry.body === undefined ? Buffer.alloc(0) : Buffer.from(entry.body);
    parts.push(header(entry, entry.size ?? body.length));
    if (body.length > 0) parts.push(padded(body));
  }
  if (options.endMarker ?? true) parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}

export function tgz(entries: readonly RawEntry[], options: { endMarker?: boolean } = {}): Buffer {
  return gzipSync(tar(entries, options));
}

export const file = (path: string, body: string | Buffer = `content of ${path}\n`): RawEntry => ({ path, body });
export const dir = (path: string): RawEntry => ({ path, type: '5' });
