// Cordon and uncordon: one merge patch each, guarded by the view's resourceVersion so we never
// act on a node that changed since we decided, and marked with the job that cordoned it so we
// never uncordon a node somebody else cordoned.
import type { OpContext } from '../runtime/context.js';
import { OutcomeError, OutcomeKind } from '../runtime/outcome.js';
import { kubeCall } from './call.js';
import type { KubeClients } from './clients.js';
import { projectNode } from './project.js';
import { CORDONED_BY_ANNOTATION, type NodeView } from './views.js';

export async function cordonNode(c: KubeClients, ctx: OpContext, node: NodeView, jobName: string): Promise<NodeView> {
  // Claiming a node that is already cordoned (by a person or another job) would let us uncordon
  // it later; refuse instead. Our own cordon again is a no-op write, so retries are safe.
  if (node.unschedulable && node.cordonedBy !== jobName) {
    const by = node.cordonedBy === undefined ? 'someone else (no cordoned-by annotation)' : `job ${node.cordonedBy}`;
    throw new OutcomeError({ kind: OutcomeKind.Stalled, reason: 'CordonedByOther', message: `node ${node.name} is already cordoned by ${by}` });
  }
  const body = {
    metadata: { resourceVersion: node.resourceVersion, annotations: { [CORDONED_BY_ANNOTATION]: jobName } },
    spec: { unschedulable: true },
  };
  const out = await kubeCall(ctx, `cordon node ${node.name}`, (o) => c.core.patchNode({ name: node.name, body }, o), { patch: 'merge' });
  return projectNode(out);
}

export async function uncordonNode(c: KubeClients, ctx: OpContext, node: NodeView, jobName: string): Promise<NodeView> {
  if (node.cordonedBy !== jobName) {
    const by = node.cordonedBy === undefined ? 'not by a PatchJob' : `by job ${node.cordonedBy}`;
    throw new OutcomeError({ kind: OutcomeKind.Stalled, reason: 'NotCordonedByUs', message: `node ${node.name} was cordoned ${by}, not by ${jobName}; leaving it as it is` });
  }
  const body = {
    // null removes the key in a JSON merge patch.
    metadata: { resourceVersion: node.resourceVersion, annotations: { [CORDONED_BY_ANNOTATION]: null } },
    spec: { unschedulable: false },
  };
  const out = await kubeCall(ctx, `uncordon node ${node.name}`, (o) => c.core.patchNode({ name: node.name, body }, o), { patch: 'merge' });
  return projectNode(out);
}
