// Bundles the CLI, after tsc, into one file that runs on plain Node 20 with nothing
// installed: the server serves it at GET /api/v1/cli so a pipeline can fetch and run it.
import { build } from 'esbuild';
import { isBuiltin } from 'node:module';

/**
 * Node's fs and path stay imports: Node has loaded them before any script runs, and
 * through require() every module importing them would copy all their exports (esbuild's
 * interop; node-tar imports each about ten times), 7% of a deploy's start.
 */
const ALREADY_LOADED = /^(node:)?(fs|path)$/;

/**
 * Node's other modules through require(), not import: esbuild hoists every import of one
 * to the top of the file, so it would load at start even for a module initialised lazily
 * (a dynamic import()); a require() runs when the module that needs it is initialised, so
 * `--help` loads no http, https, zlib, crypto or worker_threads.
 */
const builtinsOnDemand = {
  name: 'builtins-on-demand',
  setup(bundler) {
    const onDemand = (path) => isBuiltin(path) && !ALREADY_LOADED.test(path);
    bundler.onResolve({ filter: /^[a-z:_/]+$/ }, ({ path, kind }) => (kind === 'import-statement' && onDemand(path) ? { path, namespace: 'builtin' } : undefined));
    bundler.onLoad({ filter: /.*/, namespace: 'builtin' }, ({ path }) => ({ contents: `module.exports = require(${JSON.stringify(path)});` }));
  },
};

const common = { bundle: true, platform: 'node', target: 'node20', legalComments: 'eof', logLevel: 'warning' };

// The hash threads' script, carried in the bundle as a string (a Worker runs it with
// eval): a thread that ran the whole CLI instead would pay its load again. The thread
// pool's own code, which reads import.meta, is dropped from it as unused.
const hashThread = await build({
  ...common,
  entryPoints: ['dist/adapters/cli/hash-thread.js'],
  format: 'cjs',
  write: false,
  minify: true,
  legalComments: 'none',
  logOverride: { 'empty-import-meta': 'silent' },
});

await build({
  ...common,
  entryPoints: ['dist/adapters/cli/main.js'],
  outfile: 'dist/sitedrop.mjs',
  format: 'esm',
  define: { SITEDROP_HASH_THREAD: JSON.stringify(hashThread.outputFiles[0].text) },
  plugins: [builtinsOnDemand],
  // Some dependencies are CommonJS and require() Node's own modules; in an ES module
  // there is no require until one is made.
  banner: { js: "import { createRequire as __sitedropCreateRequire } from 'node:module';\nconst require = __sitedropCreateRequire(import.meta.url);" },
});
