// Talos clients for PatchJobs: credentials only from a Secret in the operator namespace, endpoints
// from the job (copied from its plan) or else the node's own InternalIP.
import type { PatchJobSpec } from '../../../schemas/patchjob.js';
import type { KubePort } from '../../kube/port.js';
import type { OpContext } from '../../runtime/context.js';
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';
import { createTalosClient, type TalosClientOptions } from '../../talos/index.js';
import type { TalosPort } from '../../talos/port.js';

export type TalosConnect = (ctx: OpContext, talosConfig: PatchJobSpec['talosConfig'], nodeIP: string) => Promise<TalosPort>;

/** `options`: for every client it makes (e.g. `onCallEnd` for metrics). */
export function talosConnector(kube: KubePort, operatorNamespace: string, options: TalosClientOptions = {}): TalosConnect {
  return async (ctx, talosConfig, nodeIP) => {
    const ref = talosConfig.secretRef;
    const namespace = ref.namespace ?? operatorNamespace;
    if (namespace !== operatorNamespace) {
      throw new OutcomeError({
        kind: OutcomeKind.Stalled,
        reason: 'TalosSecretOutsideOperatorNamespace',
        message: `talosConfig.secretRef points at namespace ${namespace}; the Talos credentials Secret must live in the operator namespace ${operatorNamespace}`,
      });
    }
    const data = await kube.readSecret(ctx, namespace, ref.name);
    if (!data) {
      throw new OutcomeError({
        kind: OutcomeKind.Stalled,
        reason: 'TalosSecretNotFound',
        message: `Secret ${namespace}/${ref.name} (talosConfig.secretRef) does not exist: create it with keys ca.crt, tls.crt and tls.key from your talosconfig`,
      });
    }
    return createTalosClient({ endpoints: talosConfig.endpoints ?? [nodeIP], secret: data }, options);
  };
}
