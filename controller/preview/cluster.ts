// What `kangal-patch preview` reads from the cluster, once, read-only: Nodes, PatchPlans and the
// control plane's static pods (for the kube-apiserver versions), through the controller's own informers so the
// projections are the ones the reconcilers see.
import type { ApiServerFact } from '../core/kubernetes/skew.js';
import type { OtherPlan } from '../preflight/checks.js';
import type { Kube, NodeView } from '../kube/index.js';
import type { PlanView } from '../kube/views.js';
import { remainingMs, type OpContext } from '../runtime/context.js';
import { OutcomeError, OutcomeKind } from '../runtime/outcome.js';
import { armTimer, type LongTimer } from '../runtime/timer.js';
import { apiServerFacts } from '../rollout/kubernetes-facts.js';
import { otherPlansOf } from '../rollout/plan/preflight-port.js';

export interface ClusterSnapshot {
  nodes: NodeView[];
  otherPlans: OtherPlan[];
  apiServers: ApiServerFact[];
  /** The plan itself as the cluster has it (a template's status: the report index sequences it saw). */
  self?: PlanView | undefined;
}

export async function readCluster(ctx: OpContext, kube: Kube, planName: string): Promise<ClusterSnapshot> {
  const { nodes, staticPods, patchPlans } = kube.informers;
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  let timer: LongTimer | undefined;
  try {
    for (const i of [nodes, staticPods, patchPlans]) i.start(stop.signal);
    const timeout = new Promise<never>((_, reject) => {
      timer = armTimer(remainingMs(ctx), () => {
        const waiting = [
          ['Nodes', nodes],
          ['Pods', staticPods],
          ['PatchPlans', patchPlans],
        ]
          .filter(([, i]) => !(i as typeof nodes).isSynced())
          .map(([n]) => n as string);
        reject(
          new OutcomeError({
            kind: OutcomeKind.Transient,
            reason: 'ListTimeout',
            message: `could not list ${waiting.join(', ')} from ${kube.server} in time: check the kubeconfig, RBAC (list/watch) and that the PatchPlan CRD is installed (kubectl apply -k kustomize/crd)`,
          }),
        );
      });
    });
    await Promise.race([Promise.all([nodes.synced, staticPods.synced, patchPlans.synced]), timeout]);
    const list = nodes.list();
    return {
      nodes: list,
      otherPlans: otherPlansOf(patchPlans.list(), list, planName),
      apiServers: apiServerFacts(kube.informers),
      self: patchPlans.get(planName),
    };
  } finally {
    timer?.cancel();
    ctx.signal.removeEventListener('abort', onAbort);
    stop.abort();
  }
}
