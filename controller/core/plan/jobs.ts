// The PatchJob a plan creates for a node: self-contained, with everything copied from the plan so
// an edit of the plan cannot change a job that is already running.
import type { PatchPlanSpec } from '../../../schemas/patchplan.js';
import { jobName } from './names.js';
import type { NodeInGroup } from './selection.js';
import type { NewJob } from './types.js';

export const PLAN_LABEL = 'kangalpatch.ozalp.dk/patchplan';
export const GROUP_LABEL = 'kangalpatch.ozalp.dk/group';
export const NODE_LABEL = 'kangalpatch.ozalp.dk/node';
/** The hop of a target.path: stepwise plan the job belongs to (its number, as in status.path). */
export const HOP_LABEL = 'kangalpatch.ozalp.dk/hop';

/** `hop`: the hop of a stepwise plan (spec.target is then that hop's target). */
export function newJob(plan: string, spec: PatchPlanSpec, { node, group }: NodeInGroup, hop?: number): NewJob {
  const { autoUpdate: _autoUpdate, path: _path, ...target } = spec.target;
  return {
    name: jobName(plan, node, hop),
    labels: {
      [PLAN_LABEL]: plan,
      [GROUP_LABEL]: group,
      [NODE_LABEL]: node,
      ...(hop === undefined ? {} : { [HOP_LABEL]: String(hop) }),
    },
    spec: {
      nodeName: node,
      patchPlanRef: plan,
      group,
      target,
      respectPDBs: spec.respectPDBs,
      evictUnmanagedPods: spec.evictUnmanagedPods,
      drainTimeout: spec.drainTimeout,
      drain: spec.drain,
      rebootTimeout: spec.rebootTimeout,
      rebootMode: spec.upgrade.rebootMode,
      rollback: spec.rollback,
      kubernetesUpgradeTimeout: spec.kubernetesUpgradeTimeout,
      talosConfig: spec.talosConfig,
      ...nodeHooksOf(spec),
      ...(spec.silences === undefined ? {} : { silences: spec.silences }),
      ...(spec.etcd === undefined ? {} : { etcd: spec.etcd }),
    },
  };
}

/** The plan's preNode and postNode hooks, as the job carries them (none: no field). */
function nodeHooksOf(spec: PatchPlanSpec): {
  hooks?: {
    preNode?: NonNullable<PatchPlanSpec['hooks']>['preNode'];
    postNode?: NonNullable<PatchPlanSpec['hooks']>['postNode'];
  };
} {
  const { preNode, postNode } = spec.hooks ?? {};
  if (preNode === undefined && postNode === undefined) return {};
  return { hooks: { ...(preNode ? { preNode } : {}), ...(postNode ? { postNode } : {}) } };
}
