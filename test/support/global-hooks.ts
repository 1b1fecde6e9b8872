// Root hooks shared by every test file: resources registered here (the shared lab cluster,
// servers) are stopped once, after the whole run.
type Cleanup = () => Promise<void> | void;
const cleanups: Cleanup[] = [];

export function onRunEnd(cleanup: Cleanup): void {
  cleanups.push(cleanup);
}

export const mochaHooks = {
  async afterAll(): Promise<void> {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  },
};
