import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** What the inner layers may never import: the hexagon is held by this rule, not by good intentions. */
const outerWorld = [
  { group: ['**/adapters/**', '**/adapters'], message: 'domain and application code must not depend on adapters' },
  { group: ['express', 'express/*', 'busboy', 'kysely', 'kysely/*', 'better-sqlite3', 'pg', 'pg-*', 'tar', 'tar/*', 'pino', 'prom-client'], message: 'frameworks, drivers and libraries belong in src/adapters' },
  { group: ['node:fs', 'node:fs/*', 'fs', 'fs/*', 'node:child_process', 'child_process', 'node:net', 'node:http', 'node:worker_threads', 'node:zlib'], message: 'I/O belongs in src/adapters' },
  { group: ['**/container', '**/container.js', '**/main', '**/main.js', '**/service', '**/service.js'], message: 'inner layers never reach the composition root' },
];

/**
 * Code run on the unpack and writer threads (src/adapters/fs/unpack, write): each is an
 * isolate of its own, doing synchronous work in a loop. It may import the domain, Node's
 * built-ins, tar (unpack), its own folder, and of the rest of the adapter only what both
 * sides of a thread share: the protocol, the op encoding, the flow control, the object
 * names, the kept manifest's file, a directory's origin. Nothing of the main thread's (its async fs, the container, its services).
 */
const threadShared = ['threads/fs-protocol', 'threads/fs-ops', 'threads/send-window', 'threads/fs-errors', 'threads/garbage', 'threads/quiet-collection', 'threads/thread-priority', 'store/object-names', 'store/generated-siblings', 'store/kept-manifest-file', 'layout/directory-origin'];
const onThreads = [
  {
    // Any path out of the folder but to the shared files above and to the domain.
    regex: `^\\.\\./(?!(?:${threadShared.join('|')})\\.js$|\\.\\./\\.\\./domain/)`,
    message: 'code run on the unpack and writer threads imports only the domain and the modules both sides of a thread share (threadShared)',
  },
  { group: ['inversify', 'express', 'express/*', 'busboy', 'kysely', 'kysely/*', 'better-sqlite3', 'pg', 'pino', 'prom-client', 'node:fs/promises', 'fs/promises'], message: 'the unpack and writer threads do synchronous work only, with no framework' },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'var/**', 'bench/results/**', 'bench/.fixtures/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: Object.fromEntries(
        ['process', 'console', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'queueMicrotask', 'URL', 'Buffer', 'fetch', 'performance'].map((name) => [name, 'readonly']),
      ),
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // A file a newcomer can read whole (issue 29); functions are held to 80 lines by scripts/function-lengths.mjs.
    files: ['src/**/*.ts'],
    rules: { 'max-lines': ['error', { max: 300 }] },
  },
  {
    // Run by nginx's njs 0.7.9, not by Node: its catch clauses must name the error.
    files: ['src/adapters/webserver/nginx/*.js'],
    rules: { '@typescript-eslint/no-unused-vars': ['error', { caughtErrors: 'none' }] },
  },
  {
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [...outerWorld, { group: ['**/application/**', 'inversify'], message: 'the domain depends on nothing' }] }],
    },
  },
  {
    files: ['src/application/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: outerWorld }] },
  },
  {
    files: ['src/adapters/fs/unpack/**/*.ts', 'src/adapters/fs/write/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: onThreads }] },
  },
);
