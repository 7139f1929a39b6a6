import { shownName, type ArchiveLimits } from './archive-policy.js';
import { ManifestRejected } from './errors.js';
import type { Digest, ManifestChanges, ManifestFile } from './manifest.js';
import { copyBytes, DIGEST_BYTES, FILE_FIXED_BYTES, HEADER_BYTES, NO_OBJECT, OBJECT_BYTES } from './packed-layout.js';
import { PackedManifest, sharedBytes } from './packed-manifest.js';
import { addDirectory, addParents, PackedPaths } from './packed-paths.js';

const clash = (path: string): ManifestRejected => new ManifestRejected(`a file and a directory share the path: ${shownName(path)}`);

/**
 * Where each base file goes: `gone` (removed or replaced: 1), `replacedBy` (the change at
 * its path, or -1), and the changes the base has no path for, in their order.
 */
function placeChanges(files: PackedPaths, changes: ManifestChanges): { gone: Uint8Array; replacedBy: Int32Array; added: number[] } {
  const gone = new Uint8Array(files.count);
  const replacedBy = new Int32Array(files.count).fill(-1);
  for (const path of changes.removed) {
    const i = files.find(path);
    if (i === undefined) throw new ManifestRejected(`removed path is not in the base release: ${shownName(path)}`);
    gone[i] = 1;
  }
  const added: number[] = [];
  changes.files.forEach((file, c) => {
    const i = files.find(file.path);
    if (i === undefined) added.push(c);
    else {
      gone[i] = 1;
      replacedBy[i] = c;
    }
  });
  return { gone, replacedBy, added };
}

/**
 * The rules over the whole site that the changes can break with the base's files they
 * keep (the base met them all, and the changes among themselves were checked as they
 * came): a file where a kept file's directory is, a directory where a kept file is,
 * MAX_FILES counting implied directories, MAX_EXTRACTED_BYTES, one size per content.
 */
function checkAgainstBase(base: PackedManifest, files: PackedPaths, changes: ManifestChanges, gone: Uint8Array, limits: ArchiveLimits): void {
  let bytes = base.bytes;
  const kept = new Uint32Array(base.objectCount);
  const dirs = new Set<string>();
  // A directory's files mostly come together: its name is made a string once, not per file.
  let previous = -1;
  for (let i = 0; i < files.count; i += 1) {
    if (gone[i] === 1) {
      bytes -= files.size(i);
      continue;
    }
    const object = files.object(i);
    if (object !== NO_OBJECT) kept[object] = kept[object]! + 1;
    if (previous < 0 || !files.sameParent(previous, i)) addDirectory(dirs, files.parent(i));
    previous = i;
  }
  for (const file of changes.files) bytes += file.size;
  if (bytes > limits.maxBytes) throw new ManifestRejected(`site unpacks to more than ${limits.maxBytes} bytes`);
  for (const file of changes.files) {
    if (dirs.has(file.path)) throw clash(file.path);
    for (let cut = file.path.lastIndexOf('/'); cut > 0; cut = file.path.lastIndexOf('/', cut - 1)) {
      const i = files.find(file.path.slice(0, cut));
      if (i !== undefined && gone[i] !== 1) throw clash(file.path.slice(0, cut));
    }
    const object = file.size === 0 ? undefined : base.objectIndex(file.digest);
    if (object !== undefined && kept[object]! > 0 && base.sizeOf(file.digest) !== file.size) throw new ManifestRejected(`digest listed with two sizes: ${shownName(file.path)}`);
  }
  let fileCount = 0;
  for (let i = 0; i < gone.length; i += 1) if (gone[i] !== 1) fileCount += 1;
  fileCount += changes.files.length;
  for (const file of changes.files) addParents(dirs, file.path);
  if (fileCount === 0) throw new ManifestRejected('site contains no files');
  if (fileCount + dirs.size > limits.maxFiles) throw new ManifestRejected(`site has more than ${limits.maxFiles} files and directories`);
}

/**
 * The packed manifest of `base` with `changes` applied, byte for byte what
 * `PackedManifest.pack(applyManifestChanges(base's files, changes, limits))` makes: a
 * changed file keeps its place, an added one comes last, objects numbered in the order
 * the files first name them. The base's files are read where they lie (PackedPaths),
 * never made 40,000 objects, checked whole again or packed from hex: the base is a
 * release that met every rule.
 */
export function applyPackedChanges(base: PackedManifest, changes: ManifestChanges, limits: ArchiveLimits): PackedManifest {
  const files = new PackedPaths(base);
  const { gone, replacedBy, added } = placeChanges(files, changes);
  if (files.count - changes.removed.length + added.length > limits.maxFiles) throw new ManifestRejected(`more than ${limits.maxFiles} files and directories`);
  checkAgainstBase(base, files, changes, gone, limits);
  // Each file of the result: a kept base file by its position (0 up), or change c as -c - 1.
  const entries = new Int32Array(files.count + added.length);
  let n = 0;
  for (let i = 0; i < files.count; i += 1) {
    if (replacedBy[i]! >= 0) entries[n++] = -replacedBy[i]! - 1;
    else if (gone[i] !== 1) entries[n++] = i;
  }
  for (const c of added) entries[n++] = -c - 1;
  return write(base, files, changes.files, entries.subarray(0, n));
}

/** Where the result's objects come from, in the order the files first name them. */
interface ResultObjects {
  count: number;
  /** Each object's index in the base, or -1 for a content the base does not have. */
  readonly fromBase: Int32Array;
  /** The change that named a content the base does not have. */
  readonly fromChange: Int32Array;
  readonly sizes: Float64Array;
}

/** Numbers the objects of `entries` as they are first met; `indexes` takes each file's. */
function numberObjects(base: PackedManifest, files: PackedPaths, changed: readonly ManifestFile[], entries: Int32Array, indexes: Uint32Array): ResultObjects {
  const objects: ResultObjects = { count: 0, fromBase: new Int32Array(entries.length), fromChange: new Int32Array(entries.length), sizes: new Float64Array(entries.length) };
  const seenInBase = new Int32Array(base.objectCount).fill(-1);
  const seenInChanges = new Map<Digest, number>();
  entries.forEach((entry, n) => {
    const change = entry < 0 ? changed[-entry - 1]! : undefined;
    const size = change ? change.size : files.size(entry);
    if (size === 0) return void (indexes[n] = NO_OBJECT);
    const own = change ? base.objectIndex(change.digest) : files.object(entry);
    let index = own !== undefined ? seenInBase[own]! : (seenInChanges.get(change!.digest) ?? -1);
    if (index < 0) {
      index = objects.count++;
      objects.fromBase[index] = own ?? -1;
      objects.fromChange[index] = -entry - 1;
      objects.sizes[index] = size;
      if (own !== undefined) seenInBase[own] = index;
      else seenInChanges.set(change!.digest, index);
    }
    indexes[n] = index;
  });
  return objects;
}

/** The packed bytes (packed-manifest.ts's layout) of `entries`; a kept file's path copied as the base has it. */
function write(base: PackedManifest, files: PackedPaths, changed: readonly ManifestFile[], entries: Int32Array): PackedManifest {
  const indexes = new Uint32Array(entries.length);
  const objects = numberObjects(base, files, changed, entries, indexes);
  let length = HEADER_BYTES + objects.count * OBJECT_BYTES;
  let bytes = 0;
  for (let n = 0; n < entries.length; n += 1) {
    const entry = entries[n]!;
    length += FILE_FIXED_BYTES + (entry < 0 ? Buffer.byteLength(changed[-entry - 1]!.path) : files.pathEnd(entry) - files.pathStart(entry));
    bytes += entry < 0 ? changed[-entry - 1]!.size : files.size(entry);
  }
  const packed = sharedBytes(length);
  packed.writeUInt32LE(entries.length, 0);
  packed.writeUInt32LE(objects.count, 4);
  packed.writeDoubleLE(bytes, 8);
  let at = HEADER_BYTES;
  for (let o = 0; o < objects.count; o += 1) {
    const own = objects.fromBase[o]!;
    if (own >= 0) copyBytes(base.packed, HEADER_BYTES + own * OBJECT_BYTES, HEADER_BYTES + own * OBJECT_BYTES + DIGEST_BYTES, packed, at);
    else packed.write(changed[objects.fromChange[o]!]!.digest, at, DIGEST_BYTES, 'hex');
    at = packed.writeDoubleLE(objects.sizes[o]!, at + DIGEST_BYTES);
  }
  for (let n = 0; n < entries.length; n += 1) {
    const entry = entries[n]!;
    at = packed.writeUInt32LE(indexes[n]!, at);
    const pathBytes = entry < 0 ? packed.write(changed[-entry - 1]!.path, at + 4, 'utf8') : copyBytes(base.packed, files.pathStart(entry), files.pathEnd(entry), packed, at + 4);
    at = packed.writeUInt32LE(pathBytes, at) + pathBytes;
  }
  return PackedManifest.from(packed);
}
