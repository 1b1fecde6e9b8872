// Cordon and uncordon: one merge patch each, guarded by the resourceVersion of the view we decided
// on, and marked with the job that cordoned it so we never uncordon a node somebody else cordoned
// (core/job/cordon-write decides whether a write is ours to make and still needed).
//
// A Node's resourceVersion moves with every status post of its kubelet (Ready, images,
// conditions), which is exactly what happens around a reboot. So a conflict here is expected: the
// Node is read again and, while the marker and unschedulable still allow the write, written again
// at once. It never waits for the work queue's backoff, and never lengthens the time cordoned.
import { cordonWrite } from '../core/job/cordon-write.js';
import type { OpContext } from '../runtime/context.js';
import { OutcomeError, OutcomeKind, isOutcomeError } from '../runtime/outcome.js';
import { kubeCall } from './call.js';
import type { KubeClients } from './clients.js';
import { projectNode } from './project.js';
import { CORDONED_BY_ANNOTATION, type NodeView } from './views.js';

/** Writes after a conflict, each on a fresh read; a Node that keeps changing faster is left to the queue's retry. */
const CONFLICT_RETRIES = 3;

export function cordonNode(c: KubeClients, ctx: OpContext, node: NodeView, jobName: string): Promise<NodeView> {
  return guardedNodeWrite(c, ctx, { verb: 'cordon', decidedOn: node, jobName });
}

export function uncordonNode(c: KubeClients, ctx: OpContext, node: NodeView, jobName: string): Promise<NodeView> {
  return guardedNodeWrite(c, ctx, { verb: 'uncordon', decidedOn: node, jobName });
}

/** A cordon or uncordon for a job, as decided on one view of the Node. */
interface NodeWrite {
  verb: 'cordon' | 'uncordon';
  decidedOn: NodeView;
  jobName: string;
}

/**
 * Core decides on each view (the one the job decided on, then each fresh read after a conflict)
 * whether the write is still ours to make and still changes something; a node already as wanted
 * gets no patch (a conflict's fresh read often shows our own earlier write).
 */
async function guardedNodeWrite(
  c: KubeClients,
  ctx: OpContext,
  { verb, decidedOn, jobName }: NodeWrite,
): Promise<NodeView> {
  let node = decidedOn;
  for (let retry = 0; ; retry++) {
    const decision = cordonWrite(verb, node, jobName);
    if (decision.write === 'none') return node;
    if (decision.write === 'refuse')
      throw new OutcomeError({ kind: OutcomeKind.Stalled, reason: decision.reason, message: decision.message });
    // null removes the key in a JSON merge patch.
    const body = {
      metadata: {
        resourceVersion: node.resourceVersion,
        annotations: { [CORDONED_BY_ANNOTATION]: decision.cordonedBy },
      },
      spec: { unschedulable: decision.unschedulable },
    };
    try {
      return projectNode(
        await kubeCall(ctx, `${verb} node ${node.name}`, (o) => c.core.patchNode({ name: node.name, body }, o), {
          patch: 'merge',
        }),
      );
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
