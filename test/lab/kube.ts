// Kubernetes API clients for lab code (the product has its own Kubernetes adapter; the lab shares no code with it).
import { KubeConfig, PatchStrategy, setHeaderOptions, type ConfigurationOptions } from '@kubernetes/client-node';

export function loadKubeConfig(kubeconfigPath: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  return kc;
}

/** client-node defaults to JSON Patch; every lab patch is a merge patch. */
export const mergePatch: ConfigurationOptions = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The HTTP status of a client-node ApiException, or undefined for other errors. */
export function apiStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}
