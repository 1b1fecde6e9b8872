// PatchPlan: what people commit to the plans repository (spec), and what the controller reports (status).
import { z } from 'zod';
import { etcdSettings, planEtcdStatus } from './etcd.js';
import { planPathStatus } from './path.js';
import { API_VERSION, Kind } from './api.js';
import {
  calendarDate,
  conditions,
  dayName,
  duration,
  endpoint,
  labelKey,
  labelSelector,
  labelValue,
  MAX_DELAY_BETWEEN_NODES,
  MAX_RETENTION,
  MAX_TIMEOUT,
  namespaceName,
  objectName,
  secretName,
  timeOfDay,
  timeZone,
  timestamp,
  version,
} from './primitives.js';
import { withRules } from './cross-field.js';
import { DRAIN_RULES, GROUP_RULES, SPEC_RULES, WINDOW_RULES, uniqueOrderRule } from './rules.js';
import { planTarget } from './target.js';
import { healthChecks, healthCheckWait } from './health.js';
import { hookStatuses, planHooks } from './hooks.js';
import { alertGate, alertWait, silences } from './alerts.js';

const always = { when: () => true };

const FailurePolicyType = { Halt: 'Halt', Pause: 'Pause' } as const;
type FailurePolicyType = (typeof FailurePolicyType)[keyof typeof FailurePolicyType];

// Group names end up in Lease labels, so they must be valid label values.
const groupName = z
  .string()
  .max(63, { error: 'group names must be at most 63 characters' })
  .regex(/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/, {
    error: 'group names must be letters, digits, "-", "_" and ".", starting and ending with a letter or digit',
  });

const groupSpec = z.strictObject({
  selector: labelSelector.optional().meta({
    description:
      'Filters the nodes picked by spec.nodeSelector. Required for custom groups, not allowed on controlPlane and workers.',
  }),
  concurrency: z
    .int({ error: (iss) => (iss.input === undefined ? undefined : 'must be a whole number') })
    .min(1, { error: 'must be at least 1' })
    .default(1)
    .meta({ description: 'Nodes of this group patched at the same time.' }),
});

const MAX_GROUPS = 32;
const groups = withRules(
  z
    .record(groupName, groupSpec)
    .refine((g) => Object.keys(g).length <= MAX_GROUPS, { error: `must declare at most ${MAX_GROUPS} groups` }),
  GROUP_RULES,
)
  .default({})
  .meta({
    maxProperties: MAX_GROUPS,
    description:
      'Rollout groups by name. controlPlane and workers are built in and only need declaring to set their concurrency.',
  });

const strategy = z
  .strictObject({
    order: z
      .array(z.string().max(63, { error: 'group names must be at most 63 characters' }))
      .superRefine(uniqueOrderRule, always)
      .min(1, { error: 'must list at least one group' })
      .max(MAX_GROUPS + 2, { error: `must list at most ${MAX_GROUPS + 2} groups` })
      .default(['controlPlane', 'workers'])
      .meta({
        'x-kubernetes-list-type': 'set',
        description:
          'Groups from first to last. A group starts once every earlier group finished; a node matching several groups is patched by the first; nodes in no listed group are not patched.',
      }),
  })
  .prefault({})
  .meta({ description: 'Rollout order of the groups.' });

const failurePolicy = z
  .strictObject({
    type: z.enum(FailurePolicyType).default('Halt').meta({
      description:
        'Halt marks the plan Failed; Pause sets spec.paused so failures can be inspected and the plan resumed.',
    }),
    maxFailures: z
      .int()
      .min(0, { error: 'must be at least 0' })
      .default(1)
      .meta({ description: 'Failed nodes that trigger the policy (0 is treated as 1).' }),
  })
  .prefault({})
  .meta({ description: 'What happens when nodes fail. Running nodes are never interrupted.' });

const retention = z
  .strictObject({
    history: duration('168h', { max: MAX_RETENTION })
      .default('168h')
      .meta({ description: 'How long finished PatchJobs are kept after the plan finished.' }),
  })
  .prefault({})
  .meta({ description: 'How long finished rollout history is kept.' });

export const maintenanceWindow = withRules(
  z.strictObject({
    days: z.array(dayName).optional().meta({
      description: 'Days the window applies to: full or 3-letter names, any case, or Any. Omitted: every day.',
    }),
    startTime: timeOfDay.meta({
      description:
        'Start, "HH:MM" in maintenance.timezone. A time skipped by a DST change opens the window when the clock jumps; a repeated time means its first occurrence.',
    }),
    endTime: timeOfDay.meta({
      description:
        'End, "HH:MM" in maintenance.timezone. Earlier than startTime means the window spans midnight (into the next day).',
    }),
    disabled: z.boolean().default(false).meta({ description: 'Temporarily disables this window.' }),
  }),
  WINDOW_RULES,
);

const MAX_WINDOWS = 32;
export const maintenance = z
  .strictObject({
    timezone: timeZone.optional().meta({
      description: 'IANA time zone of windows and excludeDates, such as "Europe/Berlin". Omitted: UTC.',
    }),
    excludeDates: z.array(calendarDate).optional().meta({
      description:
        'Dates (YYYY-MM-DD, in timezone) on which nothing is patched: whole days are cut out of every window, also one that started the evening before.',
    }),
    windows: z
      .array(maintenanceWindow)
      .max(MAX_WINDOWS, { error: `must list at most ${MAX_WINDOWS} windows` })
      .optional()
      .meta({
        description:
          'Time windows in which patching is allowed. A window applies to the day it starts on. None enabled: any time outside excludeDates.',
      }),
  })
  .meta({ description: 'Restricts when nodes are scheduled.' });

const secretRef = z
  .strictObject({
    name: secretName.meta({ description: 'Secret with keys ca.crt, tls.crt and tls.key.' }),
    namespace: namespaceName
      .optional()
      .meta({ description: 'Must be the operator namespace when given (default kangal-patch).' }),
  })
  .meta({ description: 'Secret holding the Talos client credentials.' });

export const talosConfig = z
  .strictObject({
    endpoints: z
      .array(endpoint)
      .min(1, { error: 'must list at least one endpoint when given' })
      .optional()
      .meta({ description: 'Talos API endpoints ("host:port"); requests reach each node through them.' }),
    secretRef,
  })
  .meta({ description: 'How the controller reaches the Talos API.' });

export const RebootMode = { Default: 'default', Powercycle: 'powercycle', Force: 'force' } as const;
export type RebootMode = (typeof RebootMode)[keyof typeof RebootMode];

export const rebootMode = z.enum(RebootMode).default('default').meta({
  description:
    'How each node reboots into the new version: default (graceful stop, then kexec where the node supports it), powercycle (graceful stop, no kexec: for hardware where kexec hangs), force (no graceful stop; needs the lifecycle flow, Talos >= 1.13). Sent with the legacy Upgrade request or the Reboot call.',
});

export const drainSettings = withRules(
  z.strictObject({
    skipPods: labelSelector.optional().meta({
      description:
        'Pods matching this selector are not evicted and do not hold the drain (CSI node plugins, local-volume pods that must stay until their volume unmounts). Must name at least one label.',
    }),
    waitForVolumeDetach: z.boolean().default(false).meta({
      description:
        'After the drain, wait until no VolumeAttachment names the node before the upgrade and reboot (Longhorn, Ceph RBD: a volume left attached to a rebooting node gets stuck). Bounded by volumeDetachTimeout.',
    }),
    volumeDetachTimeout: duration('5m', { max: MAX_TIMEOUT })
      .default('5m')
      .meta({ description: "Maximum wait for the node's VolumeAttachments to go (waitForVolumeDetach)." }),
  }),
  DRAIN_RULES,
)
  .prefault({})
  .meta({ description: 'How each node is drained, beyond respectPDBs, evictUnmanagedPods and drainTimeout.' });

export const rollbackSettings = z
  .strictObject({
    onFailure: z.boolean().default(false).meta({
      description:
        'When a node boots the target but then fails its checks (not Ready by rebootTimeout), roll that node alone back to the version it ran (MachineService.Rollback), wait until it is Ready on it, and end its job Failed with reason RolledBack; the failure policy applies as for any failure. Never twice, never on a node whose previous version is unknown, and on a control-plane node only when both versions run the same etcd minor.',
    }),
  })
  .prefault({})
  .meta({ description: 'Node-scoped rollback of a node that fails after its upgrade.' });

const upgradeSettings = z
  .strictObject({ rebootMode })
  .prefault({})
  .meta({ description: 'How the Talos upgrade is carried out on each node.' });

export const patchPlanSpec = withRules(
  z.strictObject({
    target: planTarget,
    nodeSelector: labelSelector
      .optional()
      .meta({ description: 'The complete population of nodes the plan may patch. Omitted: all nodes.' }),
    groups,
    strategy,
    failurePolicy,
    retention,
    delayBetweenNodes: duration('300s', { max: MAX_DELAY_BETWEEN_NODES })
      .default('5m')
      .meta({ description: 'Minimum time between two scheduling rounds.' }),
    respectPDBs: z.boolean().default(true).meta({ description: 'Respect PodDisruptionBudgets while draining.' }),
    evictUnmanagedPods: z.boolean().default(false).meta({
      description: 'Evict pods no controller manages (they are not recreated). When false such a pod blocks the drain.',
    }),
    drainTimeout: duration('5m', { max: MAX_TIMEOUT })
      .default('5m')
      .meta({ description: 'Maximum time for a node drain.' }),
    drain: drainSettings,
    upgrade: upgradeSettings,
    rollback: rollbackSettings,
    rebootTimeout: duration('10m', { max: MAX_TIMEOUT })
      .default('10m')
      .meta({ description: 'Maximum time for a node to come back on the target version.' }),
    kubernetesUpgradeTimeout: duration('10m', { max: MAX_TIMEOUT }).default('10m').meta({
      description: 'Maximum time for the kubelet and control plane to report the target Kubernetes version.',
    }),
    prePull: z.boolean().default(true).meta({
      description:
        "Pull the installer on the next round's nodes (at most concurrency of them, in the group whose turn it is) while the current round drains and reboots, so the pull leaves the critical path. Talos >= 1.13 only (lifecycle flow); nodes on the legacy flow pull when their turn comes. A failed pre-pull is no node failure: the node's own job pulls again.",
    }),
    paused: z.boolean().default(false).meta({ description: 'Stop scheduling new nodes until set back to false.' }),
    cancelled: z
      .boolean()
      .default(false)
      .meta({ description: 'Stop scheduling new nodes; the plan moves to Cancelled.' }),
    maintenance: maintenance.optional(),
    healthChecks: healthChecks.optional(),
    hooks: planHooks.optional(),
    alertGate: alertGate.optional(),
    silences: silences.optional(),
    etcd: etcdSettings.optional().meta({
      description: 'Tuning of the etcd gate of control-plane nodes (defaults: timeout 15m, maxLagEntries 1000).',
    }),
    talosConfig,
  }),
  SPEC_RULES,
).meta({ description: 'Desired rollout.' });

/** metadata accepted in a plan file: the controller adds its own annotations when applying. */
const planMetadata = z.strictObject({
  name: objectName,
  labels: z.record(labelKey, labelValue).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});

/** A PatchPlan document as committed to Git (no status). */
export const patchPlanDocument = z.strictObject({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(Kind.PatchPlan),
  metadata: planMetadata,
  spec: patchPlanSpec,
});

// ---- status ----

export const PatchPlanPhase = {
  Pending: 'Pending',
  Preflighting: 'Preflighting',
  InProgress: 'InProgress',
  Paused: 'Paused',
  Cancelled: 'Cancelled',
  Completed: 'Completed',
  Failed: 'Failed',
  Watching: 'Watching',
} as const;
export type PatchPlanPhase = (typeof PatchPlanPhase)[keyof typeof PatchPlanPhase];

const count = z.int().min(0);

const groupStatus = z.strictObject({
  name: z.string().meta({ description: 'Group name.' }),
  concurrency: count.meta({ description: 'Configured concurrency.' }),
  active: count.meta({ description: 'Concurrency slots (Leases) currently held.' }),
  total: count.meta({ description: 'Nodes this group schedules.' }),
  pending: count.meta({ description: 'Nodes without a PatchJob yet.' }),
  running: count.meta({ description: 'Nodes whose PatchJob has not finished.' }),
  completed: count.meta({ description: 'Nodes patched successfully.' }),
  failed: count.meta({ description: 'Nodes whose PatchJob failed.' }),
  held: count.optional().meta({
    description:
      "Nodes without a PatchJob held by their Node's kangalpatch.ozalp.dk/hold annotation: not scheduled, the group waits for them.",
  }),
  skipped: count
    .optional()
    .meta({ description: 'Nodes without a PatchJob whose hold annotation says skip: done without being patched.' }),
});

/** status.held and status.skipped name at most this many nodes (the counts are exact). */
export const MAX_NAMED_HOLDS = 50;

const nodeHoldStatus = z.strictObject({
  node: z.string(),
  reason: z.string().meta({
    description: 'The reason the annotation gives (after skip, for a skipped node); empty when it gives none.',
  }),
});

export const PromotionStageState = {
  Eligible: 'Eligible',
  Soaking: 'Soaking',
  InProgress: 'InProgress',
  NotRolledOut: 'NotRolledOut',
  Failed: 'Failed',
  SoakInterrupted: 'SoakInterrupted',
  LaterFailure: 'LaterFailure',
  RolledBack: 'RolledBack',
  EvidenceRefused: 'EvidenceRefused',
} as const;
export type PromotionStageState = (typeof PromotionStageState)[keyof typeof PromotionStageState];

const promotionStageStatus = z.strictObject({
  cluster: z.string().meta({ description: 'The upstream cluster.' }),
  selector: z.string().optional().meta({ description: 'template <name> or plan <name>, when the stage names one.' }),
  state: z.enum(PromotionStageState).meta({ description: 'Where the version stands on this stage.' }),
  report: z
    .string()
    .optional()
    .meta({ description: 'The report file that is the evidence (status/<cluster>/<plan>.yaml) at the loaded commit.' }),
  completionTime: timestamp.optional().meta({ description: 'When the upstream rollout of the version completed.' }),
  eligibleTime: timestamp
    .optional()
    .meta({ description: 'completionTime + soak: when this stage stops holding the version back.' }),
  message: z.string().meta({ description: 'One sentence: what this stage waits for, or what went wrong.' }),
});

/** rejectedReports lists at most this many files: a plans repository could hold thousands. */
export const MAX_REJECTED_REPORTS = 20;

export const promotionStatus = z.strictObject({
  reason: z.string().meta({
    description:
      'WaitingForPromotion while a newer allowed release is held back by upstream stages; Promoted when the proposal is proven; NothingToPromote otherwise.',
  }),
  version: version('v1.12.1')
    .optional()
    .meta({ description: 'The newest allowed release the stages were evaluated for.' }),
  eligibleTime: timestamp
    .optional()
    .meta({ description: 'When it becomes eligible if nothing changes upstream (the template wakes exactly then).' }),
  commit: z.string().optional().meta({ description: 'Git commit of the plans repository the reports were read from.' }),
  stages: z
    .array(promotionStageStatus)
    .optional()
    .meta({ description: 'Each upstream stage and its state for version.' }),
  rejectedReports: z
    .array(
      z.strictObject({
        file: z.string(),
        reason: z
          .string()
          .meta({ description: 'Why it is not evidence (e.g. the signature does not verify with the cluster key).' }),
      }),
    )
    .max(MAX_REJECTED_REPORTS)
    .optional()
    .meta({
      description: `Upstream report files that are not accepted as evidence, with the reason: the first ${MAX_REJECTED_REPORTS} (moreRejectedReports counts the rest).`,
    }),
  moreRejectedReports: z
    .int()
    .min(1)
    .optional()
    .meta({ description: 'How many more report files were rejected than rejectedReports lists ("and N more").' }),
  upstreamSequence: z.record(z.string(), z.int().min(1).max(Number.MAX_SAFE_INTEGER)).optional().meta({
    description:
      'Upstream cluster → the highest sequence of its signed report index (status/<cluster>/index.yaml) seen so far; an older index is refused as a replay. Written before evidence that depends on it is acted on.',
  }),
});

const autoUpdateStatus = z.strictObject({
  lastCheckTime: timestamp.optional().meta({ description: 'When releases were last evaluated.' }),
  nextCheckTime: timestamp.optional().meta({
    description: 'When the template looks again: the next check, or earlier when a pending release becomes eligible.',
  }),
  currentVersion: version('v1.12.1').optional().meta({ description: 'Lowest Talos version on the selected nodes.' }),
  latestVersion: version('v1.12.1').optional().meta({ description: 'Newest stable upstream release.' }),
  pendingVersion: version('v1.12.1').optional().meta({
    description:
      'Newer release not proposable yet: younger than minReleaseAge, or soaking on an upstream stage (pendingHeldBy says which).',
  }),
  pendingEligibleTime: timestamp
    .optional()
    .meta({ description: 'When pendingVersion becomes eligible to be proposed.' }),
  pendingHeldBy: z.enum(['MinReleaseAge', 'Promotion']).optional().meta({
    description:
      'What holds pendingVersion back until pendingEligibleTime: its age, or the soak of an upstream stage (status.autoUpdate.promotion).',
  }),
  lastProposedVersion: version('v1.12.1')
    .optional()
    .meta({ description: 'Version of the most recent proposal pull request.' }),
  lastProposalURL: z.string().optional().meta({ description: 'URL of the most recent proposal pull request.' }),
  skippedVersions: z.array(version('v1.12.1')).optional().meta({
    'x-kubernetes-list-type': 'set',
    description: 'Versions whose proposal was closed without merge: never proposed again.',
  }),
  blockedBy: z
    .strictObject({
      name: z.string().meta({ description: 'The child PatchPlan.' }),
      version: z.string().meta({ description: 'Its target Talos version.' }),
      phase: z.string().optional().meta({ description: 'Its phase (anything but Completed blocks).' }),
    })
    .optional()
    .meta({ description: 'The child plan that holds new proposals back until it is Completed.' }),
  lastError: z
    .strictObject({
      reason: z.string().meta({ description: 'CamelCase cause, e.g. RateLimited, NetworkError, Unauthorized.' }),
      message: z.string(),
      time: timestamp,
    })
    .optional()
    .meta({ description: 'The last failed releases check or proposal (cleared by the next success).' }),
  lastCreatedPlan: z.string().optional().meta({ description: 'Most recent child PatchPlan.' }),
  promotion: promotionStatus
    .optional()
    .meta({ description: 'Promotion across clusters (autoUpdate.promotion): what the upstream stages prove.' }),
});

const prePullStatus = z.strictObject({
  node: z.string().meta({ description: 'The node the installer is pulled on.' }),
  image: z.string().meta({ description: "The installer image, as the node's PatchJob will resolve it." }),
  startTime: timestamp.meta({ description: 'When the pre-pull was started (ImageService.Pull).' }),
  pulledTime: timestamp.optional().meta({ description: 'When the image was on the node.' }),
  failedTime: timestamp
    .optional()
    .meta({ description: "When the pre-pull failed; it is not retried: the node's own job pulls again." }),
  error: z.string().optional().meta({ description: 'Why the pre-pull failed.' }),
});

export const patchPlanStatus = z.strictObject({
  phase: z.enum(PatchPlanPhase).optional(),
  observedGeneration: z.int().min(0).optional(),
  observedSourceCommit: z.string().optional().meta({ description: 'Git commit the applied spec came from.' }),
  targetTalosVersion: z.string().optional(),
  targetKubernetesVersion: z.string().optional(),
  kubeProxyUpgraded: z
    .boolean()
    .optional()
    .meta({ description: 'Whether kube-proxy runs the target Kubernetes version.' }),
  kubeProxy: z
    .strictObject({
      image: z.string().meta({ description: 'kube-proxy image set in the control-plane machine configs.' }),
      configuredNodes: z
        .array(z.string())
        .meta({ description: 'Control-plane nodes whose machine config carries the image.' }),
      startTime: timestamp,
      deadline: timestamp.meta({
        description: 'When waiting for the kube-proxy DaemonSet rollout gives up (kubernetesUpgradeTimeout).',
      }),
    })
    .optional()
    .meta({ description: 'The kube-proxy step, between the control plane and the workers.' }),
  totalNodes: count.optional(),
  pendingNodes: count.optional(),
  runningNodes: count.optional(),
  completedNodes: count.optional(),
  failedNodes: count.optional(),
  groups: z
    .array(groupStatus)
    .optional()
    .meta({
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      description: 'Progress per group, in strategy.order.',
    }),
  heldNodes: count
    .optional()
    .meta({ description: 'Nodes held by the kangalpatch.ozalp.dk/hold annotation (not scheduled while it is there).' }),
  skippedNodes: count.optional().meta({ description: 'Nodes skipped by a hold annotation that says skip.' }),
  held: z
    .array(nodeHoldStatus)
    .max(MAX_NAMED_HOLDS)
    .optional()
    .meta({ description: `The held nodes and their reasons, in scheduling order (the first ${MAX_NAMED_HOLDS}).` }),
  skipped: z
    .array(nodeHoldStatus)
    .max(MAX_NAMED_HOLDS)
    .optional()
    .meta({ description: `The skipped nodes and their reasons (the first ${MAX_NAMED_HOLDS}).` }),
  failuresAcknowledged: count
    .optional()
    .meta({ description: 'Failures accepted by resuming a plan the Pause policy paused.' }),
  policyPause: z
    .strictObject({
      failures: count.meta({ description: 'Failed nodes when the policy paused the plan.' }),
      generation: z
        .int()
        .min(0)
        .meta({ description: 'Plan generation after the pause; a later change that sets paused: false resumes.' }),
      time: timestamp,
      reason: z
        .string()
        .optional()
        .meta({ description: 'Why the policy paused: PausedByFailurePolicy (failed nodes) or HealthCheckTimeout.' }),
    })
    .optional()
    .meta({
      description:
        'Set while the Pause failure policy holds the plan; it stays paused until spec.paused is changed back to false.',
    }),
  healthCheckWait: healthCheckWait.optional(),
  hooks: hookStatuses.optional().meta({ description: 'The plan hooks (prePlan, postPlan) and how they went.' }),
  alertWait: alertWait.optional(),
  etcd: planEtcdStatus.optional(),
  path: planPathStatus.optional(),
  prePulls: z
    .array(prePullStatus)
    .optional()
    .meta({
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['node'],
      description:
        "Installer pre-pulls on nodes still waiting for their turn (spec.prePull); an entry goes once the node's PatchJob exists (its status.installerAlreadyPulled tells whether the pull found the image there).",
    }),
  reason: z
    .string()
    .optional()
    .meta({ description: 'Machine-readable cause of the current state (CamelCase), e.g. OutsideMaintenanceWindow.' }),
  nextScheduleTime: timestamp
    .optional()
    .meta({ description: 'When the plan will next schedule nodes, while it waits (window, delay).' }),
  historyPurged: z
    .boolean()
    .optional()
    .meta({ description: 'Finished PatchJobs were removed after retention.history; the plan is frozen.' }),
  autoUpdate: autoUpdateStatus.optional(),
  lastNodeScheduledAt: timestamp.optional(),
  startTime: timestamp.optional(),
  completionTime: timestamp.optional(),
  message: z.string().optional(),
  conditions: conditions.optional(),
});

export type PatchPlanSpec = z.output<typeof patchPlanSpec>;
export type PatchPlanDocument = z.output<typeof patchPlanDocument>;
export type PatchPlanStatus = z.output<typeof patchPlanStatus>;
export type GroupStatus = z.output<typeof groupStatus>;
export type PrePullStatus = z.output<typeof prePullStatus>;
export type AutoUpdateStatus = z.output<typeof autoUpdateStatus>;
export type PromotionStatus = z.output<typeof promotionStatus>;
export type PromotionStageStatus = z.output<typeof promotionStageStatus>;
