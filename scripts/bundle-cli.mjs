// Bundles the CLI, after tsc, into one file that runs on plain Node 20 with nothing
// installed: the server serves it at GET /api/v1/cli so a pipeline can fetch and run it.
import { build } from 'esbuild';

await build({
  entryPoints: ['dist/adapters/cli/main.js'],
  outfile: 'dist/sitedrop.mjs',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Some dependencies are CommonJS and require() Node's own modules; in an ES module
  // there is no require until one is made.
  banner: { js: "import { createRequire as __sitedropCreateRequire } from 'node:module';\nconst require = __sitedropCreateRequire(import.meta.url);" },
  legalComments: 'eof',
  logLevel: 'warning',
});
