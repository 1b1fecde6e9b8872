// An independent observer for safety assertions: its own watches of Nodes, Pods and Leases record
// what really happened (cordons, Ready changes, boots, pod deletions, Leases), with times, so tests
// never have to trust the controller's own status. Imports nothing from controller/.
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  makeInformer,
  type Informer,
  type KubeConfig,
  type V1Lease,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';

type ObservedKind =
  | 'cordoned'
  | 'uncordoned'
  | 'ready'
  | 'notReady'
  | 'booted'
  | 'podDeleting'
  | 'podGone'
  | 'podAdded'
  | 'leaseCreated'
  | 'leaseDeleted'
  /** A PatchJob (detail: its name) was created; node: its spec.nodeName. */
  | 'jobCreated'
  /** A PatchJob (detail: `<job> <phase>`) entered a phase; node: its spec.nodeName. */
  | 'jobPhase'
  /** A Kubernetes component of a node started running another version (detail: `<component> <version>`): the Node's kubeletVersion, or a control-plane static pod's image tag. */
  | 'componentVersion';

export interface Observation {
  at: number;
  kind: ObservedKind;
  /** Node name (for pods: the node they were bound to; for Leases: the holder). */
  node: string;
  detail: string;
}

interface NodeState {
  unschedulable: boolean;
  ready: boolean;
  bootID: string;
  osImage: string;
  cordonedBy: string | undefined;
  kubeletVersion: string;
}

export interface Observer {
  readonly events: Observation[];
  of(node: string, kinds?: ObservedKind[]): Observation[];
  /** The latest state seen of a node. */
  node(name: string): NodeState | undefined;
  /** Highest number of Leases with this label value alive at the same time. */
  maxConcurrentLeases(labelValue: string): number;
  /** The same for one group of a plan (the `groupLabel` option). */
  maxConcurrentLeasesInGroup(labelValue: string, group: string): number;
  liveLeases(): string[];
  /** Moments a kubelet ran a newer minor than the oldest kube-apiserver (each with what was seen). */
  readonly skewViolations: string[];
  /** Every Talos × component version pair a node was seen running (its osImage with its kubelet, or a control-plane static pod), as it changed. */
  readonly versionPairs: VersionPair[];
  stop(): void;
}

const STATIC_POD_COMPONENTS = new Set(['kube-apiserver', 'kube-controller-manager', 'kube-scheduler']);
/** major*1000+minor of `v1.35.4` (or of an image tag `v1.35.4-fat`); undefined for anything else. */
const minorOf = (v: string | undefined): number | undefined => {
  const m = /^v(\d+)\.(\d+)\.\d+/.exec(v ?? '');
  return m ? Number(m[1]) * 1000 + Number(m[2]) : undefined;
};

interface VersionPair {
  at: number;
  node: string;
  /** From the Node's osImage, `Talos (v1.12.6)` → `v1.12.6`. */
  talos: string;
  component: string;
  version: string;
}

/** The few fields of a PatchJob the observer reads (it does not share the product's types). */
interface WatchedJob {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; resourceVersion?: string };
  spec?: { nodeName?: string };
  status?: { phase?: string };
}
type Watched = V1Node | V1Pod | V1Lease | WatchedJob;

const isReady = (n: V1Node): boolean => n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

/** What the observer keeps of a Node: schedulability, readiness, boot, OS image, our cordon annotation, kubelet. */
function nodeStateOf(n: V1Node): NodeState {
  const info = n.status?.nodeInfo;
  return {
    unschedulable: n.spec?.unschedulable === true,
    ready: isReady(n),
    bootID: info?.bootID ?? '',
    osImage: info?.osImage ?? '',
    cordonedBy: n.metadata?.annotations?.['kangalpatch.ozalp.dk/cordoned-by'],
    kubeletVersion: info?.kubeletVersion ?? '',
  };
}

/** The observations a node's change of state makes, in order: cordon, readiness, boot (kind and detail). */
function nodeChanges(before: NodeState, state: NodeState): [ObservedKind, string][] {
  const out: [ObservedKind, string][] = [];
  if (state.unschedulable !== before.unschedulable)
    out.push([state.unschedulable ? 'cordoned' : 'uncordoned', state.cordonedBy ?? '']);
  if (state.ready !== before.ready) out.push([state.ready ? 'ready' : 'notReady', state.osImage]);
  if (state.bootID !== before.bootID) out.push(['booted', `${state.osImage} ${state.bootID}`]);
  return out;
}

const podKey = (p: V1Pod): string => `${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`;

/** The tag of a pod's first container image (`v1.35.4-fat`), or ''. */
const imageTag = (p: V1Pod): string => p.spec?.containers[0]?.image?.split(':').at(-1) ?? '';

/** The component and version a control-plane static pod runs (its image tag without -fat/-slim); undefined for other pods. */
function staticPodVersion(p: V1Pod): { component: string; version: string } | undefined {
  const component = p.metadata?.labels?.['k8s-app'] ?? '';
  const tag = imageTag(p);
  if (p.metadata?.namespace !== 'kube-system' || !STATIC_POD_COMPONENTS.has(component) || minorOf(tag) === undefined)
    return undefined;
  return { component, version: tag.replace(/-(fat|slim)$/, '') };
}

export async function startObserver(
  kc: KubeConfig,
  opts: { leaseNamespace: string; leaseLabel: string; groupLabel?: string; patchJobs?: boolean },
): Promise<Observer> {
  const events: Observation[] = [];
  const nodes = new Map<string, NodeState>();
  const podNodes = new Map<string, string>();
  const deleting = new Set<string>();
  const leases = new Map<string, { label: string; group: string; holder: string }>();
  const peaks = new Map<string, number>();
  const informers: Informer<Watched>[] = [];
  let stopped = false;
  const push = (kind: ObservedKind, node: string, detail: string): void => {
    events.push({ at: Date.now(), kind, node, detail });
  };
  // Version skew, from the watches alone: the kubelet of every node, the kube-apiserver of every control-plane node.
  const kubelets = new Map<string, string>();
  const apiServers = new Map<string, string>();
  const componentVersions = new Map<string, string>();
  const skewViolations: string[] = [];
  const versionPairs: VersionPair[] = [];
  const talosOf = new Map<string, string>();
  const pairSeen = (node: string, component: string, version: string): void => {
    const talos = talosOf.get(node);
    if (talos !== undefined) versionPairs.push({ at: Date.now(), node, talos, component, version });
  };
  const talosSeen = (node: string, osImage: string): void => {
    const talos = /\((v[^)]+)\)/.exec(osImage)?.[1];
    if (talos === undefined || talosOf.get(node) === talos) return;
    talosOf.set(node, talos);
    for (const [key, version] of componentVersions) {
      const [of, component] = key.split('\u0000');
      if (of === node && component !== undefined) pairSeen(node, component, version);
    }
  };
  const componentSeen = (node: string, component: string, version: string): void => {
    const key = `${node}\u0000${component}`;
    if (componentVersions.get(key) === version) return;
    const first = !componentVersions.has(key);
    componentVersions.set(key, version);
    pairSeen(node, component, version);
    if (component === 'kubelet') kubelets.set(node, version);
    if (component === 'kube-apiserver') apiServers.set(node, version);
    if (!first) push('componentVersion', node, `${component} ${version}`);
    const newestKubelet = Math.max(...[...kubelets.values()].map((v) => minorOf(v) ?? 0));
    const oldestApi = Math.min(...[...apiServers.values()].map((v) => minorOf(v) ?? Number.MAX_SAFE_INTEGER));
    if (apiServers.size > 0 && newestKubelet > oldestApi) {
      skewViolations.push(
        `${new Date().toISOString()}: kubelets ${JSON.stringify(Object.fromEntries(kubelets))} vs kube-apiservers ${JSON.stringify(Object.fromEntries(apiServers))}`,
      );
    }
  };

  const onNode = (type: string, n: V1Node): void => {
    const name = n.metadata?.name ?? '';
    if (type === 'DELETED') return;
    const state = nodeStateOf(n);
    const before = nodes.get(name);
    nodes.set(name, state);
    talosSeen(name, state.osImage);
    if (state.kubeletVersion !== '') componentSeen(name, 'kubelet', state.kubeletVersion);
    if (!before) return;
    for (const [kind, detail] of nodeChanges(before, state)) push(kind, name, detail);
  };
  const notePodDeletion = (type: string, p: V1Pod, key: string, node: string): void => {
    if (type === 'DELETED') {
      podNodes.delete(key);
      deleting.delete(key);
      push('podGone', node, key);
    } else if (p.metadata?.deletionTimestamp && !deleting.has(key)) {
      deleting.add(key);
      push('podDeleting', node, key);
    }
  };
  const onPod = (type: string, p: V1Pod): void => {
    const key = podKey(p);
    const node = p.spec?.nodeName ?? podNodes.get(key) ?? '';
    if (type === 'ADDED' && !podNodes.has(key)) push('podAdded', node, key);
    podNodes.set(key, node);
    const running = type === 'DELETED' ? undefined : staticPodVersion(p);
    if (running) componentSeen(node, running.component, running.version);
    notePodDeletion(type, p, key, node);
  };
  const jobPhases = new Map<string, string>();
  const jobsSeen = new Set<string>();
  const noteCreated = (type: string, name: string, node: string): void => {
    if (type === 'DELETED') jobsSeen.delete(name);
    else if (!jobsSeen.has(name)) {
      jobsSeen.add(name);
      push('jobCreated', node, name);
    }
  };
  const onJob = (type: string, j: WatchedJob): void => {
    const name = j.metadata?.name ?? '';
    const phase = j.status?.phase;
    noteCreated(type, name, j.spec?.nodeName ?? '');
    if (type === 'DELETED' || phase === undefined || jobPhases.get(name) === phase) return;
    jobPhases.set(name, phase);
    push('jobPhase', j.spec?.nodeName ?? '', `${name} ${phase}`);
  };
  const notePeak = (key: string, live: number): void => {
    peaks.set(key, Math.max(peaks.get(key) ?? 0, live));
  };
  const leaseGroup = (l: V1Lease): string =>
    opts.groupLabel === undefined ? '' : (l.metadata?.labels?.[opts.groupLabel] ?? '');
  const onLease = (type: string, l: V1Lease): void => {
    const name = l.metadata?.name ?? '';
    const label = l.metadata?.labels?.[opts.leaseLabel];
    if (label === undefined) return;
    const holder = l.spec?.holderIdentity ?? '';
    if (type === 'DELETED') {
      leases.delete(name);
      push('leaseDeleted', holder, name);
      return;
    }
    if (!leases.has(name)) push('leaseCreated', holder, name);
    const group = leaseGroup(l);
    leases.set(name, { label, group, holder });
    const live = [...leases.values()].filter((v) => v.label === label).length;
    notePeak(label, live);
    const inGroup = [...leases.values()].filter((v) => v.label === label && v.group === group).length;
    notePeak(`${label}\u0000${group}`, inGroup);
  };

  const start = async <T extends Watched>(
    path: string,
    list: () => Promise<{ items: T[] }>,
    handler: (type: string, obj: T) => void,
  ): Promise<void> => {
    const informer = makeInformer<T>(kc, path, list);
    informer.on('add', (o) => handler('ADDED', o));
    informer.on('update', (o) => handler('MODIFIED', o));
    informer.on('delete', (o) => handler('DELETED', o));
    // client-node informers (1.4 and 2.x) stop on errors other than 410 and, since 2.0, the idle
    // timeout: an observer that went blind would prove nothing.
    informer.on('error', () => {
      if (!stopped) setTimeout(() => void informer.start().catch(() => undefined), 200);
    });
    informers.push(informer);
    await informer.start();
  };
  const core = kc.makeApiClient(CoreV1Api);
  const coordination = kc.makeApiClient(CoordinationV1Api);
  await start('/api/v1/nodes', () => core.listNode(), onNode);
  await start('/api/v1/pods', () => core.listPodForAllNamespaces(), onPod);
  await start(
    `/apis/coordination.k8s.io/v1/namespaces/${opts.leaseNamespace}/leases`,
    () => coordination.listNamespacedLease({ namespace: opts.leaseNamespace }),
    onLease,
  );
  if (opts.patchJobs) {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const list = (): Promise<{ items: WatchedJob[] }> =>
      custom.listClusterCustomObject({
        group: 'kangalpatch.ozalp.dk',
        version: 'v1alpha1',
        plural: 'patchjobs',
      }) as Promise<{ items: WatchedJob[] }>;
    await start('/apis/kangalpatch.ozalp.dk/v1alpha1/patchjobs', list, onJob);
  }

  return {
    events,
    of: (node, kinds) => events.filter((e) => e.node === node && (!kinds || kinds.includes(e.kind))),
    node: (name) => nodes.get(name),
    maxConcurrentLeases: (label) => peaks.get(label) ?? 0,
    maxConcurrentLeasesInGroup: (label, group) => peaks.get(`${label}\u0000${group}`) ?? 0,
    liveLeases: () => [...leases.keys()],
    skewViolations,
    versionPairs,
    stop: () => {
      stopped = true;
      for (const i of informers) void i.stop();
    },
  };
}
