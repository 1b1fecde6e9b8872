#!/usr/bin/env node
// Entry point of the `kangal-patch` command. Uses the compiled CLI when `npm run build` produced
// one, otherwise runs the TypeScript sources through tsx (Node 20 cannot strip types itself).
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const built = `${root}dist/controller/cli.js`;
let cli;
if (existsSync(built)) {
  cli = await import(pathToFileURL(built).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  cli = await import(pathToFileURL(`${root}controller/cli.ts`).href);
}
process.exitCode = await cli.main(process.argv.slice(2));
