// Bundles the compiled CLI (DIST/controller/cli.js, `tsc -p tsconfig.build.json`) and every
// production dependency it imports into one ESM file, DIST/kangal-patch.mjs, which runs without
// node_modules. Why: loading one file instead of ~1,500 modules saves about 27 MiB of heap at start
// (46.9 -> 20.0 MiB heapUsed measured on Node 24; BENCHMARKS.md "Memory at start"), issue 18's 5,000
// nodes in 200 MB. One place for the options: `npm run build`, the Dockerfile's build stage and the
// e2e tests' product (test/support/product.ts) all run this file.
//
// Usage: node bundle.mjs [DIST]   (DIST defaults to ./dist)
import { build } from 'esbuild';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = resolve(process.argv[2] ?? 'dist');

await build({
  entryPoints: [join(dist, 'controller/cli.js')],
  outfile: join(dist, 'kangal-patch.mjs'),
  bundle: true,
  // The dependencies are the ones installed beside this file, also for a DIST elsewhere (the e2e
  // tests compile into the lab cache, outside the checkout).
  nodePaths: [fileURLToPath(new URL('node_modules', import.meta.url))],
  platform: 'node',
  format: 'esm',
  target: 'node22',
  // Whitespace and syntax only: identifiers stay, so stack traces still name the functions.
  minifyWhitespace: true,
  minifySyntax: true,
  // CommonJS dependencies call require() for Node's built-in modules; an ESM file has none.
  banner: {
    js: "import { createRequire as __kangalCreateRequire } from 'node:module'; const require = __kangalCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
