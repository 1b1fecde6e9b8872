// Root hooks shared by every test file: resources registered here (the shared lab cluster, the
// laid-out product) are stopped once, after the whole run.
//
// `npm test` runs files side by side (mocha --parallel): each worker process runs many files, and
// mocha runs root hooks once per file there. A worker keeps its shared resources for all its files
// instead, and leaves their cleanup to its own exit: lab processes get a parent-death signal and
// lab dirs a janitor (test/lab/process.ts), so nothing outlives the worker.
type Cleanup = () => Promise<void> | void;
const cleanups: Cleanup[] = [];
const inParallelWorker = process.env['MOCHA_WORKER_ID'] !== undefined;

export function onRunEnd(cleanup: Cleanup): void {
  cleanups.push(cleanup);
}

export const mochaHooks = {
  async afterAll(): Promise<void> {
    if (inParallelWorker) return;
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  },
};
