import { createGzip } from 'node:zlib';
import { dir, file, pax, tar, tgz, type RawEntry } from './tar-builder.js';
import { gzipSync } from 'node:zlib';
import { sha256 } from './sha256.js';

/**
 * Every archive shape the hardening issue names, built in code (no binary blobs).
 * `reason` is the exact text after "failed to extract tarball: ", or a pattern.
 * Anything that escapes is named sitedrop-pwned*, so a test can look for it anywhere.
 */
export interface HostileArchive {
  readonly name: string;
  readonly archive: () => Buffer | Promise<Buffer>;
  readonly reason: string | RegExp;
}

const PWNED = 'sitedrop-pwned';
const ok = file('index.html', '<h1>ok</h1>');
const twice = (kind: string) => `archive is compressed twice: the inflated stream is ${kind}, not tar (upload a .tar.gz compressed once)`;
const sparse = (p: string) => `GNU sparse files are not supported (archive without --sparse): ${p}`;
const dotdot = (p: string) => `path contains '..' component which is not allowed: ${p}`;

export const HOSTILE: readonly HostileArchive[] = [
  { name: '.. at the start', archive: () => tgz([ok, file(`../${PWNED}`)]), reason: dotdot(`../${PWNED}`) },
  { name: '.. in the middle', archive: () => tgz([ok, file(`a/../../${PWNED}`)]), reason: dotdot(`a/../../${PWNED}`) },
  { name: '.. as a directory entry', archive: () => tgz([ok, dir('../')]), reason: dotdot('../') },
  { name: '.. in a PAX path record', archive: () => tgz([ok, pax({ path: `../../${PWNED}` }), file('innocent.html')]), reason: dotdot(`../../${PWNED}`) },
  { name: '.. in the header name under an innocent PAX path', archive: () => tgz([ok, pax({ path: 'innocent.html' }), file(`../${PWNED}`)]), reason: dotdot(`../${PWNED}`) },
  { name: '.. behind backslashes', archive: () => tgz([ok, file(`a\\..\\..\\${PWNED}`)]), reason: dotdot(`a\\..\\..\\${PWNED}`) },
  { name: 'an absolute path', archive: () => tgz([ok, file(`/tmp/${PWNED}`)]), reason: `absolute path not allowed: /tmp/${PWNED}` },
  { name: 'a // path', archive: () => tgz([ok, file(`//tmp/${PWNED}`)]), reason: `absolute path not allowed: //tmp/${PWNED}` },
  { name: 'a drive-letter path', archive: () => tgz([ok, file(`C:${PWNED}`)]), reason: `drive-letter path not allowed: C:${PWNED}` },
  { name: 'a backslash path', archive: () => tgz([ok, file(`dir\\${PWNED}`)]), reason: `backslash in path not allowed: dir\\${PWNED}` },
  { name: 'a symlink to /etc, then a write through it', archive: () => tgz([ok, { path: 'etc', type: '2', linkpath: '/etc' }, file(`etc/${PWNED}`)]), reason: 'links are not allowed: etc' },
  { name: 'a symlink out, then a file at its name', archive: () => tgz([ok, { path: 'evil', type: '2', linkpath: `../../../${PWNED}` }, file('evil', 'overwrite')]), reason: 'links are not allowed: evil' },
  { name: 'a link chain a -> . and b -> a/..', archive: () => tgz([ok, { path: 'a', type: '2', linkpath: '.' }, { path: 'b', type: '2', linkpath: 'a/..' }, file(`b/${PWNED}`)]), reason: 'links are not allowed: a' },
  { name: 'a hard link to /etc/passwd', archive: () => tgz([ok, { path: 'passwd', type: '1', linkpath: '/etc/passwd' }]), reason: 'links are not allowed: passwd' },
  { name: 'a hard link, then an overwrite through it', archive: () => tgz([ok, { path: 'h', type: '1', linkpath: 'index.html' }, file('h', 'overwrite')]), reason: 'links are not allowed: h' },
  { name: 'a character device', archive: () => tgz([ok, { path: 'null', type: '3' }]), reason: 'entry type CharacterDevice is not allowed: null' },
  { name: 'a block device', archive: () => tgz([ok, { path: 'sda', type: '4' }]), reason: 'entry type BlockDevice is not allowed: sda' },
  { name: 'a FIFO', archive: () => tgz([ok, { path: 'pipe', type: '6' }]), reason: 'entry type FIFO is not allowed: pipe' },
  { name: 'a tape volume header', archive: () => tgz([ok, { path: 'vol', type: 'V' }]), reason: /^entry type \w+ is not allowed: vol$/ },
  { name: 'a duplicate path', archive: () => tgz([ok, file('a.html'), file('a.html', 'again')]), reason: 'duplicate path: a.html' },
  { name: 'a file, then a directory at its path', archive: () => tgz([ok, file('a'), dir('a/')]), reason: 'a file and a directory share the path: a' },
  { name: 'a directory, then a file at its path', archive: () => tgz([ok, dir('a/'), file('a')]), reason: 'a file and a directory share the path: a' },
  { name: 'a file under a file', archive: () => tgz([ok, file('a'), file('a/b')]), reason: 'a file and a directory share the path: a' },
  { name: 'a name that is not UTF-8', archive: () => tgz([ok, { path: Buffer.from([0x66, 0xff, 0xfe, 0x2e, 0x68]), body: 'x' }]), reason: /^path is not valid UTF-8: / },
  { name: 'a name with a control character', archive: () => tgz([ok, file('a\u0007b.html')]), reason: 'path contains a control character: a\\u0007b.html' },
  { name: 'a name with a newline', archive: () => tgz([ok, file('a\nb.html')]), reason: 'path contains a control character: a\\u000ab.html' },
  { name: 'a 256-byte component', archive: () => tgz([ok, pax({ path: 'c'.repeat(256) }), file('long')]), reason: `path component longer than 255 bytes: ${'c'.repeat(200)}…` },
  { name: 'a path over 1024 bytes', archive: () => tgz([ok, pax({ path: Array(9).fill('p'.repeat(120)).join('/') }), file('long')]), reason: /^path longer than 1024 bytes: / },
  { name: 'nesting 33 deep', archive: () => tgz([ok, file(Array(33).fill('d').join('/'))]), reason: /^path nested deeper than 32 levels: / },
  { name: 'a file as the archive root', archive: () => tgz([{ path: '.', body: 'x' }]), reason: 'a file cannot be the archive root' },
  { name: 'a truncated tar body', archive: () => tgz([ok, { path: 'cut.html', body: 'short', size: 4096 }], { endMarker: false }), reason: /^invalid tar archive: Truncated input/ },
  { name: 'a bad header checksum', archive: () => { const t = tar([ok, file('b.html')]); t[512 * 2 + 148] = 0x37; return gzipSync(t); }, reason: /^invalid tar archive: / },
  { name: 'gzip that is not tar', archive: () => gzipSync(Buffer.from('hello, this is plain text and not a tarball'.repeat(20))), reason: 'the inflated stream is not a tar archive' },
  { name: 'gzip of less than one tar block', archive: () => gzipSync(Buffer.from('tiny')), reason: 'the inflated stream is not a tar archive' },
  { name: 'a tarball compressed twice', archive: () => gzipSync(tgz([ok])), reason: twice('gzip') },
  { name: 'zstd inside gzip', archive: () => gzipSync(Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), tar([ok])])), reason: twice('zstd') },
  { name: 'bzip2 inside gzip', archive: () => gzipSync(Buffer.concat([Buffer.from('BZh91AY&SY'), tar([ok])])), reason: twice('bzip2') },
  { name: 'xz inside gzip', archive: () => gzipSync(Buffer.concat([Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]), tar([ok])])), reason: twice('xz') },
  { name: 'entries after a lone zero block, which tar stops at', archive: () => gzipSync(Buffer.concat([tar([ok], { endMarker: false }), Buffer.alloc(512), tar([file(PWNED)])])), reason: 'entries after a lone zero block (tar stops reading there): sitedrop-pwned' },
  { name: 'GNU sparse, old GNU type S', archive: () => tgz([ok, { path: 'holes.bin', type: 'S', body: 'data' }]), reason: sparse('holes.bin') },
  { name: 'GNU sparse, pax 0.0 (offset/numbytes)', archive: () => tgz([ok, pax({ 'GNU.sparse.size': '1048576', 'GNU.sparse.numblocks': '1', 'GNU.sparse.offset': '1048572', 'GNU.sparse.numbytes': '4' }), file('holes.bin', 'data')]), reason: sparse('holes.bin') },
  { name: 'GNU sparse, pax 0.1 (map)', archive: () => tgz([ok, pax({ 'GNU.sparse.size': '1048576', 'GNU.sparse.numblocks': '1', 'GNU.sparse.map': '1048572,4' }), file('holes.bin', 'data')]), reason: sparse('holes.bin') },
  { name: 'GNU sparse, pax 1.0 (GNUSparseFile.<pid>/<name>)', archive: () => tgz([ok, pax({ 'GNU.sparse.major': '1', 'GNU.sparse.minor': '0', 'GNU.sparse.name': 'holes.bin', 'GNU.sparse.realsize': '1048576' }), file('GNUSparseFile.42/holes.bin', Buffer.concat([Buffer.from('1\n1048572\n4\n'), Buffer.alloc(500), Buffer.from('data')]))]), reason: sparse('GNUSparseFile.42/holes.bin') },
  { name: 'a global pax header that renames every entry', archive: () => tgz([{ ...pax({ path: 'index.html' }), type: 'g' }, file('a.html'), file('b.html')]), reason: 'a global pax header may not set path' },
  { name: 'a global pax header that resizes every entry', archive: () => tgz([{ ...pax({ size: '3' }), type: 'g' }, ok]), reason: 'a global pax header may not set size' },
  { name: 'a pax record hidden in another record\'s value', archive: () => tgz([ok, { path: 'PaxHeader', type: 'x', body: '41 comment=x\n28 path=sitedrop-pwned.html\n' }, file('innocent.html')]), reason: "a pax record's value holds a newline: comment" },
  { name: 'a pax record whose length is wrong', archive: () => tgz([ok, { path: 'PaxHeader', type: 'x', body: '99 path=x.html\n' }, file('innocent.html')]), reason: 'malformed pax extended header' },
  { name: 'a pax header over its 1 MiB bound, which the parser would skip', archive: () => tgz([ok, pax({ comment: 'c'.repeat(1024 * 1024) }), file('after.html')]), reason: 'metadata header ExtendedHeader larger than 1 MiB: PaxHeader' },
  { name: 'a GNU long name over its 1 MiB bound', archive: () => tgz([ok, { path: '././@LongLink', type: 'L', body: 'l'.repeat(1024 * 1024 + 1) }, file('short.html')]), reason: 'metadata header NextFileHasLongPath larger than 1 MiB: ././@LongLink' },
  { name: 'a contiguous-file entry whose name ends in /', archive: () => tgz([ok, { path: 'notadir/', type: '7', body: 'x' }]), reason: "a file entry's name ends in '/': notadir/" },
  { name: 'a refused entry type whose name holds terminal escapes', archive: () => tgz([ok, { path: 'pipe\u001b[2J', type: '6' }]), reason: 'entry type FIFO is not allowed: pipe\\u001b[2J' },
  { name: 'a 1 MiB name in a pax record, echoed at most 200 characters', archive: () => tgz([ok, pax({ path: `${'n'.repeat(1024 * 1024 - 100)}/x` }), file('long')]), reason: `path component longer than 255 bytes: ${'n'.repeat(200)}…` },
  { name: 'not gzip', archive: () => Buffer.from('PK\u0003\u0004 a zip file, not a tarball'), reason: /^not a valid gzip stream: / },
  { name: 'truncated gzip', archive: () => tgz([ok, file('a.html', 'a'.repeat(5000))]).subarray(0, 60), reason: /^not a valid gzip stream: unexpected end of file|^invalid tar archive: / },
  { name: 'an archive with no files', archive: () => tgz([dir('./'), dir('empty/')]), reason: 'archive contains no files' },
];

/** Over a MAX_FILES of 100 / MAX_EXTRACTED_BYTES of 100 KiB (see the suite's harness). */
export const OVER_SMALL_LIMITS: readonly HostileArchive[] = [
  { name: '101 entries', archive: () => tgz(Array.from({ length: 101 }, (_, i) => file(`f${i}.html`, ''))), reason: 'archive has more than 100 files and directories' },
  { name: '4 files whose paths imply 124 directories', archive: () => tgz(Array.from({ length: 4 }, (_, i) => file(`${Array(31).fill(`d${i}`).join('/')}/f.html`, ''))), reason: 'archive has more than 100 files and directories' },
  { name: '100 KiB + 1 byte unpacked', archive: () => tgz([file('a.bin', Buffer.alloc(60 * 1024)), file('b.bin', Buffer.alloc(40 * 1024 + 1))]), reason: 'archive unpacks to more than 102400 bytes' },
  { name: 'a header declaring 2 GiB', archive: () => tgz([ok, { path: 'huge.bin', size: 2 * 1024 ** 3, body: 'x' }], { endMarker: false }), reason: 'archive unpacks to more than 102400 bytes' },
];

/** 60,000 empty files: over the default MAX_FILES of 50,000. */
export function sixtyThousandEmptyFiles(): Buffer {
  const entries: RawEntry[] = Array.from({ length: 60_000 }, (_, i) => ({ path: `p/${i}.html` }));
  return tgz(entries);
}

/** About 1 MB of gzip that inflates to 1 GiB of zeros: a tar end marker, then a flood. */
export async function gzipBombOfZeros(totalBytes = 1024 ** 3, prefix?: Buffer): Promise<Buffer> {
  const gzip = createGzip({ level: 9 });
  const out: Buffer[] = [];
  gzip.on('data', (c: Buffer) => out.push(c));
  const done = new Promise((resolve) => gzip.on('end', resolve));
  if (prefix) gzip.write(prefix);
  const block = Buffer.alloc(1024 * 1024);
  for (let written = 0; written < totalBytes; written += block.length) {
    if (!gzip.write(block)) await new Promise((resolve) => gzip.once('drain', resolve));
  }
  gzip.end();
  await done;
  return Buffer.concat(out);
}

/**
 * The issue's double-compression bomb: a .tar.gz padded with zeros after its end marker,
 * compressed again. Read as gzip inside gzip, the inner stream would be node-tar's to
 * inflate, outside sitedrop's caps (a 422 KB upload held a worker for ~150 s).
 */
export async function doublyCompressedBomb(paddingBytes = 256 * 1024 ** 2): Promise<Buffer> {
  return gzipSync(await gzipBombOfZeros(paddingBytes, tar([ok])), { level: 9 });
}

/** `count` files each 31 directories deep, no two sharing a directory: a few KB that implies 31 directories a file. */
export function deepDirectories(count: number): Buffer {
  return tgz(Array.from({ length: count }, (_, i) => file(`${i}/${Array(30).fill('d').join('/')}/f`, '')));
}

/** PAX records that name no entry, 1 MiB each: only the cap on inflated bytes stops them. */
export function paxFlood(count: number): Buffer {
  const record = pax({ comment: 'z'.repeat(1024 * 1024 - 64) });
  return tgz([...Array.from({ length: count }, () => record), ok]);
}

/**
 * Issue 26's manifest bomb: a gzip body of some 400 KB whose manifest is 42 MB, 50,000
 * distinct paths of 745 bytes under two directories: 50,002 entries, one over MAX_FILES
 * at its default, so that it is refused only at its last entries, every one read.
 */
export function manifestBomb(): Buffer {
  const under = `${'a'.repeat(250)}/${'b'.repeat(250)}/${'c'.repeat(232)}`;
  const digest = sha256('x');
  const files = Array.from({ length: 50_000 }, (_, i) => ({ path: `${under}-${String(i).padStart(5, '0')}.html`, size: 1, digest }));
  return gzipSync(JSON.stringify({ project: 'bomb', files }));
}
