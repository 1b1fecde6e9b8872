#!/usr/bin/env node
// Entry point of the `kangal-patch` command. In a checkout (the TypeScript sources are next to
// this file) it runs them through tsx, so an old `npm run build` can never shadow the code you
// are editing; in the container image and the package, which ship only `dist/`, it runs the
// bundle `dist/kangal-patch.mjs` (one file with its dependencies: about 27 MiB less heap at start
// than loading the ~1,900 modules of `dist/controller/`), or the compiled CLI where a build has no
// bundle. Node 20 cannot strip types itself.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const source = `${root}controller/cli.ts`;
let cli;
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  cli = await import(pathToFileURL(source).href);
} else {
  const bundle = `${root}dist/kangal-patch.mjs`;
  cli = await import(pathToFileURL(existsSync(bundle) ? bundle : `${root}dist/controller/cli.js`).href);
}
process.exitCode = await cli.main(process.argv.slice(2));
