// kube-controller-manager has no readiness endpoint when run with --secure-port=0; its disruption
// controller catching up on a PDB is the signal the lab's eviction tests depend on.
import { CoreV1Api, PolicyV1Api } from '@kubernetes/client-node';
import { apiStatus, loadKubeConfig } from '../kube.js';
import type { ManagedProcess } from '../process.js';
import { waitFor } from '../wait.js';

const namespace = 'kangal-lab-readiness';

export async function waitForDisruptionController(
  kubeconfigPath: string,
  kcm: ManagedProcess,
  timeoutMs: number,
): Promise<void> {
  const kc = loadKubeConfig(kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const policy = kc.makeApiClient(PolicyV1Api);
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch((err: unknown) => {
    if (apiStatus(err) !== 409) throw err;
  });
  const pdb = await policy.createNamespacedPodDisruptionBudget({
    namespace,
    body: {
      metadata: { generateName: 'probe-' },
      spec: { minAvailable: 0, selector: { matchLabels: { probe: 'kcm' } } },
    },
  });
  const name = pdb.metadata?.name ?? '';
  let exitCode: number | null | undefined;
  void kcm.exited.then((code) => (exitCode = code));
  try {
    await waitFor(
      async () => {
        if (exitCode !== undefined) throw new Error(`kube-controller-manager exited with code ${exitCode}`);
        const current = await policy.readNamespacedPodDisruptionBudget({ namespace, name });
        return (current.status?.observedGeneration ?? 0) >= (current.metadata?.generation ?? 1) ? true : undefined;
      },
      { timeoutMs, intervalMs: 100, description: 'the disruption controller to observe a PDB' },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- ${kcm.logPath} (last lines) ---\n${kcm.tail()}`, { cause: err });
  }
  await policy.deleteNamespacedPodDisruptionBudget({ namespace, name });
}
