// One real control plane per test run: starting one costs seconds, so suites share it and
// isolate themselves with their own namespaces and object names.
import { startCluster, type LabCluster } from '../lab/cluster/index.js';
import { onRunEnd } from './global-hooks.js';

let shared: Promise<LabCluster> | undefined;

export function sharedCluster(): Promise<LabCluster> {
  if (!shared) {
    shared = startCluster();
    const started = shared;
    // A failed start has nothing to stop; its error already failed the suite that asked.
    onRunEnd(async () => (await started.catch(() => undefined))?.stop());
  }
  return shared;
}
