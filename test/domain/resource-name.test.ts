import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidProjectName, InvalidUsername } from '../../src/domain/errors.js';
import { ProjectName } from '../../src/domain/project-name.js';
import { Username } from '../../src/domain/username.js';

const edge = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789');
const inner = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789_-');
const validName = fc.oneof(
  edge,
  fc.tuple(edge, fc.array(inner, { maxLength: 62 }), edge).map(([a, mid, b]) => `${a}${mid.join('')}${b}`),
);

describe('username and project name pattern', () => {
  it('accepts every generated valid name', () => {
    fc.assert(
      fc.property(validName, (name) => {
        expect(Username.parse(name)).toBe(name);
        expect(ProjectName.parse(name)).toBe(name);
      }),
    );
  });

  it('rejects names that start or end with - or _', () => {
    fc.assert(
      fc.property(validName, fc.constantFrom('-', '_'), fc.boolean(), (name, mark, atStart) => {
        const bad = atStart ? `${mark}${name}` : `${name}${mark}`;
        expect(() => Username.parse(bad)).toThrow(InvalidUsername);
      }),
    );
  });

  it('rejects any character outside [a-z0-9_-]', () => {
    const foreign = fc.string({ minLength: 1, maxLength: 1 }).filter((c) => !/[a-z0-9_-]/.test(c));
    fc.assert(
      fc.property(validName, foreign, fc.nat(), (name, c, at) => {
        const i = at % (name.length + 1);
        const bad = name.slice(0, i) + c + name.slice(i);
        expect(() => Username.parse(bad)).toThrow(InvalidUsername);
        expect(() => ProjectName.parse(bad)).toThrow(InvalidProjectName);
      }),
    );
  });

  it('holds the length bounds: 0 and 65 rejected, 1 and 64 accepted', () => {
    expect(() => Username.parse('')).toThrow(InvalidUsername);
    expect(Username.parse('a')).toBe('a');
    expect(Username.parse('a'.repeat(64))).toBe('a'.repeat(64));
    expect(() => Username.parse('a'.repeat(65))).toThrow(InvalidUsername);
    expect(() => ProjectName.parse(undefined)).toThrow(InvalidProjectName);
  });

  it('rejects upper case, dots and slashes that could reach the filesystem', () => {
    for (const bad of ['Alice', 'a.b', '.', '..', 'a/b', 'a b', 'é']) {
      expect(() => Username.parse(bad)).toThrow(InvalidUsername);
    }
  });
});
