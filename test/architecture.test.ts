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

/** The lint zone of the unpack and writer threads: prove it fails the imports it must, and lets through the few it allows. */
describe('code run on the unpack and writer threads', () => {
  const eslint = new ESLint();
  const lint = async (filePath: string, code: string) => {
    const [result] = await eslint.lintText(`${code}\nexport {};\n`, { filePath });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  };
  const onThreads = ['src/adapters/fs/unpack/example.ts', 'src/adapters/fs/write/example.ts'];

  it.each([
    ["import { FsThreads } from '../threads/fs-threads.js';"],
    ["import { WriterTasks } from '../threads/writer-tasks.js';"],
    ["import { DeploysTree } from '../layout/deploys-tree.js';"],
    ["import { NodeStaging } from '../staging/node-staging.js';"],
    ["import { ProjectContent } from '../store/project-content.js';"],
    ["import { InvalidRequestBody } from '../../http/http-errors.js';"],
    ["import type { Staging } from '../../../application/ports/staging.js';"],
    ["import { buildContainer } from '../../../container.js';"],
    ["import { readFile } from 'node:fs/promises';"],
    ["import { inject } from 'inversify';"],
  ])('refuses %s', async (line) => {
    for (const file of onThreads) expect(await lint(file, line)).not.toHaveLength(0);
  });

  it('lets through the protocol, the op encoding, the flow control, the object names, the domain, its own folder and Node', async () => {
    const allowed = [
      "import type { ToWriter } from '../threads/fs-protocol.js';",
      "import { OP_PUT } from '../threads/fs-ops.js';",
      "import { SendWindow } from '../threads/send-window.js';",
      "import { objectPath } from '../store/object-names.js';",
      "import { ArchiveRejected } from '../../../domain/errors.js';",
      "import { other } from './other.js';",
      "import { linkSync } from 'node:fs';",
    ].join('\n');
    for (const file of onThreads) expect(await lint(file, allowed)).toEqual([]);
  });

  it('does not bind the main thread: its side of the threads imports what it needs', async () => {
    expect(await lint('src/adapters/fs/threads/example.ts', "import { DeploysTree } from '../layout/deploys-tree.js';\nimport { readFile } from 'node:fs/promises';")).toEqual([]);
  });
});

describe('src/adapters/fs/README.md', () => {
  it('names only files that exist', async () => {
    const { readFile } = await import('node:fs/promises');
    const { existsSync } = await import('node:fs');
    const readme = await readFile('src/adapters/fs/README.md', 'utf8');
    const named = [...readme.matchAll(/`([a-z-]+\/[a-z/-]+\.ts)`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(20);
    expect(named.filter((path) => !existsSync(`src/adapters/fs/${path}`) && !existsSync(`src/${path}`))).toEqual([]);
  });
});
