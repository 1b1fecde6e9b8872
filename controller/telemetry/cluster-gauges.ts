// Gauges of cluster state, read from the informers' caches when Prometheus scrapes (collect()),
// so reconcilers keep no bookkeeping for them. Every replica reports them (a standby's caches are
// as current as the leader's); dashboards and alerts aggregate with max.
import { Gauge, type Registry } from 'prom-client';
import type { JobView, NodeView, PlanView } from '../kube/views.js';
import type { Clock } from '../runtime/clock.js';
import {
  cordonedSeconds,
  etcdMembers,
  etcdWaiting,
  nodePhaseCounts,
  planPhaseSamples,
  staleMatrixPlans,
} from './cluster-state.js';

/** The part of an informer the gauges read. */
interface CachedViews<V> {
  isSynced(): boolean;
  list(): V[];
  get(key: string): V | undefined;
}

export interface ClusterCaches {
  nodes: CachedViews<NodeView>;
  patchJobs: CachedViews<JobView>;
  patchPlans: CachedViews<PlanView>;
}

export function registerClusterGauges(registry: Registry, informers: ClusterCaches, clock: Pick<Clock, 'now'>): void {
  // Before the first list, no series rather than a fleet of zeros.
  const synced = (): boolean =>
    informers.nodes.isSynced() && informers.patchJobs.isSynced() && informers.patchPlans.isSynced();
  new Gauge({
    name: 'kangal_patch_plan_phase',
    help: "PatchPlans by phase: 1 for the plan's current phase, 0 for the others.",
    labelNames: ['plan', 'phase'],
    registers: [registry],
    collect() {
      this.reset(); // a deleted plan's series go away
      if (!synced()) return;
      for (const s of planPhaseSamples(informers.patchPlans.list()))
        this.set({ plan: s.plan, phase: s.phase }, s.value);
    },
  });
  new Gauge({
    name: 'kangal_patch_node_phase',
    help: 'Nodes by the phase of the PatchJob about them (Idle: none).',
    labelNames: ['phase'],
    registers: [registry],
    collect() {
      if (!synced()) return;
      for (const [phase, count] of nodePhaseCounts(informers.nodes.list(), informers.patchJobs.list()))
        this.set({ phase }, count);
    },
  });
  new Gauge({
    name: 'kangal_patch_node_cordoned_seconds',
    help: 'How long the node has been cordoned by a PatchJob (0: by a PatchJob that is gone); only nodes KangalPatch holds cordoned have a series.',
    labelNames: ['node'],
    registers: [registry],
    collect() {
      this.reset(); // an uncordoned or removed node's series go away
      if (!synced()) return;
      for (const [node, seconds] of cordonedSeconds(
        informers.nodes.list(),
        (name) => informers.patchJobs.get(name),
        clock.now(),
      ))
        this.set({ node }, seconds);
    },
  });
  new Gauge({
    name: 'kangal_patch_etcd_gate_waiting_nodes',
    help: 'Control-plane nodes the etcd gate holds now, by stage: beforeCordon (not yet safe to take down) or afterReboot (member catching up).',
    labelNames: ['stage'],
    registers: [registry],
    collect() {
      if (!synced()) return;
      for (const [stage, count] of etcdWaiting(informers.patchJobs.list())) this.set({ stage }, count);
    },
  });
  new Gauge({
    name: 'kangal_patch_etcd_members',
    help: "etcd members by health as the plan's preflight found them (status.etcd), for plans that upgrade Talos on control-plane nodes.",
    labelNames: ['plan', 'state'],
    registers: [registry],
    collect() {
      this.reset(); // a deleted plan's series go away
      if (!synced()) return;
      for (const m of etcdMembers(informers.patchPlans.list())) {
        this.set({ plan: m.plan, state: 'healthy' }, m.healthy);
        this.set({ plan: m.plan, state: 'unhealthy' }, m.unhealthy);
      }
    },
  });
  new Gauge({
    name: 'kangal_patch_support_matrix_stale',
    help: 'Stepwise plans: 1 when the last preflight saw Talos releases the support matrix does not know (condition SupportMatrixCurrent False), 0 when it knows them all.',
    labelNames: ['plan'],
    registers: [registry],
    collect() {
      this.reset();
      if (!synced()) return;
      for (const m of staleMatrixPlans(informers.patchPlans.list())) this.set({ plan: m.plan }, m.stale);
    },
  });
}

/** The pod caches (kube/informers.ts), by what they hold. */
export interface PodCaches {
  staticPods: { list(): unknown[] };
  hookPods: { list(): unknown[] };
  nodePods: { size(): number; nodes(): string[] };
}

/** How many pods the controller holds: at 5,000 nodes, the figure that decides its memory (a cluster-wide cache held every pod). */
export function registerPodCacheGauges(registry: Registry, caches: PodCaches): void {
  new Gauge({
    name: 'kangal_patch_cached_pods',
    help: "Pods held in the controller's caches, by cache: static (control-plane mirror pods), hook (hook Jobs' pods), node (pods of the nodes being drained).",
    labelNames: ['cache'],
    registers: [registry],
    collect() {
      this.set({ cache: 'static' }, caches.staticPods.list().length);
      this.set({ cache: 'hook' }, caches.hookPods.list().length);
      this.set({ cache: 'node' }, caches.nodePods.size());
    },
  });
  new Gauge({
    name: 'kangal_patch_pod_watched_nodes',
    help: "Nodes whose pods the controller watches now (those of draining jobs; at most the plans' concurrency).",
    registers: [registry],
    collect() {
      this.set(caches.nodePods.nodes().length);
    },
  });
}
