/**
 * Which files of a site are also kept compressed beside themselves (`X.br`, `X.gz`), for
 * a web server to send to clients that accept those codings: text types only, by the
 * name's extension, whatever its case. Images, fonts and archives are compressed already.
 */
export const PRECOMPRESSIBLE_EXTENSIONS = ['html', 'htm', 'css', 'js', 'mjs', 'json', 'svg', 'xml', 'txt', 'map', 'wasm'] as const;
const TEXT_EXTENSIONS: ReadonlySet<string> = new Set(PRECOMPRESSIBLE_EXTENSIONS);

export const PRECOMPRESSED_CODINGS = ['br', 'gz'] as const;
export type PrecompressedCoding = (typeof PRECOMPRESSED_CODINGS)[number];

/** Smaller files get no siblings: below it compression saves next to nothing (docs/performance.md), and each sibling costs an inode and a block. */
export const PRECOMPRESS_MIN_BYTES = 256;

export function isPrecompressible(path: string): boolean {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot > 0 && TEXT_EXTENSIONS.has(name.slice(dot + 1).toLowerCase());
}

/** The name of `path`'s sibling in `coding`. */
export const siblingOf = (path: string, coding: PrecompressedCoding): string => `${path}.${coding}`;
