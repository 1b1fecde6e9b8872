#!/usr/bin/env node
// Entry point of the `kangal-patch` command. In a checkout (the TypeScript sources are next to
// this file) it runs them through tsx, so an old `npm run build` can never shadow the code you
// are editing; in the container image and the package, which ship only `dist/`, it runs the
// compiled CLI. Node 20 cannot strip types itself.
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
  cli = await import(pathToFileURL(`${root}dist/controller/cli.js`).href);
}
process.exitCode = await cli.main(process.argv.slice(2));
