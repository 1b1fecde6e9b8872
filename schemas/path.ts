// Upgrade paths (target.path: stepwise): the hops a plan walks from the versions its nodes run to
// its target, as the preflight computed them (status.path). The planner is controller/core/paths.
import { z } from 'zod';
import { timestamp } from './primitives.js';

export const TargetPath = { Direct: 'direct', Stepwise: 'stepwise' } as const;
export type TargetPath = (typeof TargetPath)[keyof typeof TargetPath];

/** Talos has minors 1.0–1.14 today; 24 hops is every Talos and Kubernetes minor a plan could cross, with room. */
const MAX_PATH_HOPS = 24;

export const PathHopState = {
  Pending: 'Pending',
  InProgress: 'InProgress',
  Completed: 'Completed',
  Failed: 'Failed',
} as const;
export type PathHopState = (typeof PathHopState)[keyof typeof PathHopState];

const pathHopStatus = z.strictObject({
  number: z
    .int()
    .min(1)
    .max(999)
    .meta({ description: "The hop's number in the plan, from 1; its PatchJobs are named <plan>-h<number>-<node>." }),
  kind: z.enum(['talos', 'kubernetes']).meta({
    description:
      'What the hop moves: Talos OS on the nodes below it, or Kubernetes (control plane, kube-proxy, every kubelet).',
  }),
  version: z.string().max(64).meta({ description: 'The version the hop moves nodes to.' }),
  reason: z.string().max(500).meta({ description: 'Why this hop, and why here.' }),
  state: z.enum(PathHopState),
  startTime: timestamp.optional(),
  completionTime: timestamp.optional(),
});

export const planPathStatus = z
  .strictObject({
    computedTime: timestamp.meta({
      description: 'When the preflight computed the path from the versions the nodes ran.',
    }),
    hops: z
      .array(pathHopStatus)
      .max(MAX_PATH_HOPS)
      .meta({ description: 'Every hop in order; the first not Completed is the one rolling out.' }),
    changed: z.string().max(1000).optional().meta({
      description:
        'Why a path computed again (a new generation of the plan, a node added) differs from the hops it replaced.',
    }),
  })
  .meta({ description: 'The upgrade path of a target.path: stepwise plan, hop by hop.' });

export type PathHopStatus = z.output<typeof pathHopStatus>;
export type PlanPathStatus = z.output<typeof planPathStatus>;
