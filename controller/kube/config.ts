// Where the controller's Kubernetes credentials come from: an explicit kubeconfig path, else the
// pod's service account, else $KUBECONFIG or ~/.kube/config. client-node's loadFromDefault()
// silently falls back to http://localhost:8080 when it finds nothing; we fail with a clear error.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface KubeConfigSource {
  /** An explicit kubeconfig file (flag or option); wins over everything else. */
  kubeconfigPath?: string | undefined;
  /** For tests: the environment and file checks to use. */
  env?: NodeJS.ProcessEnv;
  exists?: (path: string) => boolean;
}

class KubeConfigError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'KubeConfigError';
  }
}

export function loadKubeConfig(source: KubeConfigSource = {}): KubeConfig {
  const env = source.env ?? process.env;
  const exists = source.exists ?? existsSync;
  const kc = new KubeConfig();
  const from = (what: string, load: () => void): KubeConfig => {
    try {
      load();
    } catch (err) {
      throw new KubeConfigError(`cannot load Kubernetes configuration from ${what}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (!kc.getCurrentCluster()) throw new KubeConfigError(`${what} names no current cluster (set current-context)`);
    return kc;
  };
  if (source.kubeconfigPath) {
    const path = source.kubeconfigPath;
    if (!exists(path)) throw new KubeConfigError(`kubeconfig ${path} does not exist`);
    return from(`kubeconfig ${path}`, () => kc.loadFromFile(path));
  }
  if (inCluster(env, exists)) {
    return from('the in-cluster service account', () => kc.loadFromCluster());
  }
  const listed = (env['KUBECONFIG'] ?? '').split(':').filter((p) => p !== '');
  if (listed.length > 0) {
    const present = listed.filter((p) => exists(p));
    if (present.length === 0) throw new KubeConfigError(`none of the files in $KUBECONFIG exist: ${listed.join(', ')}`);
    // kubectl's rule: the first file that sets current-context wins; later files add entries.
    return from(`$KUBECONFIG (${present.join(', ')})`, () => {
      const [first, ...rest] = present as [string, ...string[]];
      kc.loadFromFile(first);
      for (const p of rest) {
        const more = new KubeConfig();
        more.loadFromFile(p);
        kc.mergeConfig(more, kc.currentContext !== '' && kc.currentContext !== undefined);
      }
    });
  }
  const home = join(env['HOME'] ?? homedir(), '.kube', 'config');
  if (exists(home)) return from(`kubeconfig ${home}`, () => kc.loadFromFile(home));
  throw new KubeConfigError(
    'no Kubernetes configuration: pass --kubeconfig, run in a pod with a service account, set $KUBECONFIG, or create ~/.kube/config',
  );
}

/** Running in a pod: the service's address is in the environment and the service account token is mounted. */
function inCluster(env: NodeJS.ProcessEnv, exists: (path: string) => boolean): boolean {
  return !!env['KUBERNETES_SERVICE_HOST'] && !!env['KUBERNETES_SERVICE_PORT'] && exists(SERVICE_ACCOUNT_TOKEN);
}

/**
 * The same cluster and credentials acting as `username` (the Impersonate-User header on every request,
 * watches included): what it may read is what RBAC grants that user, and the controller's identity
 * needs only `impersonate` on it. A copy: the caller's KubeConfig is unchanged.
 */
export function impersonating(kubeConfig: KubeConfig, username: string): KubeConfig {
  const current = kubeConfig.getCurrentUser()?.name;
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: kubeConfig.clusters,
    contexts: kubeConfig.contexts,
    currentContext: kubeConfig.currentContext,
    users: kubeConfig.users.map((u) => (u.name === current ? { ...u, impersonateUser: username } : u)),
  });
  return out;
}
