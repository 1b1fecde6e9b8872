// PatchJob: created by the controller, one per node; tracks that node through the upgrade.
import { z } from 'zod';
import { conditions, duration, objectName, timestamp } from './primitives.js';
import { jobTarget } from './target.js';

export const PatchJobPhase = {
  Pending: 'Pending',
  Draining: 'Draining',
  Upgrading: 'Upgrading',
  Rebooting: 'Rebooting',
  UpgradingKubernetes: 'UpgradingKubernetes',
  ValidatingKubernetes: 'ValidatingKubernetes',
  Completed: 'Completed',
  Failed: 'Failed',
} as const;
export type PatchJobPhase = (typeof PatchJobPhase)[keyof typeof PatchJobPhase];

export const patchJobSpec = z.strictObject({
  nodeName: z.string().min(1).meta({ description: 'Node to patch.' }),
  patchPlanRef: objectName.meta({ description: 'Parent PatchPlan.' }),
  group: z.string().min(1).meta({ description: 'Group of the plan that scheduled the node; its Lease counts against that group.' }),
  target: jobTarget,
  // Copied from the plan when the job is created, so a plan edited mid-rollout cannot change the
  // rules under a job that is already running.
  respectPDBs: z.boolean().default(true),
  evictUnmanagedPods: z.boolean().default(false),
  drainTimeout: duration('5m').default('5m'),
  rebootTimeout: duration('10m').default('10m'),
  kubernetesUpgradeTimeout: duration('10m').default('10m'),
});

export const patchJobStatus = z.strictObject({
  phase: z.enum(PatchJobPhase).optional(),
  observedGeneration: z.int().min(0).optional(),
  reason: z.string().optional().meta({ description: 'Machine-readable cause of the current phase (CamelCase), e.g. DrainTimeout.' }),
  message: z.string().optional(),
  startTime: timestamp.optional(),
  completionTime: timestamp.optional(),
  phaseStartTime: timestamp.optional().meta({ description: 'When the current phase was entered.' }),
  deadline: timestamp.optional().meta({ description: 'When the current phase times out; persisted so a restarted controller keeps it.' }),
  currentTalosVersion: z.string().optional(),
  targetTalosVersion: z.string().optional(),
  currentKubernetesVersion: z.string().optional(),
  targetKubernetesVersion: z.string().optional(),
  installerImage: z.string().optional().meta({ description: 'Installer image used for this node.' }),
  initialBootID: z.string().optional().meta({ description: 'Boot ID before the upgrade; a changed boot ID proves the reboot.' }),
  currentBootID: z.string().optional().meta({ description: 'Boot ID last observed.' }),
  conditions: conditions.optional(),
});

export type PatchJobSpec = z.output<typeof patchJobSpec>;
export type PatchJobSpecInput = z.input<typeof patchJobSpec>;
export type PatchJobStatus = z.output<typeof patchJobStatus>;
