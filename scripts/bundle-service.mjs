// Bundles, after tsc, each of the service's entry points (the process and the threads and
// process it starts) into one file in place of tsc's: each thread then loads one module
// instead of hundreds, which takes about 7 MiB off a running service and half its start
// (docs/performance.md, "The service bundled").
import { build } from 'esbuild';
import { readFileSync, realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

// As esbuild names the files it loads: through no symbolic link.
const dist = `${realpathSync(fileURLToPath(new URL('../dist/', import.meta.url)))}/`;
const BANNER = "import { createRequire as __sitedropCreateRequire } from 'node:module';\nconst require = __sitedropCreateRequire(import.meta.url);";

/** Started by name: `node dist/main.js`, `script()` in fs-threads.ts, and the precompression fork. */
const SERVICE_ENTRIES = ['main.js', 'adapters/fs/unpack/unpack-thread.js', 'adapters/fs/write/writer-thread.js', 'adapters/precompress/precompress-process.js'];

/**
 * Our modules find files next to them (the CLI bundle, dist/openapi.json, the addons in
 * build/, the threads' scripts) from `import.meta.url`, which in a bundle is the bundle's.
 * Each use becomes its module's own address, worked out from the bundle's at run time, so
 * the built tree still runs wherever the project is moved.
 */
function ownModuleUrl(bundleFile) {
  return {
    name: 'own-module-url',
    setup(bundler) {
      bundler.onLoad({ filter: /\.js$/ }, async ({ path }) => {
        if (!path.startsWith(dist)) return undefined;
        const text = await readFile(path, 'utf8');
        if (!text.includes('import.meta.url')) return undefined;
        const fromBundle = `./${relative(dirname(bundleFile), path).split('\\').join('/')}`;
        return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(fromBundle)}, import.meta.url).href`), loader: 'js' };
      });
    },
  };
}

for (const entry of SERVICE_ENTRIES) {
  const file = `${dist}${entry}`;
  // Bundled in place, so tsc's file must be there, not an earlier bundle.
  if (readFileSync(file, 'utf8').startsWith(BANNER)) throw new Error(`dist/${entry} is a bundle already: run npm run build, which compiles first`);
  await build({
    entryPoints: [file],
    outfile: file,
    allowOverwrite: true,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    // Kept readable: an operator's stack trace names our functions and lines. Maps chain
    // to the TypeScript for `node --enable-source-maps`.
    sourcemap: 'linked',
    logLevel: 'warning',
    // A native addon cannot be bundled; pg and pino-pretty are loaded only when configured.
    external: ['better-sqlite3', 'pg', 'pino-pretty'],
    plugins: [ownModuleUrl(file)],
    // CommonJS dependencies require() Node's own modules; an ES module has no require until one is made.
    banner: { js: BANNER },
  });
}
