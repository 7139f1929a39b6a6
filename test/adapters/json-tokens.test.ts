import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidRequestBody } from '../../src/adapters/http/http-errors.js';
import { JsonTokens, type JsonEvents, type JsonLimits } from '../../src/adapters/http/json-tokens.js';

/** The value the events describe, rebuilt as JSON.parse would build it. */
class Rebuilt implements JsonEvents {
  value: unknown;
  private readonly open_: { container: Record<string, unknown> | unknown[]; key?: string }[] = [];

  open(kind: 'object' | 'array'): void {
    const container = kind === 'object' ? {} : [];
    this.put(container);
    this.open_.push({ container });
  }

  close(): void {
    this.open_.pop();
  }

  key(name: string): void {
    this.open_.at(-1)!.key = name;
  }

  scalar(value: string | number | boolean | null): void {
    this.put(value);
  }

  private put(value: unknown): void {
    const top = this.open_.at(-1);
    if (!top) this.value = value;
    else if (Array.isArray(top.container)) top.container.push(value);
    else Object.defineProperty(top.container, top.key!, { value, enumerable: true, writable: true, configurable: true });
  }
}

const LIMITS: JsonLimits = { stringBytes: 1 << 20, depth: 32 };

/** `text` in pieces cut at `cuts` (any byte: inside a character, an escape, a number, a literal). */
function pieces(text: string | Buffer, cuts: readonly number[]): Buffer[] {
  const bytes = Buffer.from(text);
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  return [...at, bytes.length].map((end, i) => bytes.subarray(i === 0 ? 0 : at[i - 1], end));
}

/** What the tokenizer made of the pieces: the value, or the error it threw. */
function tokenize(chunks: readonly Buffer[], limits = LIMITS): { value?: unknown; error?: unknown } {
  const rebuilt = new Rebuilt();
  const tokens = new JsonTokens(rebuilt, limits);
  try {
    for (const chunk of chunks) tokens.write(chunk);
    tokens.end();
    return { value: rebuilt.value };
  } catch (error) {
    return { error };
  }
}

function parsed(text: string): { value?: unknown; error?: unknown } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (error) {
    return { error };
  }
}

const json = fc.jsonValue({ maxDepth: 6, stringUnit: 'binary' });
const cuts = fc.array(fc.nat(), { maxLength: 6 });

describe('JsonTokens, a JSON text read as it streams', () => {
  it('reads any JSON text, however it is cut into chunks, as JSON.parse does', () => {
    fc.assert(
      fc.property(json, fc.constantFrom(undefined, 0, 2, '\t'), cuts, (value, indent, at) => {
        const text = JSON.stringify(value, null, indent);
        expect(tokenize(pieces(text, at))).toEqual(parsed(text));
      }),
      { numRuns: 1000 },
    );
  });

  it('takes exactly the texts JSON.parse takes, refusing the rest with InvalidRequestBody alone', () => {
    // Valid texts with one character inserted, replaced or removed, from those JSON gives a meaning to.
    const edited = fc
      .tuple(json, fc.nat(), fc.constantFrom('insert', 'replace', 'remove'), fc.constantFrom(...'{}[]:,"\\ -+.0123456789eEtrufalsn\u0000\u001f\n\u00e9x'))
      .map(([value, at, edit, char]) => {
        const text = JSON.stringify(value);
        const i = at % (text.length + 1);
        return edit === 'insert' ? text.slice(0, i) + char + text.slice(i) : text.slice(0, i) + (edit === 'replace' ? char : '') + text.slice(i + 1);
      });
    fc.assert(
      fc.property(fc.oneof(edited, fc.string({ unit: 'binary', maxLength: 30 })), cuts, (text, at) => {
        // An empty body is no JSON text, but is read as nothing at all (as body-parser reads it).
        fc.pre(text !== '');
        const mine = tokenize(pieces(text, at));
        // What the text is on the wire: UTF-8, a lone surrogate in it sent as U+FFFD.
        const theirs = parsed(Buffer.from(text).toString());
        if (theirs.error === undefined) expect(mine).toEqual(theirs);
        else expect(mine.error, text).toBeInstanceOf(InvalidRequestBody);
      }),
      { numRuns: 3000 },
    );
  });

  it('refuses bytes that are not UTF-8 only as JSON.parse refuses what they decode to', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 24 }), cuts, (bytes, at) => {
        // eslint-disable-next-line no-control-regex
        const text = `["${Buffer.from(bytes).toString('latin1').replace(/["\\\u0000-\u001f]/g, '')}"]`;
        const raw = Buffer.from(text, 'latin1');
        expect(tokenize(pieces(raw, at))).toEqual(parsed(raw.toString('utf8')));
      }),
    );
  });

  it('holds a string to its limit whatever its length, and still checks the rest of it', () => {
    const limits = { stringBytes: 16, depth: 4 };
    const long = `${'é'.repeat(4)}${'a'.repeat(5 * 1024 * 1024)}`;
    const read = tokenize(pieces(JSON.stringify([long, 'next']), [3, 70_000, 1_000_000]), limits);
    expect(read.value).toEqual([long.slice(0, 12), 'next']);
    // A raw control character past the limit is no JSON all the same.
    expect(tokenize(pieces(`["${'a'.repeat(100)}\u0001"]`, [50]), limits).error).toBeInstanceOf(InvalidRequestBody);
    expect(tokenize(pieces(`["${'a'.repeat(100)}\\x"]`, []), limits).error).toBeInstanceOf(InvalidRequestBody);
  });

  it('refuses nesting deeper than its limit and numbers longer than 64 characters, without recursion', () => {
    expect(tokenize([Buffer.from('['.repeat(1_000_000))]).error).toBeInstanceOf(InvalidRequestBody);
    expect(tokenize([Buffer.from(`${'['.repeat(32)}${']'.repeat(32)}`)]).value).toBeDefined();
    expect(tokenize([Buffer.from(`${'['.repeat(33)}${']'.repeat(33)}`)]).error).toBeInstanceOf(InvalidRequestBody);
    expect(tokenize([Buffer.from(`[${'1'.repeat(64)}]`)]).value).toEqual([Number('1'.repeat(64))]);
    expect(tokenize([Buffer.from(`[${'1'.repeat(65)}]`)]).error).toBeInstanceOf(InvalidRequestBody);
  });
});
