// The Kubernetes side of a simulated Talos fleet: registers Nodes the way Talos' kubelet does, keeps
// them alive with Lease heartbeats, and takes them down and up again when the Talos simulator
// reboots them (FleetControl). Workload pods live in ./workloads.ts.
import { randomUUID } from 'node:crypto';
import { CoreV1Api, V1MicroTime, type KubeConfig, type V1Node, type V1Taint } from '@kubernetes/client-node';
import { forEachLimit } from '../batch.js';
import { rawApi, type RawApi } from './raw-api.js';
import { apiStatus, loadKubeConfig, mergePatch } from '../kube.js';
import { waitFor } from '../wait.js';
import { nodeManifest, nodeStatus, SCHEMATIC_ANNOTATION } from './objects.js';
import { defaultKubeProxyImage, KUBE_PROXY, KubeProxyDaemonSet } from './kube-proxy.js';
import type {
  BringUpOptions,
  FleetControl,
  FleetNodeSpec,
  FleetNodeState,
  StaticPodComponent,
  StaticPodState,
} from './types.js';
import { defaultStaticPodImages, STATIC_POD_COMPONENTS, syncStaticPod } from './static-pods.js';
import { Workloads, type WorkloadSpec } from './workloads.js';
import { JobPods } from './job-pods.js';

export type { WorkloadSpec } from './workloads.js';
export { KUBE_PROXY } from './kube-proxy.js';
export { CONFIG_VERSION_ANNOTATION } from './static-pods.js';
export { describeFleet, type FleetDescription } from './describe.js';

export interface FleetOptions {
  kubeconfigPath: string;
  nodes: FleetNodeSpec[];
  workloads?: WorkloadSpec[];
  /** Delay before an evicted pod's replacement appears on another node. */
  rescheduleDelayMs?: number;
  /**
   * How often each up node renews its kube-node-lease Lease, like the kubelet (10 s). 0: once at
   * registration and boot only. Nothing in the lab reads these Leases (no node-lifecycle-controller
   * runs, and the product watches Nodes, not Leases), so a 5,000-node fleet turns them off rather
   * than send the apiserver 500 writes a second that only load the machine being measured.
   */
  leaseRenewMs?: number;
  /** Nodes registered (and workload pods placed) this many at a time (default 16). */
  registerConcurrency?: number;
  /**
   * Run the `kube-system/kube-proxy` DaemonSet (one pod per node, rolled when a control-plane
   * config names a new `cluster.proxy.image`). Off by default: only one fleet per cluster can own
   * it, and suites sharing a cluster each start a fleet.
   */
  kubeProxy?: boolean;
  /**
   * How often each up node posts its Node status, as a busy kubelet does (images, conditions,
   * heartbeats). Off by default; every post moves the Node's resourceVersion, which is what races
   * a controller's guarded Node writes.
   */
  statusPostMs?: number;
  /** Called as the start passes its steps (`nodes registered`, `workloads placed`): lets a bench time them. */
  progress?: (step: string) => void;
}

export interface Fleet extends FleetControl {
  readonly workloads: Workloads;
  /** Pods of batch Jobs: bound, run and finished with the exit code their command asks for. */
  readonly jobPods: JobPods;
  /**
   * One kubelet status post for an up node. Resolves once the apiserver has stored it; the post
   * always changes the status (its heartbeat moves forward), so the Node's resourceVersion moves.
   */
  postStatus(name: string): Promise<void>;
  stop(): Promise<void>;
}

const LEASE_NAMESPACE = 'kube-node-lease';

export async function startFleet(opts: FleetOptions): Promise<Fleet> {
  const kc = loadKubeConfig(opts.kubeconfigPath);
  const fleet = new SimulatedFleet(kc, opts);
  await fleet.register();
  return fleet;
}

class SimulatedFleet implements Fleet {
  private readonly core: CoreV1Api;
  private readonly states = new Map<string, FleetNodeState>();
  private heartbeat: NodeJS.Timeout | undefined;
  private statusPosts: NodeJS.Timeout | undefined;
  /** Last heartbeat time posted per node: a post within the same second still moves it (metav1.Time has whole seconds). */
  private readonly lastPost = new Map<string, number>();
  private readonly kubeProxy: KubeProxyDaemonSet | undefined;
  readonly workloads: Workloads;
  /** Status posts and Lease renewals, the per-node hot path (see raw-api.ts); set by register(). */
  private raw: RawApi | undefined;
  readonly jobPods: JobPods;

  constructor(
    private readonly kc: KubeConfig,
    private readonly opts: FleetOptions,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.workloads = new Workloads(kc, this, opts.rescheduleDelayMs ?? 200, opts.registerConcurrency ?? 16);
    this.jobPods = new JobPods(kc, this);
    if (opts.kubeProxy) {
      this.kubeProxy = new KubeProxyDaemonSet(kc, this, (what, err) =>
        this.workloads.errors.push(`${what}: ${err instanceof Error ? err.message : String(err)}`),
      );
    }
    for (const spec of opts.nodes) this.states.set(spec.name, { ...spec, bootId: randomUUID(), up: true });
  }

  async register(): Promise<void> {
    await ensureNamespace(this.core, LEASE_NAMESPACE);
    const raw = await rawApi(this.kc, (this.opts.registerConcurrency ?? 16) * 2);
    this.raw = raw;
    await forEachLimit(this.states.values(), this.opts.registerConcurrency ?? 16, async (state) => {
      const created = await raw.post<V1Node>('/api/v1/nodes', nodeManifest(state));
      const posted = await this.patchStatus(state);
      // The created Node shows the taints admission gave it (TaintNodesByCondition's not-ready);
      // the status write answered with the resourceVersion that guards changing them, so no read.
      const taints = conditionTaints(created.spec?.taints ?? [], state);
      if (taints !== undefined) {
        await raw
          .mergePatch(`/api/v1/nodes/${state.name}`, {
            metadata: { resourceVersion: posted.metadata?.resourceVersion },
            spec: { taints },
          })
          .catch((err: unknown) => {
            if (apiStatus(err) !== 409) throw err;
            return this.writeConditionTaints(state);
          });
      }
      await this.renewLease(state, 'create');
      if (state.role === 'controlplane') {
        const images = defaultStaticPodImages(state.kubernetesVersion);
        // Version 1: what the Talos simulator's component config resources start at.
        for (const component of STATIC_POD_COMPONENTS)
          await syncStaticPod(this.core, state, component, {
            image: images[component],
            configVersion: '1',
            ready: true,
          });
      }
    });
    this.opts.progress?.('nodes registered');
    const renewMs = this.opts.leaseRenewMs ?? 10_000;
    if (renewMs > 0) {
      this.heartbeat = setInterval(() => void this.renewAll(), renewMs);
      this.heartbeat.unref();
    }
    if (this.opts.statusPostMs !== undefined) {
      this.statusPosts = setInterval(() => void this.postAll(), this.opts.statusPostMs);
      this.statusPosts.unref();
    }
    await this.workloads.start(this.opts.workloads ?? []);
    this.opts.progress?.('workloads placed');
    await this.jobPods.start();
    if (this.kubeProxy) {
      const first = [...this.states.values()].find((s) => s.role === 'controlplane') ?? [...this.states.values()][0];
      await ensureNamespace(this.core, KUBE_PROXY.namespace);
      if (first) await this.kubeProxy.create(defaultKubeProxyImage(first.kubernetesVersion));
    }
  }

  nodes(): readonly FleetNodeState[] {
    return [...this.states.values()];
  }

  node(nameOrIP: string): FleetNodeState | undefined {
    return this.states.get(nameOrIP) ?? [...this.states.values()].find((s) => s.internalIP === nameOrIP);
  }

  async takeDown(name: string): Promise<void> {
    const state = this.mustGet(name);
    state.up = false;
    await this.untilWritten(`${name} down`, () => this.writeStatus(state));
    await this.untilWritten(`${name} pods`, () => this.workloads.nodeWentDown(name));
    this.kubeProxy?.nodeChanged();
  }

  async bringUp(name: string, opts: BringUpOptions = {}): Promise<FleetNodeState> {
    const state = this.mustGet(name);
    state.talosVersion = opts.talosVersion ?? state.talosVersion;
    state.kubernetesVersion = opts.kubernetesVersion ?? state.kubernetesVersion;
    state.bootId = opts.bootId ?? randomUUID();
    state.up = true;
    state.kubeletStarting = false;
    const schematic = opts.schematic === null ? '' : opts.schematic;
    if (schematic !== undefined && schematic !== state.schematic) {
      state.schematic = schematic;
      // Talos labels the Node from the booted image's extensions: none, no annotation (null removes it).
      await this.untilWritten(`${name} schematic`, () =>
        this.core.patchNode(
          {
            name,
            body: { metadata: { annotations: { [SCHEMATIC_ANNOTATION]: schematic === '' ? null : schematic } } },
          },
          mergePatch,
        ),
      );
    }
    await this.untilWritten(`${name} up`, () => this.writeStatus(state));
    await this.untilWritten(`${name} lease`, () => this.renewLease(state));
    await this.untilWritten(`${name} pods`, () => this.workloads.nodeCameUp(name));
    this.kubeProxy?.nodeChanged();
    return { ...state };
  }

  async syncStaticPod(name: string, component: StaticPodComponent, pod: StaticPodState): Promise<void> {
    const state = this.mustGet(name);
    if (state.role !== 'controlplane') throw new Error(`node ${name} is a worker: it runs no static pod ${component}`);
    await this.untilWritten(`${name} ${component}`, () => syncStaticPod(this.core, state, component, pod));
  }

  async setKubelet(name: string, kubelet: { version: string; ready: boolean }): Promise<void> {
    const state = this.mustGet(name);
    state.kubernetesVersion = kubelet.version;
    state.kubeletStarting = !kubelet.ready;
    await this.untilWritten(`${name} kubelet`, () => this.writeStatus(state));
  }

  async setKubeProxyImage(image: string, opts: { podReadyMs: number }): Promise<void> {
    await this.kubeProxy?.setImage(image, opts.podReadyMs);
  }

  async postStatus(name: string): Promise<void> {
    const state = this.mustGet(name);
    if (!state.up) return;
    await this.patchStatus(state);
  }

  async stop(): Promise<void> {
    clearInterval(this.heartbeat);
    clearInterval(this.statusPosts);
    this.kubeProxy?.stop();
    this.jobPods.stop();
    await this.workloads.stop();
    this.raw?.close();
  }

  private api(): RawApi {
    if (!this.raw) throw new Error('fleet not registered');
    return this.raw;
  }

  /**
   * A node's own writes are retried until the apiserver takes them, as a kubelet's are: an
   * apiserver restarting while a node reboots must not leave the node down for good in the lab.
   */
  private async untilWritten(what: string, write: () => Promise<unknown>): Promise<void> {
    await waitFor(
      async () => {
        await write();
        return true;
      },
      { timeoutMs: 120_000, intervalMs: 250, description: `the apiserver to take the fleet's write (${what})` },
    );
  }

  private mustGet(nameOrIP: string): FleetNodeState {
    const state = this.node(nameOrIP);
    if (!state) throw new Error(`fleet has no node ${nameOrIP}`);
    return state;
  }

  private async writeStatus(state: FleetNodeState): Promise<void> {
    await this.patchStatus(state);
    await this.writeConditionTaints(state);
  }

  private async patchStatus(state: FleetNodeState): Promise<V1Node> {
    const at = Math.max(Date.now(), (this.lastPost.get(state.name) ?? 0) + 1000);
    this.lastPost.set(state.name, at);
    return this.api().mergePatch<V1Node>(`/api/v1/nodes/${state.name}/status`, {
      status: nodeStatus(state, new Date(at)),
    });
  }

  private async postAll(): Promise<void> {
    for (const state of this.states.values()) {
      // Best effort, like renewAll: a lab shutting down may have lost its apiserver first.
      if (state.up) await this.patchStatus(state).catch(() => undefined);
    }
  }

  /**
   * What node-lifecycle-controller (not run in the lab) does: the apiserver registers Nodes with a
   * not-ready taint, which goes once the node is Ready; an unreachable node gets the unreachable taint.
   */
  private async writeConditionTaints(state: FleetNodeState): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const node = await this.api().get<V1Node>(`/api/v1/nodes/${state.name}`);
      const taints = conditionTaints(node.spec?.taints ?? [], state);
      if (taints === undefined) return;
      try {
        await this.api().mergePatch(`/api/v1/nodes/${state.name}`, {
          metadata: { resourceVersion: node.metadata?.resourceVersion },
          spec: { taints },
        });
        return;
      } catch (err) {
        if (apiStatus(err) !== 409 || attempt >= 5) throw err;
      }
    }
  }

  private async renewAll(): Promise<void> {
    for (const state of this.states.values()) {
      if (!state.up) continue;
      // A lab that is shutting down may have lost its apiserver first; heartbeats are best effort.
      await this.renewLease(state).catch(() => undefined);
    }
  }

  /** `create`: the node is registering, its Lease most likely absent (POST first, one request instead of a 404 and a POST). */
  private async renewLease(state: FleetNodeState, expect: 'create' | 'renew' = 'renew'): Promise<void> {
    const body = {
      metadata: { name: state.name, namespace: LEASE_NAMESPACE },
      spec: { holderIdentity: state.name, leaseDurationSeconds: 40, renewTime: new V1MicroTime() },
    };
    const leases = `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases`;
    if (expect === 'create') {
      await this.api()
        .post(leases, body)
        .catch(async (err: unknown) => {
          if (apiStatus(err) !== 409) throw err;
          await this.api().mergePatch(`${leases}/${state.name}`, body);
        });
      return;
    }
    try {
      await this.api().mergePatch(`${leases}/${state.name}`, body);
    } catch (err) {
      if (apiStatus(err) !== 404) throw err;
      await this.api().post(leases, body);
    }
  }
}

const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';
const UNREACHABLE_TAINT = 'node.kubernetes.io/unreachable';

/** The node's taints with the condition taints set for its state, or undefined when nothing changes. */
function conditionTaints(current: V1Taint[], state: FleetNodeState): V1Taint[] | undefined {
  const others = current.filter((t) => t.key !== NOT_READY_TAINT && t.key !== UNREACHABLE_TAINT);
  const condition = !state.up ? UNREACHABLE_TAINT : state.kubeletStarting ? NOT_READY_TAINT : undefined;
  const wanted = condition ? [...others, { key: condition, effect: 'NoSchedule' }] : others;
  const same =
    wanted.length === current.length &&
    wanted.every((t) => current.some((c) => c.key === t.key && c.effect === t.effect));
  return same ? undefined : wanted;
}

async function ensureNamespace(core: CoreV1Api, name: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name } } }).catch((err: unknown) => {
    if (apiStatus(err) !== 409) throw err;
  });
}
