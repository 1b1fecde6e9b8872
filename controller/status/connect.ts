// The viewer's connection: their own kubeconfig (--kubeconfig, else in-cluster, $KUBECONFIG or
// ~/.kube/config, as kubectl), the context they name, and the kube adapter over it. Read-only: the
// status command only lists and watches; the adapter's write paths are never called.
import { DEFAULT_OPERATOR_NAMESPACE } from '../../schemas/api.js';
import { createKubeFromConfig, loadKubeConfig, type Kube } from '../kube/index.js';
import { systemClock } from '../runtime/clock.js';
import type { LogFn } from '../runtime/log.js';

/** A problem the viewer can fix, said in one message; the command prints it and exits 1. */
export class StatusError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StatusError';
  }
}

export interface ConnectOptions {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  /** Where the informers' warnings go (a list that keeps failing says why when the sync times out). */
  log: LogFn;
}

type KubeConfigOf = ReturnType<typeof loadKubeConfig>;

function load(path: string | undefined): KubeConfigOf {
  try {
    return loadKubeConfig({ kubeconfigPath: path });
  } catch (err) {
    throw new StatusError(err instanceof Error ? err.message : String(err));
  }
}

export function connect(opts: ConnectOptions): Kube {
  const kc = load(opts.kubeconfig);
  if (opts.context !== undefined) {
    const names = kc.getContexts().map((c) => c.name);
    if (!names.includes(opts.context))
      throw new StatusError(`the kubeconfig has no context "${opts.context}"; it has: ${names.join(', ') || 'none'}`);
    kc.setCurrentContext(opts.context);
  }
  return createKubeFromConfig(kc, {
    operatorNamespace: DEFAULT_OPERATOR_NAMESPACE,
    clock: systemClock,
    logger: opts.log,
    // A person is waiting: a watch that broke is started again within seconds, not 30.
    informerBackoff: { initialMs: 250, maxMs: 5_000 },
  });
}
