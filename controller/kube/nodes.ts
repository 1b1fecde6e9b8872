// Cordon and uncordon: one merge patch each, guarded by the resourceVersion of the view we decided
// on, and marked with the job that cordoned it so we never uncordon a node somebody else cordoned.
//
// A Node's resourceVersion moves with every status post of its kubelet (Ready, images,
// conditions), which is exactly what happens around a reboot. So a conflict here is expected: the
// Node is read again and, while the marker and unschedulable still allow the write, written again
// at once. It never waits for the work queue's backoff, and never lengthens the time cordoned.
import type { OpContext } from '../runtime/context.js';
import { OutcomeError, OutcomeKind, isOutcomeError } from '../runtime/outcome.js';
import { kubeCall } from './call.js';
import type { KubeClients } from './clients.js';
import { projectNode } from './project.js';
import { CORDONED_BY_ANNOTATION, type NodeView } from './views.js';

/** Writes after a conflict, each on a fresh read; a Node that keeps changing faster is left to the queue's retry. */
const CONFLICT_RETRIES = 3;

export function cordonNode(c: KubeClients, ctx: OpContext, node: NodeView, jobName: string): Promise<NodeView> {
  return guardedNodeWrite(c, ctx, 'cordon', node, (n) => {
    // Claiming a node that is already cordoned (by a person or another job) would let us uncordon
    // it later; refuse instead. Our own cordon again is a no-op write, so retries are safe.
    if (n.unschedulable && n.cordonedBy !== jobName) {
      const by = n.cordonedBy === undefined ? 'someone else (no cordoned-by annotation)' : `job ${n.cordonedBy}`;
      throw new OutcomeError({ kind: OutcomeKind.Stalled, reason: 'CordonedByOther', message: `node ${n.name} is already cordoned by ${by}` });
    }
    return { metadata: { resourceVersion: n.resourceVersion, annotations: { [CORDONED_BY_ANNOTATION]: jobName } }, spec: { unschedulable: true } };
  });
}

export function uncordonNode(c: KubeClients, ctx: OpContext, node: NodeView, jobName: string): Promise<NodeView> {
  return guardedNodeWrite(c, ctx, 'uncordon', node, (n) => {
    if (n.cordonedBy !== jobName) {
      const by = n.cordonedBy === undefined ? 'not by a PatchJob' : `by job ${n.cordonedBy}`;
      throw new OutcomeError({ kind: OutcomeKind.Stalled, reason: 'NotCordonedByUs', message: `node ${n.name} was cordoned ${by}, not by ${jobName}; leaving it as it is` });
    }
    // null removes the key in a JSON merge patch.
    return { metadata: { resourceVersion: n.resourceVersion, annotations: { [CORDONED_BY_ANNOTATION]: null } }, spec: { unschedulable: false } };
  });
}

/** `bodyFor` checks the guard on a view (throwing when the write is no longer ours to make) and gives the patch for it. */
async function guardedNodeWrite(c: KubeClients, ctx: OpContext, verb: string, decidedOn: NodeView, bodyFor: (n: NodeView) => object): Promise<NodeView> {
  let node = decidedOn;
  for (let retry = 0; ; retry++) {
    const body = bodyFor(node);
    try {
      return projectNode(await kubeCall(ctx, `${verb} node ${node.name}`, (o) => c.core.patchNode({ name: node.name, body }, o), { patch: 'merge' }));
    } catch (err) {
      if (!(err instanceof OutcomeError && err.reason === 'Conflict') || retry >= CONFLICT_RETRIES) throw err;
      node = projectNode(await kubeCall(ctx, `read node ${node.name}`, (o) => c.core.readNode({ name: node.name }, o)));
    }
  }
}

/** The Node as the apiserver has it now (not the cache); undefined when it does not exist. */
export async function readNode(c: KubeClients, ctx: OpContext, name: string): Promise<NodeView | undefined> {
  try {
    return projectNode(await kubeCall(ctx, `read node ${name}`, (o) => c.core.readNode({ name }, o)));
  } catch (err) {
    if (isOutcomeError(err) && err.code === 404) return undefined;
    throw err;
  }
}
