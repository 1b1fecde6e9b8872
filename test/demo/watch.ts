// The demo's live picture of one rollout (or of every plan of a cluster): client-node informers on
// PatchPlans, PatchJobs and Nodes (a lab client, not the product's adapter), calling back on every
// change. Snapshots for the stories' decisions; the status view's input (status-input.ts) to draw.
import {
  CoreV1Api,
  CustomObjectsApi,
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesObject,
  type ObjectCache,
  type V1Node,
} from '@kubernetes/client-node';
import type { StatusInput } from '../../controller/core/status-view/index.js';
import { jobInput, nodeInput, planInput, talosVersionOf, type Obj } from './status-input.js';

const GROUP = 'kangalpatch.ozalp.dk';
const VERSION = 'v1alpha1';

interface GroupProgress {
  name: string;
  total: number;
  running: number;
  completed: number;
  failed: number;
  pending: number;
}

export interface PlanSnapshot {
  name: string;
  paused: boolean;
  phase?: string;
  reason?: string;
  message?: string;
  nextScheduleTime?: string;
  totalNodes?: number;
  completedNodes?: number;
  failedNodes?: number;
  policyPaused: boolean;
  groups: GroupProgress[];
  /** An auto-update template's status.autoUpdate (what its last release check found). */
  autoUpdate?: AutoUpdateSnapshot;
}

interface AutoUpdateSnapshot {
  lastCheckTime?: string;
  nextCheckTime?: string;
  currentVersion?: string;
  latestVersion?: string;
  pendingVersion?: string;
  /** What holds pendingVersion back: MinReleaseAge or Promotion (an upstream soak). */
  pendingHeldBy?: string;
  lastProposedVersion?: string;
  lastProposalURL?: string;
  blockedBy?: string;
  lastError?: string;
  /** status.autoUpdate.promotion: what the upstream stages prove. */
  promotion?: PromotionSnapshot;
}

interface PromotionSnapshot {
  reason?: string;
  version?: string;
  eligibleTime?: string;
  stages: { cluster: string; state?: string; eligibleTime?: string; message?: string }[];
}

export interface JobSnapshot {
  name: string;
  /** The PatchPlan the job belongs to (spec.patchPlanRef). */
  plan: string;
  node: string;
  group: string;
  phase?: string;
  reason?: string;
  message?: string;
  startTime?: string;
  completionTime?: string;
  phaseStartTime?: string;
  cordonedTime?: string;
  uncordonedTime?: string;
}

export interface RolloutWatch {
  plan(): PlanSnapshot | undefined;
  jobs(): JobSnapshot[];
  /** The plan, its jobs and the nodes, as `kangal-patch status <plan>` reads them. */
  input(): StatusInput;
  stop(): void;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

function autoUpdateSnapshot(v: unknown): AutoUpdateSnapshot | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const a = v as Record<string, unknown>;
  const named = (x: unknown): string | undefined =>
    typeof x === 'object' && x !== null ? str((x as Record<string, unknown>).name) : undefined;
  const error = a.lastError as Record<string, unknown> | undefined;
  const promotion = promotionSnapshot(a.promotion);
  return {
    lastCheckTime: str(a.lastCheckTime),
    nextCheckTime: str(a.nextCheckTime),
    currentVersion: str(a.currentVersion),
    latestVersion: str(a.latestVersion),
    pendingVersion: str(a.pendingVersion),
    pendingHeldBy: str(a.pendingHeldBy),
    lastProposedVersion: str(a.lastProposedVersion),
    lastProposalURL: str(a.lastProposalURL),
    blockedBy: named(a.blockedBy),
    lastError: error && [str(error.reason), str(error.message)].filter(Boolean).join(': '),
    ...(promotion ? { promotion } : {}),
  };
}

function promotionSnapshot(v: unknown): PromotionSnapshot | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const p = v as Record<string, unknown>;
  const stages = Array.isArray(p.stages) ? (p.stages as Record<string, unknown>[]) : [];
  return {
    reason: str(p.reason),
    version: str(p.version),
    eligibleTime: str(p.eligibleTime),
    stages: stages.map((s) => ({
      cluster: String(s.cluster),
      state: str(s.state),
      eligibleTime: str(s.eligibleTime),
      message: str(s.message),
    })),
  };
}

function planSnapshot(o: Obj): PlanSnapshot {
  const s = o.status ?? {};
  const groups = Array.isArray(s.groups) ? (s.groups as Record<string, unknown>[]) : [];
  const autoUpdate = autoUpdateSnapshot(s.autoUpdate);
  return {
    name: o.metadata?.name ?? '',
    paused: o.spec?.paused === true,
    phase: str(s.phase),
    reason: str(s.reason),
    message: str(s.message),
    nextScheduleTime: str(s.nextScheduleTime),
    totalNodes: num(s.totalNodes),
    completedNodes: num(s.completedNodes),
    failedNodes: num(s.failedNodes),
    policyPaused: s.policyPause !== undefined,
    groups: groups.map((g) => ({
      name: String(g.name),
      total: num(g.total) ?? 0,
      running: num(g.running) ?? 0,
      completed: num(g.completed) ?? 0,
      failed: num(g.failed) ?? 0,
      pending: num(g.pending) ?? 0,
    })),
    ...(autoUpdate ? { autoUpdate } : {}),
  };
}

function jobSnapshot(o: Obj): JobSnapshot {
  const s = o.status ?? {};
  return {
    name: o.metadata?.name ?? '',
    plan: str(o.spec?.patchPlanRef) ?? '?',
    node: str(o.spec?.nodeName) ?? '?',
    group: str(o.spec?.group) ?? '?',
    phase: str(s.phase),
    reason: str(s.reason),
    message: str(s.message),
    startTime: str(s.startTime),
    completionTime: str(s.completionTime),
    phaseStartTime: str(s.phaseStartTime),
    cordonedTime: str(s.cordonedTime),
    uncordonedTime: str(s.uncordonedTime),
  };
}

type Cached<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

/** Informers on the PatchPlans, the PatchJobs `jobSelector` picks (all when undefined) and the Nodes; `onChange` runs after every event. Resolves once every list is synced. */
async function startInformers(
  kc: KubeConfig,
  jobSelector: string | undefined,
  onChange: () => void,
): Promise<{ plans: Cached<Obj>; jobs: Cached<Obj>; nodes: Cached<V1Node>; stop: () => void }> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  let stopped = false;
  const plans = makeInformer<Obj>(
    kc,
    `/apis/${GROUP}/${VERSION}/patchplans`,
    () => custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: 'patchplans' }) as never,
  );
  const jobs = makeInformer<Obj>(
    kc,
    `/apis/${GROUP}/${VERSION}/patchjobs`,
    () =>
      custom.listClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'patchjobs',
        ...(jobSelector ? { labelSelector: jobSelector } : {}),
      }) as never,
    jobSelector,
  );
  const nodes = makeInformer<V1Node>(kc, '/api/v1/nodes', () => core.listNode());
  const informers: Informer<Obj | V1Node>[] = [plans, jobs, nodes];
  for (const informer of informers) {
    for (const event of ['add', 'update', 'delete'] as const) informer.on(event, () => onChange());
    // client-node 1.4 informers stop on errors (a watch timeout, an apiserver restart): start again.
    informer.on('error', () => {
      if (!stopped) setTimeout(() => void informer.start().catch(() => undefined), 500);
    });
  }
  await Promise.all(informers.map((i) => i.start()));
  return {
    plans,
    jobs,
    nodes,
    stop: () => {
      stopped = true;
      for (const i of informers) void i.stop();
    },
  };
}

const byNode = (a: JobSnapshot, b: JobSnapshot): number => a.node.localeCompare(b.node, 'en', { numeric: true });

/** Watches plan `planName` and its PatchJobs; `onChange` runs after every event. Resolves once both lists are synced. */
export async function watchRollout(kc: KubeConfig, planName: string, onChange: () => void): Promise<RolloutWatch> {
  const { plans, jobs, nodes, stop } = await startInformers(kc, `${GROUP}/patchplan=${planName}`, onChange);
  return {
    plan: () => {
      const o = plans.list().find((p) => p.metadata?.name === planName);
      return o && planSnapshot(o);
    },
    jobs: () => jobs.list().map(jobSnapshot).sort(byNode),
    input: () => ({
      plans: plans.list().map(planInput),
      jobs: jobs.list().map(jobInput),
      nodes: nodes.list().map(nodeInput),
      names: [planName],
    }),
    stop,
  };
}

export interface ClusterWatch {
  /** Every PatchPlan of the cluster, by creation (a template before the child plans it proposed). */
  plans(): PlanSnapshot[];
  /** The PatchJobs of plan `name`. */
  jobs(name: string): JobSnapshot[];
  /** Every plan (newest first when drawn), job and node, as `kangal-patch status` reads them. */
  input(): StatusInput;
  stop(): void;
}

/** Watches every PatchPlan and PatchJob of a cluster; `onChange` runs after every event. Resolves once both lists are synced. */
export async function watchCluster(kc: KubeConfig, onChange: () => void): Promise<ClusterWatch> {
  const { plans, jobs, nodes, stop } = await startInformers(kc, undefined, onChange);
  // A Date once client-node deserialized it, the API's string otherwise: both parse.
  const created = (o: Obj): number => new Date(o.metadata?.creationTimestamp ?? 0).getTime();
  return {
    plans: () =>
      [...plans.list()]
        .sort((a, b) => created(a) - created(b) || (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
        .map(planSnapshot),
    jobs: (name) =>
      jobs
        .list()
        .map(jobSnapshot)
        .filter((j) => j.plan === name)
        .sort(byNode),
    input: () => ({
      plans: plans.list().map(planInput),
      jobs: jobs.list().map(jobInput),
      nodes: nodes.list().map(nodeInput),
      names: [],
    }),
    stop,
  };
}

interface NodeVersions {
  talos: string;
  kubernetes: string;
}

export type NodeVersionsByName = Map<string, NodeVersions>;

/** Each Node's Talos version (from its OS image) and kubelet version. */
export async function nodeVersions(kc: KubeConfig): Promise<NodeVersionsByName> {
  const nodes = await kc.makeApiClient(CoreV1Api).listNode();
  return new Map(nodes.items.map((n) => [n.metadata?.name ?? '', versionsOf(n)]));
}

/** A Node's Talos version (its whole OS image when that names none) and kubelet version. */
function versionsOf(n: V1Node): NodeVersions {
  const info = n.status?.nodeInfo;
  return {
    talos: talosVersionOf(info?.osImage) ?? info?.osImage ?? '?',
    kubernetes: info?.kubeletVersion ?? '?',
  };
}
