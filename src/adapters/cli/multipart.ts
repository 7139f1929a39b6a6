/**
 * multipart/form-data as `curl -F` writes it: each part its boundary line, its headers
 * (a file part is a gzip archive), a blank line, its bytes and CRLF; then the closing
 * boundary. The CLI, the benchmarks and the tests all frame their uploads here.
 */
export interface FormPart {
  readonly name: string;
  /** Set for the archive: the part is then a file, `Content-Type: application/gzip`. */
  readonly filename?: string;
  readonly body: Buffer | string;
}

/** A boundary no archive's bytes are likely to hold. */
export const newBoundary = (prefix = 'sitedrop'): string => `${prefix}${Math.random().toString(16).slice(2)}`;

/** The lines that open a part; its bytes and CRLF follow. */
export function partHead(boundary: string, part: Omit<FormPart, 'body'>): string {
  const disposition = `form-data; name="${part.name}"${part.filename === undefined ? '' : `; filename="${part.filename}"`}`;
  return `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.filename === undefined ? '' : 'Content-Type: application/gzip\r\n'}\r\n`;
}

/** A whole form; with `close` false, one cut short before its closing boundary. */
export function multipart(boundary: string, parts: readonly FormPart[], close = true): Buffer {
  const pieces = parts.flatMap((part) => [Buffer.from(partHead(boundary, part)), Buffer.from(part.body), Buffer.from('\r\n')]);
  if (close) pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(pieces);
}

/**
 * A form whose last part, a file, streams between `head` and `tail`: the fields come
 * first, so a server may judge them before it reads a byte of the file.
 */
export function streamedForm(boundary: string, fields: readonly FormPart[], file: { readonly name: string; readonly filename: string }): { head: Buffer; tail: Buffer } {
  return {
    head: Buffer.concat([multipart(boundary, fields, false), Buffer.from(partHead(boundary, file))]),
    tail: Buffer.from(`\r\n--${boundary}--\r\n`),
  };
}

export const formContentType = (boundary: string): string => `multipart/form-data; boundary=${boundary}`;
