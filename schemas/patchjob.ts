// PatchJob: created by the controller, one per node; tracks that node through the upgrade.
import { z } from 'zod';
import { conditions, duration, MAX_TIMEOUT, objectName, timestamp } from './primitives.js';
import { jobTarget } from './target.js';
import { drainSettings, RebootMode, rebootMode, rollbackSettings, talosConfig } from './patchplan.js';
import { hookStatuses, nodeHooks } from './hooks.js';
import { jobSilence, silences } from './alerts.js';
import { etcdSettings, jobEtcdStatus } from './etcd.js';

export const PatchJobPhase = {
  Pending: 'Pending',
  Draining: 'Draining',
  Upgrading: 'Upgrading',
  Rebooting: 'Rebooting',
  RollingBack: 'RollingBack',
  UpgradingKubernetes: 'UpgradingKubernetes',
  ValidatingKubernetes: 'ValidatingKubernetes',
  Completed: 'Completed',
  Failed: 'Failed',
} as const;
export type PatchJobPhase = (typeof PatchJobPhase)[keyof typeof PatchJobPhase];

export const patchJobSpec = z.strictObject({
  nodeName: z.string().min(1).meta({ description: 'Node to patch.' }),
  patchPlanRef: objectName.meta({ description: 'Parent PatchPlan.' }),
  group: z
    .string()
    .min(1)
    .meta({ description: 'Group of the plan that scheduled the node; its Lease counts against that group.' }),
  target: jobTarget,
  // Copied from the plan when the job is created, so a plan edited mid-rollout cannot change the
  // rules under a job that is already running.
  respectPDBs: z.boolean().default(true),
  evictUnmanagedPods: z.boolean().default(false),
  drainTimeout: duration('5m', { max: MAX_TIMEOUT }).default('5m'),
  drain: drainSettings,
  rebootTimeout: duration('10m', { max: MAX_TIMEOUT }).default('10m'),
  rebootMode,
  rollback: rollbackSettings,
  kubernetesUpgradeTimeout: duration('10m', { max: MAX_TIMEOUT }).default('10m'),
  talosConfig: talosConfig.meta({
    description:
      "How the controller reaches this node over the Talos API (copied from the plan). Endpoints omitted: the node's InternalIP.",
  }),
  hooks: nodeHooks.optional().meta({ description: 'preNode and postNode hooks (copied from the plan).' }),
  silences: silences
    .optional()
    .meta({ description: 'Silences in Alertmanager while the node is disrupted (copied from the plan).' }),
  etcd: etcdSettings
    .optional()
    .meta({ description: "The etcd gate's settings (copied from the plan); control-plane nodes only." }),
});

/** Kubernetes components a job moves, in the order a control-plane node moves them (workers: kubelet only). */
export const KubernetesComponent = {
  APIServer: 'kube-apiserver',
  ControllerManager: 'kube-controller-manager',
  Scheduler: 'kube-scheduler',
  Kubelet: 'kubelet',
} as const;
export type KubernetesComponent = (typeof KubernetesComponent)[keyof typeof KubernetesComponent];

const UpgradeFlowName = { Legacy: 'legacy', Lifecycle: 'lifecycle' } as const;

export const patchJobStatus = z.strictObject({
  phase: z.enum(PatchJobPhase).optional(),
  observedGeneration: z.int().min(0).optional(),
  reason: z
    .string()
    .optional()
    .meta({ description: 'Machine-readable cause of the current phase (CamelCase), e.g. DrainTimeout.' }),
  message: z.string().optional(),
  startTime: timestamp.optional(),
  completionTime: timestamp.optional(),
  phaseStartTime: timestamp.optional().meta({ description: 'When the current phase was entered.' }),
  deadline: timestamp
    .optional()
    .meta({ description: 'When the current phase times out; persisted so a restarted controller keeps it.' }),
  initialTalosVersion: z
    .string()
    .optional()
    .meta({ description: 'Talos version the node ran when the job first read it (kept for reports).' }),
  initialKubernetesVersion: z
    .string()
    .optional()
    .meta({ description: 'kubelet version the node ran when its Kubernetes phases began (kept for reports).' }),
  currentTalosVersion: z.string().optional(),
  targetTalosVersion: z.string().optional(),
  currentKubernetesVersion: z.string().optional(),
  targetKubernetesVersion: z.string().optional(),
  installerImage: z.string().optional().meta({ description: 'Installer image used for this node.' }),
  initialBootID: z
    .string()
    .optional()
    .meta({ description: 'Boot ID before the upgrade; a changed boot ID proves the reboot.' }),
  currentBootID: z.string().optional().meta({ description: 'Boot ID last observed.' }),
  flow: z.enum(UpgradeFlowName).optional().meta({
    description:
      'legacy: MachineService.Upgrade (Talos < 1.13, the node reboots itself); lifecycle: ImageService.Pull, LifecycleService.Upgrade, Reboot.',
  }),
  schematic: z
    .string()
    .optional()
    .meta({ description: 'Image Factory schematic the installer image was resolved with.' }),
  imagePulledTime: timestamp
    .optional()
    .meta({ description: 'When the installer image was pulled onto the node (lifecycle flow, before the cordon).' }),
  installerAlreadyPulled: z.boolean().optional().meta({
    description:
      "The job's own pull found every layer of the installer already on the node (ALREADY_EXISTS): its plan pre-pulled it while an earlier round ran (spec.prePull), or the node kept it from before.",
  }),
  cordonedTime: timestamp.optional().meta({ description: 'When this job cordoned the node.' }),
  uncordonedTime: timestamp.optional().meta({ description: 'When this job uncordoned the node.' }),
  nodeLeftCordoned: z.boolean().optional().meta({
    description: 'The job ended with the node still cordoned by it (it was not Ready); see the NodeReleased condition.',
  }),
  blockingPDB: z.string().optional().meta({ description: 'PodDisruptionBudget that currently blocks the drain.' }),
  volumeDetachStartTime: timestamp.optional().meta({
    description:
      "When the drained node began waiting for its VolumeAttachments to go (drain.waitForVolumeDetach); the wait's deadline is then status.deadline.",
  }),
  podsLeftBySkipPods: z.array(z.string()).max(20).optional().meta({
    description:
      "Pods (namespace/name) the plan's drain.skipPods left running on the node through its upgrade (the first 20).",
  }),
  evictedPods: z.int().min(0).optional().meta({ description: 'Pods evicted (or deleted) by the drain so far.' }),
  upgradeRequestedTime: timestamp.optional().meta({
    description:
      'Recorded before the upgrade (legacy) or install (lifecycle) call is made, so a restarted controller knows it may have been sent.',
  }),
  upgradeAcknowledgedTime: timestamp.optional().meta({
    description: 'When Talos acknowledged the upgrade (legacy) or the install finished with exit code 0 (lifecycle).',
  }),
  rebootRequestedTime: timestamp
    .optional()
    .meta({ description: 'Recorded before the Reboot call is made (lifecycle flow).' }),
  rebootMode: z.enum(RebootMode).optional().meta({
    description:
      'The reboot mode sent with the upgrade (legacy) or the Reboot call (lifecycle), recorded with the request.',
  }),
  rollback: z
    .strictObject({
      decidedTime: timestamp.meta({
        description: 'When the job decided to roll the node back (recorded before the call).',
      }),
      failureReason: z.string().meta({ description: 'The check the node failed on the target, e.g. RebootTimeout.' }),
      failureMessage: z.string(),
      fromVersion: z.string().meta({ description: 'The target the node booted and failed on.' }),
      toVersion: z.string().meta({ description: 'The version it is rolled back to (the one it ran before).' }),
      bootID: z
        .string()
        .meta({ description: "The boot ID on the target; a different one proves the rollback's reboot." }),
      acknowledgedTime: timestamp.optional().meta({ description: 'When Talos acknowledged the Rollback call.' }),
    })
    .optional()
    .meta({
      description: 'spec.rollback.onFailure: the node-scoped rollback, once decided (a job rolls back at most once).',
    }),
  rebootAcknowledgedTime: timestamp
    .optional()
    .meta({ description: 'When Talos acknowledged the Reboot (lifecycle flow).' }),
  kubernetesPrePulled: z.array(z.string()).optional().meta({
    description:
      "Target images of this node's Kubernetes components pulled onto it before the first ApplyConfiguration (as `talosctl upgrade-k8s` pre-pulls), so an unpullable image fails the job with nothing changed.",
  }),
  kubernetesStep: z
    .strictObject({
      component: z.enum(KubernetesComponent),
      image: z.string().meta({ description: 'Image reference the component is moved to.' }),
      requestedTime: timestamp.meta({
        description: 'Recorded before ApplyConfiguration is sent, so a restarted controller knows it may have been.',
      }),
      appliedTime: timestamp.optional().meta({ description: "When the node's machine config carried the new image." }),
    })
    .optional()
    .meta({ description: 'The Kubernetes component being moved now (UpgradingKubernetes).' }),
  kubernetesUpgraded: z
    .array(z.enum(KubernetesComponent))
    .optional()
    .meta({ description: 'Components of this node already running the target, in the order they were moved.' }),
  slotReleasedTime: timestamp.optional().meta({
    description:
      'When the job gave its concurrency slot back to wait for the rest of the control plane; it moves again only once the plan gives it a slot.',
  }),
  hooks: hookStatuses.optional().meta({ description: 'The node hooks (preNode, postNode) and how they went.' }),
  silences: z.array(jobSilence).optional().meta({
    description: "The node's silences in Alertmanager: recorded before each is created, its ID before the cordon.",
  }),
  etcd: jobEtcdStatus.optional(),
  conditions: conditions.optional(),
});

export type PatchJobSpec = z.output<typeof patchJobSpec>;
export type PatchJobSpecInput = z.input<typeof patchJobSpec>;
export type PatchJobStatus = z.output<typeof patchJobStatus>;
