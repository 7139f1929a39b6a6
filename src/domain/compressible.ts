/**
 * The text types sitedrop serves compressed, as `X.br` and `X.gz` made beside `X`:
 * the ones that shrink. Images, fonts and archives are compressed already.
 */
export const COMPRESSIBLE_EXTENSIONS = ['html', 'htm', 'css', 'js', 'mjs', 'json', 'svg', 'xml', 'txt', 'map', 'wasm'] as const;

const COMPRESSIBLE = new RegExp(`\\.(${COMPRESSIBLE_EXTENSIONS.join('|')})$`, 'i');

export const isCompressible = (path: string): boolean => COMPRESSIBLE.test(path);
