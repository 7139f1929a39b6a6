/** The strings of a JSON text as JsonTokens reads them: kept to a limit, their escapes checked byte by byte. */
import { InvalidRequestBody } from './http-errors.js';

/** Member names remembered, and the longest: a body naming many others is decoded as ever. */
const NAMES = 8;
const NAME_BYTES = 16;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f]/;
const ESCAPED: Readonly<Record<string, string>> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const ESCAPE = /\\(?:u([0-9a-fA-F]{4})|(.))/gs;
const HEX = /^[0-9a-fA-F]$/;

/** The string being read: its bytes so far (up to the limit), and where an escape sequence is. */
export interface PendingString {
  readonly isKey: boolean;
  readonly parts: Buffer[];
  kept: number;
  cut: boolean;
  escaped: boolean;
  /** 0 outside an escape; 1 just after a backslash; 2 to 5 before each hex digit of \uXXXX. */
  escape: number;
}

/** Checks one byte of an escape sequence: a known escape, or \u and four hex digits. */
export function escapeByte(text: PendingString, c: number): void {
  const char = String.fromCharCode(c);
  if (text.escape === 1) {
    if (char === 'u') text.escape = 2;
    else if (char in ESCAPED) text.escape = 0;
    else throw new InvalidRequestBody();
  } else {
    if (!HEX.test(char)) throw new InvalidRequestBody();
    text.escape = text.escape === 5 ? 0 : text.escape + 1;
  }
}

/** Keeps the string's bytes up to `limit`; what lies beyond is checked for raw control characters and dropped. */
export function keep(text: PendingString, chunk: Buffer, from: number, to: number, limit: number): void {
  const room = Math.max(0, limit - text.kept);
  const kept = Math.min(room, to - from);
  if (kept > 0) {
    text.parts.push(chunk.subarray(from, from + kept));
    text.kept += kept;
  }
  if (kept < to - from) {
    text.cut = true;
    if (CONTROL.test(chunk.toString('latin1', from + kept, to))) throw new InvalidRequestBody();
  }
}

/** A whole string's value: no raw control character, its escapes (checked as they came) undone. */
export function stringValue(raw: string, escaped: boolean): string {
  if (CONTROL.test(raw)) throw new InvalidRequestBody();
  // A string cut inside an escape loses it.
  return escaped ? raw.replace(ESCAPE, (_, hex: string | undefined, char: string) => (hex === undefined ? (ESCAPED[char] ?? '') : String.fromCharCode(parseInt(hex, 16)))) : raw;
}

/** Member names met so far, up to NAMES of them, by their bytes: a manifest repeats three in every entry. */
export class KnownNames {
  private readonly names: { readonly bytes: Buffer; readonly name: string }[] = [];

  /** A short name already met, spelt with the same bytes (and no escape), without decoding it again. */
  find(chunk: Buffer, from: number, to: number): string | undefined {
    const length = to - from;
    for (const known of this.names) {
      if (known.bytes.length !== length) continue;
      let at = 0;
      while (at < length && known.bytes[at] === chunk[from + at]) at += 1;
      if (at === length) return known.name;
    }
    if (length <= NAME_BYTES && this.names.length < NAMES) {
      const name = chunk.toString('utf8', from, to);
      if (!CONTROL.test(name)) this.names.push({ bytes: Buffer.from(chunk.subarray(from, to)), name });
    }
    return undefined;
  }
}
