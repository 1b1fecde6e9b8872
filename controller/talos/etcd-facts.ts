// Reads what core/etcd decides on: from every control-plane node its EtcdStatus and member list,
// and the cluster's alarms, in parallel, each call under the Talos client's own short etcd deadline
// (a down or starting member's call hangs upstream). A failed read is a fact ("status on cp2
// failed: ..."), not an error: the gate stays closed and says why. Used by the job reconciler's
// etcd gate and by the plan's preflight, both above this adapter.
import type { EtcdFacts, EtcdNodeFacts } from '../core/etcd/index.js';
import type { OpContext } from '../runtime/context.js';
import type { NodeView } from '../kube/views.js';
import type { TalosPort } from './port.js';

export interface ControlPlaneNode {
  name: string;
  /** How the node is addressed over the Talos API (InternalIP, else the name). */
  internalIP: string | undefined;
}

/** The cluster's control-plane nodes, by name: whom etcd is read from. */
export function controlPlaneNodes(nodes: Iterable<NodeView>): ControlPlaneNode[] {
  return [...nodes]
    .filter((n) => n.controlPlane)
    .map((n) => ({ name: n.name, internalIP: n.internalIP }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

// The adapters' errors (TalosApiError, OutcomeError) are Errors: their message is the fact.
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

async function settle<T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: string }> {
  try {
    return { ok: true, value: await p };
  } catch (err) {
    return { ok: false, error: message(err) };
  }
}

/** The etcd facts of the cluster whose control-plane nodes are `nodes`. Throws only when `ctx` is aborted. */
export async function readEtcdFacts(
  ctx: OpContext,
  talos: TalosPort,
  nodes: readonly ControlPlaneNode[],
): Promise<EtcdFacts> {
  const perNode = nodes.map(async (n): Promise<EtcdNodeFacts> => {
    const target = n.internalIP ?? n.name;
    const [status, members] = await Promise.all([
      settle(talos.etcdStatus(ctx, target)),
      settle(talos.etcdMembers(ctx, target)),
    ]);
    return { node: n.name, ip: n.internalIP ?? '', status, members };
  });
  // Alarms are cluster-wide: the first control-plane node that answers gives them.
  const alarms = (async (): Promise<EtcdFacts['alarms']> => {
    const errors: string[] = [];
    for (const n of nodes) {
      const r = await settle(talos.etcdAlarms(ctx, n.internalIP ?? n.name));
      if (r.ok) return r;
      errors.push(`${n.name}: ${r.error}`);
    }
    return { ok: false, error: errors.join('; ') || 'no control-plane node' };
  })();
  const facts = { nodes: await Promise.all(perNode), alarms: await alarms };
  if (ctx.signal.aborted) throw new Error('etcd read aborted');
  return facts;
}
