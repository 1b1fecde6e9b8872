// The informers the controller runs, each on its projection. Pods are not cached cluster-wide (at
// 5,000 nodes that was 50,000 pods, most of the heap, and every pod event of the fleet): only the
// control plane's static pods, the hook Jobs' pods, and the pods of the nodes being drained
// (node-pods.ts, opened by the job wiring).
import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../runtime/clock.js';
import type { LogFn } from '../runtime/log.js';
import { API_GROUP, API_VERSION_NAME } from '../../schemas/api.js';
import type { KubeClients } from './clients.js';
import {
  createInformer,
  type InformerOptions,
  type InformerSource,
  type KubeInformer,
  type ListPage,
} from './informer.js';
import { PATCHJOB_PLURAL } from './patchjobs.js';
import { PATCHPLAN_PLURAL, projectPlan, type RawPatchPlan } from './patchplans.js';
import { projectJob, projectLease, projectNode, projectPod, type RawPatchJob } from './project.js';
import type { V1DaemonSet, V1Job, V1PodDisruptionBudget, V1VolumeAttachment } from '@kubernetes/client-node';
import { projectDaemonSet } from './daemonsets.js';
import { projectVolumeAttachment } from './volume-attachments.js';
import { HOOK_LABEL } from '../core/hooks.js';
import { STATIC_POD_COMPONENTS } from '../core/kubernetes/images.js';
import { JOB_NAME_LABEL, projectHookJob } from './hook-jobs.js';
import { nodePodWatches, type NodePodWatches } from './node-pods.js';
import {
  KUBE_PROXY,
  PLAN_LABEL,
  STATIC_POD_LABEL,
  STATIC_POD_NAMESPACE,
  type DaemonSetView,
  type HookJobView,
  type JobView,
  type LeaseView,
  type NodeView,
  type PdbView,
  type PlanView,
  type PodView,
  type VolumeAttachmentView,
} from './views.js';

export interface InformerSettings {
  kubeConfig: KubeConfig;
  clock: Clock;
  log: LogFn;
  operatorNamespace: string;
  /** Where hook Jobs run (--hooks-namespace): the hook Job and hook pod informers watch it. */
  hooksNamespace: string;
  resyncMs?: number;
  backoff?: { initialMs?: number; maxMs?: number };
}

export interface KubeInformerSet {
  nodes: KubeInformer<NodeView>;
  /** kube-system mirror pods of the control-plane components (k8s-app in STATIC_POD_COMPONENTS). Key: `namespace/name`. Index: node name. */
  staticPods: KubeInformer<PodView>;
  /** Pods of hook Jobs in the hooks namespace (labelled kangalpatch.ozalp.dk/hook). Key: `namespace/name`. Index: the Job's name. */
  hookPods: KubeInformer<PodView>;
  /** The pods of the nodes opened (the draining ones), one field-selected informer each. */
  nodePods: NodePodWatches;
  slotLeases: KubeInformer<LeaseView>;
  patchJobs: KubeInformer<JobView>;
  patchPlans: KubeInformer<PlanView>;
  pdbs: KubeInformer<PdbView>;
  /** VolumeAttachments, key name, index spec.nodeName: a drain with waitForVolumeDetach waits until none names its node. */
  volumeAttachments: KubeInformer<VolumeAttachmentView>;
  kubeProxy: KubeInformer<DaemonSetView>;
  hookJobs: KubeInformer<HookJobView>;
}

function projectPdb(p: V1PodDisruptionBudget): PdbView {
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    resourceVersion: p.metadata?.resourceVersion ?? '',
    disruptionsAllowed: p.status?.disruptionsAllowed ?? 0,
  };
}

interface TypedList<T> {
  items: T[];
  metadata?: { resourceVersion?: string; _continue?: string };
}

/** client-node names the continue token `_continue` on typed lists. */
function page<T>(list: TypedList<T>): ListPage<T> {
  return {
    items: list.items,
    resourceVersion: list.metadata?.resourceVersion ?? '',
    continue: list.metadata?._continue,
  };
}

export function makeInformers(c: KubeClients, s: InformerSettings): KubeInformerSet {
  const common = { kubeConfig: s.kubeConfig, clock: s.clock, log: s.log, resyncMs: s.resyncMs, backoff: s.backoff };
  const make = <T, V>(o: Omit<InformerOptions<T, V>, 'kubeConfig' | 'clock' | 'log'>): KubeInformer<V> =>
    createInformer<T, V>({ ...common, ...o });

  const nodes: InformerSource<Parameters<typeof projectNode>[0]> = {
    watchPath: '/api/v1/nodes',
    list: async (q, o) => page(await c.core.listNode(q, o)),
  };
  type RawPod = Parameters<typeof projectPod>[0];
  const allPods: InformerSource<RawPod> = {
    watchPath: '/api/v1/pods',
    list: async (q, o) => page(await c.core.listPodForAllNamespaces(q, o)),
  };
  const podsIn = (namespace: string): InformerSource<RawPod> => ({
    watchPath: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
    list: async (q, o) => page(await c.core.listNamespacedPod({ ...q, namespace }, o)),
  });
  const podKey = (v: PodView): string => `${v.namespace}/${v.name}`;
  const ns = s.operatorNamespace;
  const leases: InformerSource<Parameters<typeof projectLease>[0]> = {
    watchPath: `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/leases`,
    list: async (q, o) => page(await c.coordination.listNamespacedLease({ ...q, namespace: ns }, o)),
  };
  const custom = <T>(plural: string): InformerSource<T> => ({
    watchPath: `/apis/${API_GROUP}/${API_VERSION_NAME}/${plural}`,
    list: async (q, o) => {
      // Custom objects come back as plain JSON, where the token is `continue`.
      const raw = (await c.custom.listClusterCustomObject(
        { group: API_GROUP, version: API_VERSION_NAME, plural, ...q },
        o,
      )) as {
        items?: T[];
        metadata?: { resourceVersion?: string; continue?: string };
      };
      return {
        items: raw.items ?? [],
        resourceVersion: raw.metadata?.resourceVersion ?? '',
        continue: raw.metadata?.continue || undefined,
      };
    },
  });
  const jobs = custom<RawPatchJob>(PATCHJOB_PLURAL);
  const pdbs: InformerSource<V1PodDisruptionBudget> = {
    watchPath: '/apis/policy/v1/poddisruptionbudgets',
    list: async (q, o) => page(await c.policy.listPodDisruptionBudgetForAllNamespaces(q, o)),
  };

  const volumeAttachments: InformerSource<V1VolumeAttachment> = {
    watchPath: '/apis/storage.k8s.io/v1/volumeattachments',
    list: async (q, o) => page(await c.storage.listVolumeAttachment(q, o)),
  };

  const daemonSets: InformerSource<V1DaemonSet> = {
    watchPath: `/apis/apps/v1/namespaces/${KUBE_PROXY.namespace}/daemonsets`,
    list: async (q, o) => page(await c.apps.listNamespacedDaemonSet({ ...q, namespace: KUBE_PROXY.namespace }, o)),
  };

  const hooksNs = s.hooksNamespace;
  const hookJobs: InformerSource<V1Job> = {
    watchPath: `/apis/batch/v1/namespaces/${encodeURIComponent(hooksNs)}/jobs`,
    list: async (q, o) => page(await c.batch.listNamespacedJob({ ...q, namespace: hooksNs }, o)),
  };

  return {
    hookJobs: make({
      name: 'hook jobs',
      source: hookJobs,
      project: projectHookJob,
      key: (v: HookJobView) => v.name,
      resourceVersion: (v) => v.resourceVersion,
      labelSelector: HOOK_LABEL,
    }),
    kubeProxy: make({
      name: 'kube-proxy daemonset',
      source: daemonSets,
      project: projectDaemonSet,
      key: (v: DaemonSetView) => v.name,
      resourceVersion: (v) => v.resourceVersion,
      fieldSelector: `metadata.name=${KUBE_PROXY.name}`,
    }),
    nodes: make({
      name: 'nodes',
      source: nodes,
      project: projectNode,
      key: (v: NodeView) => v.name,
      resourceVersion: (v) => v.resourceVersion,
    }),
    staticPods: make({
      name: 'static pods',
      source: podsIn(STATIC_POD_NAMESPACE),
      project: projectPod,
      key: podKey,
      resourceVersion: (v) => v.resourceVersion,
      index: (v) => v.nodeName,
      // Not `k8s-app` alone: kube-proxy's DaemonSet pods carry it too, one per node.
      labelSelector: `${STATIC_POD_LABEL} in (${STATIC_POD_COMPONENTS.join(',')})`,
    }),
    hookPods: make({
      name: 'hook pods',
      source: podsIn(hooksNs),
      project: projectPod,
      key: podKey,
      resourceVersion: (v) => v.resourceVersion,
      index: (v) => v.labels[JOB_NAME_LABEL],
      labelSelector: HOOK_LABEL,
    }),
    nodePods: nodePodWatches((nodeName) =>
      make({
        name: `pods of node/${nodeName}`,
        source: allPods,
        project: projectPod,
        key: podKey,
        resourceVersion: (v) => v.resourceVersion,
        fieldSelector: `spec.nodeName=${nodeName}`,
      }),
    ),
    slotLeases: make({
      name: 'slot leases',
      source: leases,
      project: projectLease,
      key: (v: LeaseView) => v.name,
      resourceVersion: (v) => v.resourceVersion,
      labelSelector: PLAN_LABEL,
    }),
    patchJobs: make({
      name: 'patchjobs',
      source: jobs,
      project: projectJob,
      key: (v: JobView) => v.name,
      resourceVersion: (v) => v.resourceVersion,
    }),
    volumeAttachments: make({
      name: 'volume attachments',
      source: volumeAttachments,
      project: projectVolumeAttachment,
      key: (v: VolumeAttachmentView) => v.name,
      resourceVersion: (v) => v.resourceVersion,
      index: (v) => v.nodeName,
    }),
    pdbs: make({
      name: 'pdbs',
      source: pdbs,
      project: projectPdb,
      key: (v: PdbView) => `${v.namespace}/${v.name}`,
      resourceVersion: (v) => v.resourceVersion,
    }),
    patchPlans: make({
      name: 'patchplans',
      source: custom<RawPatchPlan>(PATCHPLAN_PLURAL),
      project: projectPlan,
      key: (v: PlanView) => v.name,
      resourceVersion: (v) => v.resourceVersion,
    }),
  };
}
