// Root hooks shared by every test file: resources registered here (the shared lab cluster, the
// laid-out product) are stopped once, after the whole run.
//
// `npm test` runs files side by side (mocha --parallel): each worker process runs many files, and
// mocha runs root hooks once per file there. A worker keeps its shared resources for all its files
// instead, and leaves their cleanup to its own exit: lab processes get a parent-death signal and
// lab dirs a janitor (test/lab/process.ts), so nothing outlives the worker.
//
// KANGAL_TEST_TIMINGS=<file> appends one line per test file, `<ms>\t<file>`, from the first hook to
// the last (its labs' start and stop included): what to look at when `npm test` nears its budget.
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';

type Cleanup = () => Promise<void> | void;
type HookContext = { test?: { parent?: { suites?: { file?: string }[] } } };
const timings = process.env['KANGAL_TEST_TIMINGS'];
let fileStarted = 0;
const cleanups: Cleanup[] = [];
const inParallelWorker = process.env['MOCHA_WORKER_ID'] !== undefined;

export function onRunEnd(cleanup: Cleanup): void {
  cleanups.push(cleanup);
}

export const mochaHooks = {
  beforeAll(): void {
    fileStarted = Date.now();
  },
  async afterAll(): Promise<void> {
    // Under mocha `this` is the hook's context; the chaos runner and the soak call it on this object, to run the cleanups.
    const file = (this as unknown as HookContext).test?.parent?.suites?.[0]?.file;
    if (timings && file) appendFileSync(timings, `${Date.now() - fileStarted}\t${relative(process.cwd(), file)}\n`);
    if (inParallelWorker) return;
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  },
};
