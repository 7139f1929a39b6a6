import { InvalidRequestBody } from './http-errors.js';
import { escapeByte, keep, KnownNames, stringValue, type PendingString } from './json-strings.js';

/** What a JSON document holds, told in its order as its bytes arrive. */
export interface JsonEvents {
  /** An object or array begins: its members follow, then `close`. */
  open(kind: 'object' | 'array'): void;
  close(): void;
  /** An object member's name; its value follows. */
  key(name: string): void;
  scalar(value: string | number | boolean | null): void;
}

export interface JsonLimits {
  /** Bytes of a string kept, as sent (escapes undone after): the rest is read, checked and dropped. */
  readonly stringBytes: number;
  /** Objects and arrays nested deeper are refused. */
  readonly depth: number;
}

/** JSON.stringify writes no number longer than 24 characters; a longer one is not a manifest's. */
const NUMBER_CHARS = 64;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OBJECT = 0;
const ARRAY = 1;

const enum Expect {
  Value,
  ValueOrClose,
  KeyOrClose,
  Key,
  Colon,
  CommaOrClose,
  End,
}

/**
 * A JSON text read as it streams, chunk by chunk, in memory bounded whatever it holds:
 * a string is kept to `stringBytes` (read to its end and checked, never held whole),
 * nesting to `depth`, a number to 64 characters. Strict RFC 8259 otherwise, as JSON.parse
 * reads it (the same values, the same texts refused); every refusal is InvalidRequestBody.
 * Works on bytes: every character JSON gives a meaning to is ASCII, which no byte of a
 * multi-byte UTF-8 sequence can be, so strings alone are decoded, each with its own
 * bytes, and none is a slice of a chunk that would keep the chunk alive.
 */
export class JsonTokens {
  private expect = Expect.Value;
  private readonly stack: Uint8Array;
  private depth = 0;
  private text: PendingString | undefined;
  private number: string | undefined;
  /** A literal being read (true, false, null) and how many of its letters have come. */
  private literal: { readonly word: string; matched: number } | undefined;
  /** The next backslash in the chunk being read (Infinity: none), found once per stretch of it. */
  private backslash = -1;
  private readonly names = new KnownNames();
  private empty = true;

  constructor(
    private readonly events: JsonEvents,
    private readonly limits: JsonLimits,
  ) {
    this.stack = new Uint8Array(limits.depth);
  }

  write(chunk: Buffer): void {
    if (chunk.length > 0) this.empty = false;
    this.backslash = -1;
    let at = 0;
    if (this.text) at = this.readString(chunk, 0);
    else if (this.number !== undefined) at = this.readNumber(chunk, 0);
    else if (this.literal) at = this.readLiteral(chunk, 0);
    while (at < chunk.length) {
      const c = chunk[at]!;
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
        at += 1;
        continue;
      }
      switch (this.expect) {
        case Expect.Value:
        case Expect.ValueOrClose:
          at = c === 0x5d && this.expect === Expect.ValueOrClose ? this.close(at) : this.value(chunk, at);
          break;
        case Expect.Key:
        case Expect.KeyOrClose:
          at = c === 0x7d && this.expect === Expect.KeyOrClose ? this.close(at) : this.key(chunk, at);
          break;
        case Expect.Colon:
          if (c !== 0x3a) throw new InvalidRequestBody();
          this.expect = Expect.Value;
          at += 1;
          break;
        case Expect.CommaOrClose:
          if (c === 0x2c) {
            this.expect = this.stack[this.depth - 1] === OBJECT ? Expect.Key : Expect.Value;
            at += 1;
          } else if (c === (this.stack[this.depth - 1] === OBJECT ? 0x7d : 0x5d)) at = this.close(at);
          else throw new InvalidRequestBody();
          break;
        case Expect.End:
          throw new InvalidRequestBody();
      }
    }
  }

  /** The text has ended: it must have been one whole value, or no byte at all (an empty body). */
  end(): void {
    if (this.number !== undefined) this.endNumber();
    if (this.expect !== Expect.End && !this.empty) throw new InvalidRequestBody();
  }

  private value(chunk: Buffer, at: number): number {
    const c = chunk[at]!;
    if (c === 0x7b || c === 0x5b) {
      if (this.depth === this.limits.depth) throw new InvalidRequestBody();
      const kind = c === 0x7b ? OBJECT : ARRAY;
      this.stack[this.depth++] = kind;
      this.expect = kind === OBJECT ? Expect.KeyOrClose : Expect.ValueOrClose;
      this.events.open(kind === OBJECT ? 'object' : 'array');
      return at + 1;
    }
    if (c === QUOTE) return this.beginString(chunk, at + 1, false);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const end = this.plainInteger(chunk, at);
      if (end !== -1) return end;
      this.number = '';
      return this.readNumber(chunk, at);
    }
    const word = c === 0x74 ? 'true' : c === 0x66 ? 'false' : c === 0x6e ? 'null' : undefined;
    if (word === undefined) throw new InvalidRequestBody();
    this.literal = { word, matched: 0 };
    return this.readLiteral(chunk, at);
  }

  private key(chunk: Buffer, at: number): number {
    if (chunk[at] !== QUOTE) throw new InvalidRequestBody();
    return this.beginString(chunk, at + 1, true);
  }

  private close(at: number): number {
    this.depth -= 1;
    this.events.close();
    this.valueDone();
    return at + 1;
  }

  private valueDone(): void {
    this.expect = this.depth === 0 ? Expect.End : Expect.CommaOrClose;
  }

  private beginString(chunk: Buffer, at: number, isKey: boolean): number {
    // Most strings end in the chunk they begin in, with no escape: decoded at once.
    const quote = chunk.indexOf(QUOTE, at);
    if (quote !== -1 && quote - at <= this.limits.stringBytes && this.nextBackslash(chunk, at) > quote) {
      const name = isKey ? this.names.find(chunk, at, quote) : undefined;
      if (name !== undefined) {
        this.expect = Expect.Colon;
        this.events.key(name);
      } else this.endString(isKey, chunk.toString('utf8', at, quote), false);
      return quote + 1;
    }
    this.text = { isKey, parts: [], kept: 0, cut: false, escaped: false, escape: 0 };
    return this.readString(chunk, at);
  }

  private nextBackslash(chunk: Buffer, at: number): number {
    if (this.backslash < at) {
      const found = chunk.indexOf(BACKSLASH, at);
      this.backslash = found === -1 ? Infinity : found;
    }
    return this.backslash;
  }

  /** Reads the pending string from `at` to its closing quote or the chunk's end; returns where it stopped. */
  private readString(chunk: Buffer, from: number): number {
    const text = this.text!;
    let at = from;
    while (at < chunk.length) {
      if (text.escape > 0) {
        escapeByte(text, chunk[at]!);
        at += 1;
        continue;
      }
      const quote = chunk.indexOf(QUOTE, at);
      const backslash = this.nextBackslash(chunk, at);
      if (backslash < (quote === -1 ? chunk.length : quote)) {
        text.escape = 1;
        text.escaped = true;
        at = backslash + 1;
        continue;
      }
      if (quote === -1) break;
      keep(text, chunk, from, quote, this.limits.stringBytes);
      this.text = undefined;
      this.endString(text.isKey, (text.parts.length === 1 ? text.parts[0]! : Buffer.concat(text.parts)).toString('utf8'), text.escaped);
      return quote + 1;
    }
    keep(text, chunk, from, chunk.length, this.limits.stringBytes);
    return chunk.length;
  }

  private endString(isKey: boolean, raw: string, escaped: boolean): void {
    const value = stringValue(raw, escaped);
    if (isKey) {
      this.expect = Expect.Colon;
      this.events.key(value);
      return;
    }
    this.events.scalar(value);
    this.valueDone();
  }

  /**
   * A whole number of up to 15 digits that ends in this chunk (a size, as JSON.stringify
   * writes it), read without its text; -1 for any other, read as text by readNumber.
   */
  private plainInteger(chunk: Buffer, from: number): number {
    let at = from;
    let value = 0;
    for (; at < chunk.length && at - from <= 15; at += 1) {
      const digit = chunk[at]! - 0x30;
      if (digit < 0 || digit > 9) break;
      value = value * 10 + digit;
    }
    const next = chunk[at];
    const digits = at - from;
    if (digits === 0 || digits > 15 || next === undefined || (digits > 1 && chunk[from] === 0x30)) return -1;
    if (next === 0x2e || next === 0x65 || next === 0x45 || next === 0x2b || next === 0x2d) return -1;
    this.events.scalar(value);
    this.valueDone();
    return at;
  }

  private readNumber(chunk: Buffer, from: number): number {
    let at = from;
    while (at < chunk.length) {
      const c = chunk[at]!;
      // Digits, sign, point and exponent: NUMBER then says whether they make a number.
      if (!((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45)) break;
      at += 1;
    }
    this.number += chunk.toString('latin1', from, at);
    if (this.number!.length > NUMBER_CHARS) throw new InvalidRequestBody();
    if (at < chunk.length) this.endNumber();
    return at;
  }

  private endNumber(): void {
    const text = this.number!;
    this.number = undefined;
    if (!NUMBER.test(text)) throw new InvalidRequestBody();
    this.events.scalar(Number(text));
    this.valueDone();
  }

  private readLiteral(chunk: Buffer, from: number): number {
    const literal = this.literal!;
    let at = from;
    while (at < chunk.length && literal.matched < literal.word.length) {
      if (chunk[at] !== literal.word.charCodeAt(literal.matched)) throw new InvalidRequestBody();
      literal.matched += 1;
      at += 1;
    }
    if (literal.matched < literal.word.length) return at;
    this.literal = undefined;
    this.events.scalar(literal.word === 'null' ? null : literal.word === 'true');
    this.valueDone();
    return at;
  }
}
