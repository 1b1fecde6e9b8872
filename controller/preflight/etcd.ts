// The EtcdHealthy preflight check: for a plan that upgrades Talos on control-plane nodes, etcd read
// from every control-plane node of the cluster (each call under the Talos client's etcd deadline)
// and judged by core/etcd/preflight. What it found goes into plan status (status.etcd), whose leader
// the selection puts last in its group.
import { DEFAULT_ETCD_MAX_LAG_ENTRIES } from '../../schemas/etcd.js';
import type { PatchPlanSpec } from '../../schemas/patchplan.js';
import { etcdPreflight } from '../core/etcd/preflight.js';
import type { Selection } from '../core/plan/selection.js';
import type { PreflightCheck } from '../core/plan/types.js';
import type { NodeView } from '../kube/views.js';
import type { OpContext } from '../runtime/context.js';
import { controlPlaneNodes, readEtcdFacts } from '../talos/etcd-facts.js';
import type { TalosSession } from '../talos/talos-access.js';

const ETCD_CHECK = 'EtcdHealthy';

/** The control-plane nodes the plan upgrades Talos on, in scheduling order (none: the check does not apply). */
export function etcdGated(spec: PatchPlanSpec, selection: Selection, nodes: ReadonlyMap<string, NodeView>): string[] {
  if (spec.target.talosVersion === undefined) return [];
  return selection.groups.flatMap((g) => g.nodes.filter((n) => nodes.get(n)?.controlPlane === true));
}

/** What the check reads: the plan, the control-plane nodes it gates (etcdGated), and the cluster's nodes. */
export interface EtcdCheckInput {
  spec: PatchPlanSpec;
  gated: readonly string[];
  nodes: ReadonlyMap<string, NodeView>;
}

export async function etcdHealthy(
  ctx: OpContext,
  session: TalosSession,
  { spec, gated, nodes }: EtcdCheckInput,
): Promise<PreflightCheck> {
  const controlPlanes = controlPlaneNodes(nodes.values());
  const first = controlPlanes[0];
  if (first === undefined)
    return { name: ETCD_CHECK, passed: false, message: 'no control-plane node in the cluster to read etcd from' };
  const facts = await readEtcdFacts(ctx, session.forNode(first.internalIP ?? first.name), controlPlanes);
  const r = etcdPreflight(facts, {
    selected: gated,
    maxLagEntries: spec.etcd?.maxLagEntries ?? DEFAULT_ETCD_MAX_LAG_ENTRIES,
    now: ctx.clock.now(),
  });
  return { name: ETCD_CHECK, passed: r.passed, message: r.message, ...(r.status ? { etcd: r.status } : {}) };
}
