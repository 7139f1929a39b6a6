import { shownName, type ArchiveLimits } from './archive-policy.js';
import { ManifestRejected } from './errors.js';
import type { Digest, ManifestChanges, ManifestFile } from './manifest.js';
import { DIGEST_BYTES, FILE_FIXED_BYTES, HEADER_BYTES, NO_OBJECT, OBJECT_BYTES, PackedManifest } from './packed-manifest.js';

/** The base's files by position: what a change keeps, replaces or removes. */
interface BaseFiles {
  readonly paths: string[];
  /** Each file's object index in the base; NO_OBJECT for an empty file. */
  readonly objects: Uint32Array;
  readonly sizes: Float64Array;
  readonly at: Map<string, number>;
}

function baseFiles(base: PackedManifest): BaseFiles {
  const paths: string[] = [];
  const objects = new Uint32Array(base.fileCount);
  const sizes = new Float64Array(base.fileCount);
  const at = new Map<string, number>();
  let i = 0;
  for (const file of base.files()) {
    paths.push(file.path);
    objects[i] = file.object ?? NO_OBJECT;
    sizes[i] = file.size;
    at.set(file.path, i);
    i += 1;
  }
  return { paths, objects, sizes, at };
}

/** Adds to `dirs` the directories `path` implies; a parent there already has its own there too. */
function addParents(dirs: Set<string>, path: string): void {
  for (let cut = path.lastIndexOf('/'); cut > 0; cut = path.lastIndexOf('/', cut - 1)) {
    const parent = path.slice(0, cut);
    if (dirs.has(parent)) return;
    dirs.add(parent);
  }
}

const clash = (path: string): ManifestRejected => new ManifestRejected(`a file and a directory share the path: ${shownName(path)}`);

/**
 * Where each base file goes: `gone` (removed or replaced: 1), `replacedBy` (the change at
 * its path, or -1), and the changes the base has no path for, in their order.
 */
function placeChanges(files: BaseFiles, changes: ManifestChanges): { gone: Uint8Array; replacedBy: Int32Array; added: number[] } {
  const gone = new Uint8Array(files.paths.length);
  const replacedBy = new Int32Array(files.paths.length).fill(-1);
  for (const path of changes.removed) {
    const i = files.at.get(path);
    if (i === undefined) throw new ManifestRejected(`removed path is not in the base release: ${shownName(path)}`);
    gone[i] = 1;
  }
  const added: number[] = [];
  changes.files.forEach((file, c) => {
    const i = files.at.get(file.path);
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
function checkAgainstBase(base: PackedManifest, files: BaseFiles, changes: ManifestChanges, gone: Uint8Array, limits: ArchiveLimits): void {
  let bytes = base.bytes;
  const kept = new Uint32Array(base.objectCount);
  const dirs = new Set<string>();
  for (let i = 0; i < files.paths.length; i += 1) {
    if (gone[i] === 1) {
      bytes -= files.sizes[i]!;
      continue;
    }
    const object = files.objects[i]!;
    if (object !== NO_OBJECT) kept[object] = kept[object]! + 1;
    addParents(dirs, files.paths[i]!);
  }
  for (const file of changes.files) bytes += file.size;
  if (bytes > limits.maxBytes) throw new ManifestRejected(`site unpacks to more than ${limits.maxBytes} bytes`);
  for (const file of changes.files) {
    if (dirs.has(file.path)) throw clash(file.path);
    for (let cut = file.path.lastIndexOf('/'); cut > 0; cut = file.path.lastIndexOf('/', cut - 1)) {
      const i = files.at.get(file.path.slice(0, cut));
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

/** One file of the result: a kept base file (by position) or a change (by its index among the changes). */
type Entry = { readonly base: number } | { readonly change: number };

/**
 * The packed manifest of `base` with `changes` applied, byte for byte what
 * `PackedManifest.pack(applyManifestChanges(base's files, changes, limits))` makes: a
 * changed file keeps its place, an added one comes last, objects numbered in the order
 * the files first name them. Without making the base's 40,000 files objects, checking
 * them whole again, or packing them from hex: the base is a release that met every rule.
 */
export function applyPackedChanges(base: PackedManifest, changes: ManifestChanges, limits: ArchiveLimits): PackedManifest {
  const files = baseFiles(base);
  const { gone, replacedBy, added } = placeChanges(files, changes);
  if (files.paths.length - changes.removed.length + added.length > limits.maxFiles) throw new ManifestRejected(`more than ${limits.maxFiles} files and directories`);
  checkAgainstBase(base, files, changes, gone, limits);
  const entries: Entry[] = [];
  for (let i = 0; i < files.paths.length; i += 1) {
    if (replacedBy[i]! >= 0) entries.push({ change: replacedBy[i]! });
    else if (gone[i] !== 1) entries.push({ base: i });
  }
  for (const c of added) entries.push({ change: c });
  return write(base, files, changes.files, entries);
}

/** The packed bytes (packed-manifest.ts's layout) of `entries`, objects numbered as they are first met. */
function write(base: PackedManifest, files: BaseFiles, changed: readonly ManifestFile[], entries: readonly Entry[]): PackedManifest {
  const fromBase = new Int32Array(base.objectCount).fill(-1);
  const fromChanges = new Map<Digest, number>();
  const objects: { readonly base?: number; readonly digest?: Digest; readonly size: number }[] = [];
  const indexes = new Uint32Array(entries.length);
  let length = HEADER_BYTES;
  let bytes = 0;
  entries.forEach((entry, n) => {
    const path = 'base' in entry ? files.paths[entry.base]! : changed[entry.change]!.path;
    length += FILE_FIXED_BYTES + Buffer.byteLength(path);
    const size = 'base' in entry ? files.sizes[entry.base]! : changed[entry.change]!.size;
    bytes += size;
    if (size === 0) return void (indexes[n] = NO_OBJECT);
    const digest = 'change' in entry ? changed[entry.change]!.digest : undefined;
    const own = 'base' in entry ? files.objects[entry.base]! : base.objectIndex(digest!);
    let index = own !== undefined ? fromBase[own]! : (fromChanges.get(digest!) ?? -1);
    if (index < 0) {
      index = objects.length;
      objects.push(own !== undefined ? { base: own, size } : { digest: digest!, size });
      if (own !== undefined) fromBase[own] = index;
      else fromChanges.set(digest!, index);
    }
    indexes[n] = index;
  });
  const packed = Buffer.allocUnsafeSlow(length + objects.length * OBJECT_BYTES);
  packed.writeUInt32LE(entries.length, 0);
  packed.writeUInt32LE(objects.length, 4);
  packed.writeDoubleLE(bytes, 8);
  let at = HEADER_BYTES;
  for (const object of objects) {
    if (object.base !== undefined) base.packed.copy(packed, at, HEADER_BYTES + object.base * OBJECT_BYTES, HEADER_BYTES + object.base * OBJECT_BYTES + DIGEST_BYTES);
    else packed.write(object.digest!, at, DIGEST_BYTES, 'hex');
    at = packed.writeDoubleLE(object.size, at + DIGEST_BYTES);
  }
  entries.forEach((entry, n) => {
    const path = 'base' in entry ? files.paths[entry.base]! : changed[entry.change]!.path;
    at = packed.writeUInt32LE(indexes[n]!, at);
    const pathBytes = packed.write(path, at + 4, 'utf8');
    at = packed.writeUInt32LE(pathBytes, at) + pathBytes;
  });
  return PackedManifest.from(packed);
}
