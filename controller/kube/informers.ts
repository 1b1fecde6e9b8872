// The four informers the controller runs, each on its projection.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../runtime/clock.js';
import type { LogFn } from '../runtime/log.js';
import { API_GROUP, API_VERSION_NAME } from '../../schemas/api.js';
import type { KubeClients } from './clients.js';
import { createInformer, type InformerOptions, type InformerSource, type KubeInformer, type ListPage } from './informer.js';
import { PATCHJOB_PLURAL } from './patchjobs.js';
import { PATCHPLAN_PLURAL, projectPlan, type RawPatchPlan } from './patchplans.js';
import { projectJob, projectLease, projectNode, projectPod, type RawPatchJob } from './project.js';
import type { V1DaemonSet, V1Job, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { projectDaemonSet } from './daemonsets.js';
import { HOOK_LABEL } from '../core/hooks.js';
import { projectHookJob } from './hook-jobs.js';
import { KUBE_PROXY, PLAN_LABEL, type DaemonSetView, type HookJobView, type JobView, type LeaseView, type NodeView, type PdbView, type PlanView, type PodView } from './views.js';

export interface InformerSettings {
  kubeConfig: KubeConfig;
  clock: Clock;
  log: LogFn;
  operatorNamespace: string;
  resyncMs?: number;
  backoff?: { initialMs?: number; maxMs?: number };
  /** Extra field selector for the pod informer, e.g. `status.phase!=Succeeded`. */
  podFieldSelector?: string;
}

export interface KubeInformerSet {
  nodes: KubeInformer<NodeView>;
  pods: KubeInformer<PodView>;
  slotLeases: KubeInformer<LeaseView>;
  patchJobs: KubeInformer<JobView>;
  patchPlans: KubeInformer<PlanView>;
  pdbs: KubeInformer<PdbView>;
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
  return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '', continue: list.metadata?._continue };
}

export function makeInformers(c: KubeClients, s: InformerSettings): KubeInformerSet {
  const common = { kubeConfig: s.kubeConfig, clock: s.clock, log: s.log, resyncMs: s.resyncMs, backoff: s.backoff };
  const make = <T, V>(o: Omit<InformerOptions<T, V>, 'kubeConfig' | 'clock' | 'log'>): KubeInformer<V> =>
    createInformer<T, V>({ ...common, ...o });

  const nodes: InformerSource<Parameters<typeof projectNode>[0]> = {
    watchPath: '/api/v1/nodes',
    list: async (q, o) => page(await c.core.listNode(q, o)),
  };
  const pods: InformerSource<Parameters<typeof projectPod>[0]> = {
    watchPath: '/api/v1/pods',
    list: async (q, o) => page(await c.core.listPodForAllNamespaces(q, o)),
  };
  const ns = s.operatorNamespace;
  const leases: InformerSource<Parameters<typeof projectLease>[0]> = {
    watchPath: `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/leases`,
    list: async (q, o) => page(await c.coordination.listNamespacedLease({ ...q, namespace: ns }, o)),
  };
  const custom = <T>(plural: string): InformerSource<T> => ({
    watchPath: `/apis/${API_GROUP}/${API_VERSION_NAME}/${plural}`,
    list: async (q, o) => {
      // Custom objects come back as plain JSON, where the token is `continue`.
      const raw = (await c.custom.listClusterCustomObject({ group: API_GROUP, version: API_VERSION_NAME, plural, ...q }, o)) as {
        items?: T[];
        metadata?: { resourceVersion?: string; continue?: string };
      };
      return { items: raw.items ?? [], resourceVersion: raw.metadata?.resourceVersion ?? '', continue: raw.metadata?.continue || undefined };
    },
  });
  const jobs = custom<RawPatchJob>(PATCHJOB_PLURAL);
  const pdbs: InformerSource<V1PodDisruptionBudget> = {
    watchPath: '/apis/policy/v1/poddisruptionbudgets',
    list: async (q, o) => page(await c.policy.listPodDisruptionBudgetForAllNamespaces(q, o)),
  };

  const daemonSets: InformerSource<V1DaemonSet> = {
    watchPath: `/apis/apps/v1/namespaces/${KUBE_PROXY.namespace}/daemonsets`,
    list: async (q, o) => page(await c.apps.listNamespacedDaemonSet({ ...q, namespace: KUBE_PROXY.namespace }, o)),
  };

  const hookJobs: InformerSource<V1Job> = {
    watchPath: `/apis/batch/v1/namespaces/${encodeURIComponent(ns)}/jobs`,
    list: async (q, o) => page(await c.batch.listNamespacedJob({ ...q, namespace: ns }, o)),
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
    nodes: make({ name: 'nodes', source: nodes, project: projectNode, key: (v: NodeView) => v.name, resourceVersion: (v) => v.resourceVersion }),
    pods: make({
      name: 'pods',
      source: pods,
      project: projectPod,
      key: (v: PodView) => `${v.namespace}/${v.name}`,
      resourceVersion: (v) => v.resourceVersion,
      index: (v) => v.nodeName,
      fieldSelector: s.podFieldSelector,
    }),
    slotLeases: make({
      name: 'slot leases',
      source: leases,
      project: projectLease,
      key: (v: LeaseView) => v.name,
      resourceVersion: (v) => v.resourceVersion,
      labelSelector: PLAN_LABEL,
    }),
    patchJobs: make({ name: 'patchjobs', source: jobs, project: projectJob, key: (v: JobView) => v.name, resourceVersion: (v) => v.resourceVersion }),
    pdbs: make({ name: 'pdbs', source: pdbs, project: projectPdb, key: (v: PdbView) => `${v.namespace}/${v.name}`, resourceVersion: (v) => v.resourceVersion }),
    patchPlans: make({ name: 'patchplans', source: custom<RawPatchPlan>(PATCHPLAN_PLURAL), project: projectPlan, key: (v: PlanView) => v.name, resourceVersion: (v) => v.resourceVersion }),
  };
}
