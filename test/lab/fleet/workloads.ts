// Workload pods on the simulated fleet, doing what kubelets and workload controllers would: pods
// are bound and Running/Ready, a pod being deleted is finished (grace 0, as the kubelet does),
// and a ReplicaSet pod that goes away gets a replacement on another schedulable node after a delay,
// so PodDisruptionBudgets block and release evictions the way they do in a real cluster.
import { AppsV1Api, CoreV1Api, PolicyV1Api, Watch, type KubeConfig, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { apiStatus, mergePatch } from '../kube.js';
import { podManifest, podStatus, SIMULATED_LABEL, WORKLOAD_LABEL, type PodOwner } from './objects.js';
import type { FleetControl } from './types.js';
import { Background } from './background.js';

export interface WorkloadSpec {
  namespace: string;
  name: string;
  /**
   * replicaset: pods owned by a ReplicaSet, replaced on another node when they go away;
   * daemonset: one pod per node, tolerating every taint; bare: unmanaged pods, gone for good.
   */
  kind: 'replicaset' | 'daemonset' | 'bare';
  /** Pods placed at the start (default 1; 0 for a workload whose pods a test places with createPodOn). */
  replicas?: number;
  pdb?: { minAvailable?: number | string; maxUnavailable?: number | string };
  /** Only nodes carrying these labels host its pods. */
  nodeSelector?: Record<string, string>;
}

interface Workload {
  spec: WorkloadSpec;
  owner: PodOwner | undefined;
  /** Replacements still waiting for a schedulable node. */
  pending: number;
  /** Replacements whose reschedule delay is running. */
  scheduled: number;
}

const key = (namespace: string, name: string): string => `${namespace}/${name}`;

/** The pod's containers by name and image, so a readiness change keeps its container statuses right. */
const containersOf = (pod: V1Pod): { name: string; image: string }[] => (pod.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.image ?? '' }));

export class Workloads {
  private readonly core: CoreV1Api;
  private readonly apps: AppsV1Api;
  private readonly policy: PolicyV1Api;
  private readonly watch: Watch;
  private readonly workloads = new Map<string, Workload>();
  private readonly aborts: AbortController[] = [];
  private readonly work = new Background();
  /** Errors of background work (a replacement that could not be created, ...), for tests to inspect. */
  readonly errors: string[] = this.work.errors;

  constructor(kc: KubeConfig, private readonly fleet: FleetControl, private readonly rescheduleDelayMs: number) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.apps = kc.makeApiClient(AppsV1Api);
    this.policy = kc.makeApiClient(PolicyV1Api);
    this.watch = new Watch(kc);
  }

  async start(specs: WorkloadSpec[]): Promise<void> {
    await this.startWatch('/api/v1/pods', { labelSelector: `${SIMULATED_LABEL}=true` }, (type, pod: V1Pod) => this.onPod(type, pod), () =>
      // A restarted watch replays current pods as ADDED (finishing deletions) but not the DELETED
      // events it missed: count the ReplicaSets' pods again instead.
      this.work.run('reconcile replicas after a watch restart', () => this.reconcileReplicas()),
    );
    await this.startWatch('/api/v1/nodes', {}, (type, node: V1Node) => {
      if (type === 'MODIFIED' && !node.spec?.unschedulable) this.placePending();
    });
    for (const spec of specs) await this.add(spec);
  }

  async add(spec: WorkloadSpec): Promise<void> {
    await this.core.createNamespace({ body: { metadata: { name: spec.namespace } } }).catch((err: unknown) => {
      if (apiStatus(err) !== 409) throw err;
    });
    const workload: Workload = { spec, owner: await this.createOwner(spec), pending: 0, scheduled: 0 };
    this.workloads.set(key(spec.namespace, spec.name), workload);
    if (spec.pdb) {
      await this.policy.createNamespacedPodDisruptionBudget({
        namespace: spec.namespace,
        body: { metadata: { name: spec.name }, spec: { ...spec.pdb, selector: { matchLabels: { [WORKLOAD_LABEL]: spec.name } } } },
      });
    }
    const nodes = await this.eligibleNodes(spec);
    if (spec.kind === 'daemonset') {
      for (const node of nodes) await this.createPod(workload, node);
      return;
    }
    const replicas = spec.replicas ?? 1;
    if (nodes.length === 0 && replicas > 0) throw new Error(`no schedulable node for workload ${key(spec.namespace, spec.name)}`);
    for (let i = 0; i < replicas; i++) await this.createPod(workload, nodes[i % nodes.length] ?? '');
  }

  /**
   * One more pod of an added workload, bound straight to `nodeName` (spec.nodeName, as a scheduler
   * decision made before it saw a cordon, or a static/DaemonSet-like placement): cordons and
   * NoSchedule taints do not stop it. Running, and Ready when the node is up. Lets a drain test
   * script "a pod lands on the node just after the cordon". The pod is labelled and owned like the
   * workload's other pods (a ReplicaSet pod counts toward its PDB; when it goes away it is
   * replaced elsewhere as usual; a `bare` pod is gone for good). Returns the created pod.
   */
  async createPodOn(nodeName: string, workload: { namespace: string; name: string }): Promise<V1Pod> {
    const w = this.workloads.get(key(workload.namespace, workload.name));
    if (!w) throw new Error(`no workload ${key(workload.namespace, workload.name)}: add it first`);
    if (!this.fleet.node(nodeName)) throw new Error(`no fleet node ${nodeName}`);
    return this.createPod(w, nodeName);
  }

  /** Pods of simulated workloads bound to a node. */
  async podsOn(nodeName: string): Promise<V1Pod[]> {
    const list = await this.core.listPodForAllNamespaces({ labelSelector: `${SIMULATED_LABEL}=true`, fieldSelector: `spec.nodeName=${nodeName}` });
    return list.items;
  }

  async nodeWentDown(nodeName: string): Promise<void> {
    await this.setReadyOn(nodeName, false);
  }

  async nodeCameUp(nodeName: string): Promise<void> {
    await this.setReadyOn(nodeName, true);
    const present = new Set((await this.podsOn(nodeName)).map((p) => p.metadata?.labels?.[WORKLOAD_LABEL]));
    for (const workload of this.workloads.values()) {
      const eligible = (await this.eligibleNodes(workload.spec)).includes(nodeName);
      if (workload.spec.kind === 'daemonset' && eligible && !present.has(workload.spec.name)) await this.createPod(workload, nodeName);
    }
    this.placePending();
  }

  /** Ends the current watches as an apiserver timeout would; they restart after a short delay. */
  dropWatches(): void {
    for (const abort of this.aborts.splice(0)) abort.abort();
  }

  async stop(): Promise<void> {
    this.work.stop();
    for (const abort of this.aborts) abort.abort();
    await Promise.resolve();
  }

  private onPod(type: string, pod: V1Pod): void {
    if (type === 'DELETED') this.onPodGone(pod);
    else if (pod.metadata?.deletionTimestamp) this.finishDeletion(pod);
  }

  /**
   * The kubelet's part of a graceful deletion: containers stopped, remove the object. The UID
   * precondition keeps a late event from deleting a newer pod of the same name.
   */
  private finishDeletion(pod: V1Pod): void {
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    const uid = pod.metadata?.uid ?? '';
    this.work.run(`finish deletion of ${namespace}/${name}`, async () => {
      await this.core.deleteNamespacedPod({ namespace, name, body: { gracePeriodSeconds: 0, preconditions: { uid } } }).catch((err: unknown) => {
        // Gone already (404) or replaced by a newer pod of the same name (409 on the UID precondition).
        if (apiStatus(err) !== 404 && apiStatus(err) !== 409) throw err;
      });
    });
  }

  private onPodGone(pod: V1Pod): void {
    const namespace = pod.metadata?.namespace ?? '';
    const workload = this.workloads.get(key(namespace, pod.metadata?.labels?.[WORKLOAD_LABEL] ?? ''));
    if (!workload || workload.spec.kind === 'bare') return;
    const from = pod.spec?.nodeName ?? '';
    workload.scheduled++;
    this.work.after(this.rescheduleDelayMs, `replace ${namespace}/${pod.metadata?.name ?? ''}`, async () => {
      workload.scheduled--;
      await this.replace(workload, from);
    });
  }

  private async replace(workload: Workload, from: string): Promise<void> {
    if (!(await this.ownerExists(workload))) return;
    if (workload.spec.kind === 'daemonset') {
      // A DaemonSet pod comes back on its own node once that node runs again.
      if (this.fleet.node(from)?.up) await this.createPod(workload, from);
      return;
    }
    const target = await this.pickNode(workload, from);
    if (target) await this.createPod(workload, target);
    else workload.pending++;
  }

  private placePending(): void {
    for (const workload of this.workloads.values()) {
      for (; workload.pending > 0; workload.pending--) {
        this.work.run(`place a pending pod of ${workload.spec.name}`, () => this.replace(workload, ''));
      }
    }
  }

  /** The schedulable node running the fewest of the workload's pods, preferring not `avoid`. */
  private async pickNode(workload: Workload, avoid: string): Promise<string | undefined> {
    const nodes = await this.eligibleNodes(workload.spec);
    const pods = await this.core.listNamespacedPod({ namespace: workload.spec.namespace, labelSelector: `${WORKLOAD_LABEL}=${workload.spec.name}` });
    const load = (n: string): number => pods.items.filter((p) => p.spec?.nodeName === n && !p.metadata?.deletionTimestamp).length;
    const ranked = nodes.sort((a, b) => Number(a === avoid) - Number(b === avoid) || load(a) - load(b));
    return ranked[0];
  }

  /** Nodes that are up and match the workload; uncordoned and untainted unless it is a DaemonSet. */
  private async eligibleNodes(spec: WorkloadSpec): Promise<string[]> {
    const nodes = await this.core.listNode({ labelSelector: `${SIMULATED_LABEL}=true` });
    return nodes.items
      .filter((n) => this.fleet.node(n.metadata?.name ?? '')?.up)
      .filter((n) => Object.entries(spec.nodeSelector ?? {}).every(([k, v]) => n.metadata?.labels?.[k] === v))
      .filter((n) => spec.kind === 'daemonset' || (!n.spec?.unschedulable && !(n.spec?.taints ?? []).some((t) => t.effect === 'NoSchedule')))
      .map((n) => n.metadata?.name ?? '')
      .sort();
  }

  private async createPod(workload: Workload, nodeName: string): Promise<V1Pod> {
    const { spec } = workload;
    const pod = await this.core.createNamespacedPod({
      namespace: spec.namespace,
      body: podManifest(spec.namespace, spec.name, nodeName, workload.owner, spec.kind === 'daemonset'),
    });
    const ready = this.fleet.node(nodeName)?.up ?? false;
    return this.core.patchNamespacedPodStatus({ namespace: spec.namespace, name: pod.metadata?.name ?? '', body: { status: podStatus(ready, new Date()) } }, mergePatch);
  }

  private async setReadyOn(nodeName: string, ready: boolean): Promise<void> {
    for (const pod of await this.podsOn(nodeName)) {
      if (pod.metadata?.deletionTimestamp) continue;
      await this.core
        .patchNamespacedPodStatus({ namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '', body: { status: podStatus(ready, new Date(), containersOf(pod)) } }, mergePatch)
        .catch((err: unknown) => {
          if (apiStatus(err) !== 404) throw err;
        });
    }
  }

  private async createOwner(spec: WorkloadSpec): Promise<PodOwner | undefined> {
    const labels = { [WORKLOAD_LABEL]: spec.name };
    const template = { metadata: { labels }, spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] } };
    const meta = { name: spec.name, labels };
    if (spec.kind === 'replicaset') {
      // No replicaset-controller runs: this object only carries spec.replicas for the disruption controller.
      const rs = await this.apps.createNamespacedReplicaSet({
        namespace: spec.namespace,
        body: { metadata: meta, spec: { replicas: spec.replicas ?? 1, selector: { matchLabels: labels }, template } },
      });
      return { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: spec.name, uid: rs.metadata?.uid ?? '' };
    }
    if (spec.kind === 'daemonset') {
      const ds = await this.apps.createNamespacedDaemonSet({ namespace: spec.namespace, body: { metadata: meta, spec: { selector: { matchLabels: labels }, template } } });
      return { apiVersion: 'apps/v1', kind: 'DaemonSet', name: spec.name, uid: ds.metadata?.uid ?? '' };
    }
    return undefined;
  }

  private async ownerExists(workload: Workload): Promise<boolean> {
    const { namespace, name, kind } = workload.spec;
    const read = kind === 'replicaset'
      ? this.apps.readNamespacedReplicaSet({ namespace, name })
      : this.apps.readNamespacedDaemonSet({ namespace, name });
    return read.then(() => true, (err: unknown) => (apiStatus(err) === 404 ? false : Promise.reject(err as Error)));
  }

  private async startWatch<T>(path: string, query: Record<string, string>, handler: (type: string, obj: T) => void, onRestart?: () => void): Promise<void> {
    const begin = async (): Promise<void> => {
      if (this.work.stopped) return;
      const abort = await this.watch.watch(path, query, (type, obj) => handler(type, obj as T), () => {
        // Watches end (timeouts, apiserver restarts); start again unless the fleet is stopping.
        if (!this.work.stopped) this.work.after(200, `restart watch ${path}`, restart);
      });
      this.aborts.push(abort);
    };
    const restart = async (): Promise<void> => {
      await begin();
      onRestart?.();
    };
    await begin();
  }

  private async reconcileReplicas(): Promise<void> {
    for (const workload of this.workloads.values()) {
      const { spec } = workload;
      if (spec.kind !== 'replicaset' || !(await this.ownerExists(workload))) continue;
      const pods = await this.core.listNamespacedPod({ namespace: spec.namespace, labelSelector: `${WORKLOAD_LABEL}=${spec.name}` });
      const live = pods.items.filter((p) => !p.metadata?.deletionTimestamp).length;
      const missing = (spec.replicas ?? 1) - live - workload.scheduled - workload.pending;
      for (let i = 0; i < missing; i++) await this.replace(workload, '');
    }
  }
}
