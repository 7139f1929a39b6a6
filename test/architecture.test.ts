import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

/** The lint rule that holds the hexagon: prove it fails the imports it must. */
describe('layer boundaries', () => {
  const eslint = new ESLint();
  const lint = async (filePath: string, code: string) => {
    const [result] = await eslint.lintText(code, { filePath });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  };

  it.each([
    ["import { readFileSync } from 'node:fs';"],
    ["import express from 'express';"],
    ["import { Kysely } from 'kysely';"],
    ["import Database from 'better-sqlite3';"],
    ["import { NodeReleaseStore } from '../adapters/fs/node-release-store.js';"],
    ["import { buildContainer } from '../container.js';"],
  ])('refuses %s in src/domain and src/application', async (line) => {
    expect(await lint('src/domain/example.ts', `${line}\nexport {};\n`)).not.toHaveLength(0);
    expect(await lint('src/application/example.ts', `${line}\nexport {};\n`)).not.toHaveLength(0);
  });

  it('lets the domain import nothing of the application, and adapters import anything', async () => {
    expect(await lint('src/domain/example.ts', "import { DeployRelease } from '../application/deploy-release.js';\nexport {};\n")).toHaveLength(1);
    expect(await lint('src/adapters/example.ts', "import { readFileSync } from 'node:fs';\nimport express from 'express';\nexport {};\n")).toHaveLength(0);
  });

  it('the tree as it stands is clean', async () => {
    const results = await eslint.lintFiles(['src']);
    expect(results.flatMap((r) => r.messages.map((m) => `${r.filePath}: ${m.message}`))).toEqual([]);
  });
});
