// The lab's side of a Kubernetes upgrade (`talosctl upgrade-k8s`): a Talos client over real
// gRPC + mTLS reads a node's machine config, applies it with one image changed (NO_REBOOT), and
// the test watches the real kube-apiserver show what a Talos cluster would: static pods replaced
// and Ready again with the new config version, the kubelet restarting on its new version, the
// kube-proxy DaemonSet rolled node by node; plus the faults, the protobuf specs, and COSI namespaces.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import {
  AppsV1Api,
  CoreV1Api,
  Watch,
  type KubeConfig,
  type V1DaemonSet,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import {
  ApplyConfigurationRequest_Mode,
  MachineServiceService,
  RebootRequest_Mode,
} from '../../proto/gen/machine/machine.js';
import { MachineConfigSpec } from '../../proto/gen/resource/config/config.js';
import {
  APIServerConfigSpec,
  ControllerManagerConfigSpec,
  KubeletSpecSpec,
  SchedulerConfigSpec,
} from '../../proto/gen/resource/definitions/k8s/k8s.js';
import { ServiceSpec } from '../../proto/gen/resource/definitions/v1alpha1/v1alpha1.js';
import type { Resource } from '../../proto/gen/v1alpha1/resource.js';
import {
  EventType,
  StateService,
  type GetRequest,
  type GetResponse,
  type WatchResponse,
} from '../../proto/gen/v1alpha1/state.js';
import { CONFIG_VERSION_ANNOTATION, describeFleet, KUBE_PROXY, startFleet, type Fleet } from '../lab/fleet/index.js';
import { loadKubeConfig } from '../lab/kube.js';
import { type LabDir, makeLabDir } from '../lab/process.js';
import { startTalosSimulator, type TalosSimulator } from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';
import { sharedCluster } from '../support/shared-cluster.js';
import { rawClient, streamed, targeting, unary } from './talos-raw.js';

const WAIT = { timeoutMs: 30_000, intervalMs: 50 };

const isReady = (p: V1Pod): boolean =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const nodeReady = (n: V1Node): string | undefined => n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
/** The image of a DaemonSet's pod template (its first container). */
const templateImage = (ds: V1DaemonSet): string | undefined => ds.spec?.template.spec?.containers[0]?.image;
const generationOf = (ds: V1DaemonSet): number => ds.metadata?.generation ?? 0;

/** Every event of a Kubernetes watch, in arrival order, until stopped. */
async function recordWatch<T>(
  kc: KubeConfig,
  path: string,
  query: Record<string, string>,
): Promise<{ events: { type: string; obj: T }[]; stop: () => void }> {
  const events: { type: string; obj: T }[] = [];
  const abort = await new Watch(kc).watch(
    path,
    query,
    (type, obj) => events.push({ type, obj: obj as T }),
    () => undefined,
  );
  return { events, stop: () => abort.abort() };
}

/** The config with the value at a dotted path replaced (the rest of the document as it was). */
function withValue(config: string, path: string, value: string): string {
  const doc = parseDocument(config);
  doc.setIn(path.split('.'), value);
  return doc.toString({ lineWidth: 0 });
}

/**
 * Replays a kube-proxy pod watch: after each event, how many nodes have no Ready pod (the worst
 * seen once the initial listing is in), and the nodes in the order they got a pod of `image`; a
 * new pod must only appear once the earlier new pods are Ready (maxUnavailable 1).
 */
function replayRollout(
  events: { type: string; obj: V1Pod }[],
  nodeNames: string[],
  image: string,
): { worst: number; order: string[] } {
  const current = new Map<string, V1Pod>();
  let worst = 0;
  let replayed = false;
  const order: string[] = [];
  for (const { type, obj } of events) {
    const uid = obj.metadata?.uid ?? '';
    if (type === 'DELETED') current.delete(uid);
    else current.set(uid, obj);
    if (type === 'ADDED' && obj.spec?.containers[0]?.image === image) {
      order.push(obj.spec.nodeName ?? '');
      const earlier = [...current.values()].filter(
        (p) => p.metadata?.uid !== uid && p.spec?.containers[0]?.image === image,
      );
      assert.ok(earlier.every(isReady), `a new pod on ${obj.spec.nodeName} only once the earlier new pods are Ready`);
    }
    const unavailable = nodeNames.filter(
      (n) => ![...current.values()].some((p) => p.spec?.nodeName === n && isReady(p)),
    ).length;
    if (unavailable === 0) replayed = true; // the watch's initial ADDED events are in
    if (replayed) worst = Math.max(worst, unavailable);
  }
  return { worst, order };
}

describe('Lab: a Kubernetes upgrade as a Talos cluster shows it (raw gRPC + real kube-apiserver)', function () {
  this.timeout(180_000);
  const nodes = describeFleet({
    nodes: 4,
    controlPlanes: 2,
    prefix: 'k8sup',
    subnet: 83,
    kubernetesVersion: 'v1.35.2',
  });
  const [cp1, cp2, w1] = nodes.map((n) => n.name) as [string, string, string, string];
  const ip = (name: string): string => nodes.find((n) => n.name === name)?.internalIP ?? '';
  let dir: LabDir;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let fleet: Fleet;
  let sim: TalosSimulator;
  let c: grpc.Client;

  before(async function () {
    const cluster = await sharedCluster();
    kc = loadKubeConfig(cluster.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    dir = makeLabDir('lab-k8s-upgrade');
    fleet = await startFleet({ kubeconfigPath: cluster.kubeconfigPath, nodes, kubeProxy: true });
    sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: false });
    c = rawClient(sim);
  });

  after(async function () {
    c?.close();
    await sim?.stop();
    await fleet?.stop();
    dir?.remove();
  });

  async function get(node: string, namespace: string, type: string, id: string): Promise<Resource | string> {
    const res = await unary<GetRequest, GetResponse>(
      c,
      StateService.get,
      { namespace, type, id, options: undefined },
      targeting(node),
    );
    if (typeof res === 'string') return res;
    assert.ok(res.resource, `${type} ${id} on ${node}`);
    return res.resource;
  }
  async function mustGet(node: string, namespace: string, type: string, id: string): Promise<Resource> {
    const r = await get(node, namespace, type, id);
    if (typeof r === 'string') assert.fail(`Get ${namespace}/${type}/${id} on ${node}: ${r}`);
    return r;
  }
  const protoSpec = (r: Resource): Buffer => r.spec?.protoSpec ?? Buffer.alloc(0);
  const readConfig = async (node: string): Promise<string> =>
    Buffer.from(
      MachineConfigSpec.decode(protoSpec(await mustGet(node, 'config', 'MachineConfigs.config.talos.dev', 'v1alpha1')))
        .yamlMarshalled,
    ).toString('utf8');
  const apply = (node: string, config: string): Promise<unknown> =>
    unary(
      c,
      MachineServiceService.applyConfiguration,
      {
        data: Buffer.from(config),
        mode: ApplyConfigurationRequest_Mode.NO_REBOOT,
        dryRun: false,
        tryModeTimeout: undefined,
      },
      targeting(ip(node)),
    );
  const mirror = (component: string, node: string): Promise<V1Pod> =>
    core.readNamespacedPod({ namespace: 'kube-system', name: `${component}-${node}` });
  /** The resource version of cp1's kube-apiserver config (APIServerConfigs). */
  const apiServerConfigVersion = async (): Promise<string | undefined> =>
    (await mustGet(cp1, 'controlplane', 'APIServerConfigs.kubernetes.talos.dev', 'kube-apiserver')).metadata?.version;
  /** The simulator's record since `since`: one ApplyConfiguration on cp1 moving the apiserver image, no reboot, one config read. */
  const assertApiServerImageApplied = (since: number, image: string): void => {
    const [call] = sim.callLog({ node: cp1, since, method: 'MachineService.ApplyConfiguration' });
    assert.deepEqual(call?.imageChanges, [
      { path: 'cluster.apiServer.image', from: 'registry.k8s.io/kube-apiserver:v1.35.2', to: image },
    ]);
    assert.deepEqual([call?.applyMode, call?.result, call?.effect], ['NO_REBOOT', 'ok', 'config applied (changed)']);
    assert.deepEqual(
      sim.callLog({ node: cp1, since, method: 'State.Get' }).map((r) => [r.resource, r.result]),
      [['config/MachineConfigs.config.talos.dev/v1alpha1', 'ok']],
    );
  };

  it('serves KubeletSpec, Service and the control-plane configs with protobuf specs a Talos client decodes', async function () {
    const kubelet = KubeletSpecSpec.decode(
      protoSpec(await mustGet(w1, 'k8s', 'KubeletSpecs.kubernetes.talos.dev', 'kubelet')),
    );
    assert.equal(kubelet.image, 'ghcr.io/siderolabs/kubelet:v1.35.2');
    assert.equal(kubelet.expectedNodename, w1);
    const service = ServiceSpec.decode(
      protoSpec(await mustGet(w1, 'runtime', 'Services.v1alpha1.talos.dev', 'kubelet')),
    );
    assert.deepEqual(service, { running: true, healthy: true, unknown: false });
    const apiServer = APIServerConfigSpec.decode(
      protoSpec(await mustGet(cp1, 'controlplane', 'APIServerConfigs.kubernetes.talos.dev', 'kube-apiserver')),
    );
    assert.equal(apiServer.image, 'registry.k8s.io/kube-apiserver:v1.35.2');
    assert.equal(apiServer.advertisedAddress, ip(cp1));
    const cm = ControllerManagerConfigSpec.decode(
      protoSpec(
        await mustGet(cp1, 'controlplane', 'ControllerManagerConfigs.kubernetes.talos.dev', 'kube-controller-manager'),
      ),
    );
    assert.deepEqual([cm.enabled, cm.image], [true, 'registry.k8s.io/kube-controller-manager:v1.35.2']);
    const sched = SchedulerConfigSpec.decode(
      protoSpec(await mustGet(cp1, 'controlplane', 'SchedulerConfigs.kubernetes.talos.dev', 'kube-scheduler')),
    );
    assert.deepEqual([sched.enabled, sched.image], [true, 'registry.k8s.io/kube-scheduler:v1.35.2']);
  });

  it('a known type in another existing namespace: Get NOT_FOUND, List empty; an unknown namespace stays PERMISSION_DENIED', async function () {
    assert.equal(await get(w1, 'runtime', 'KubeletSpecs.kubernetes.talos.dev', 'kubelet'), 'NOT_FOUND');
    assert.deepEqual(
      await streamed(
        c,
        StateService.list,
        { namespace: 'runtime', type: 'KubeletSpecs.kubernetes.talos.dev', options: undefined },
        targeting(w1),
      ),
      [],
    );
    assert.equal(
      await get(w1, 'no-such-namespace', 'KubeletSpecs.kubernetes.talos.dev', 'kubelet'),
      'PERMISSION_DENIED',
    );
    assert.equal(await get(w1, 'k8s', 'NoSuchTypes.kubernetes.talos.dev', 'kubelet'), 'PERMISSION_DENIED');
  });

  it('a new apiserver image: the mirror pod is replaced (new UID), not Ready, then Ready with the image and config version; other static pods untouched', async function () {
    const before = await mirror('kube-apiserver', cp1);
    const others = await Promise.all([
      mirror('kube-controller-manager', cp1),
      mirror('kube-scheduler', cp1),
      mirror('kube-apiserver', cp2),
    ]);
    const versionBefore = Number(await apiServerConfigVersion());
    const watch = await recordWatch<V1Pod>(kc, '/api/v1/namespaces/kube-system/pods', {
      labelSelector: 'k8s-app=kube-apiserver',
    });
    const image = 'registry.k8s.io/kube-apiserver:v1.36.3';
    const since = sim.lastCallSeq();
    try {
      const res = await apply(cp1, withValue(await readConfig(cp1), 'cluster.apiServer.image', image));
      assert.notEqual(typeof res, 'string', `ApplyConfiguration: ${String(res)}`);
      const version = (await apiServerConfigVersion()) ?? '';
      assert.equal(Number(version), versionBefore + 1, 'the config resource moved one version');
      const after = await waitFor(
        async () => {
          const p = await mirror('kube-apiserver', cp1);
          return isReady(p) && p.spec?.containers[0]?.image === image ? p : undefined;
        },
        { ...WAIT, description: 'new kube-apiserver mirror pod Ready' },
      );
      assert.notEqual(after.metadata?.uid, before.metadata?.uid);
      assert.equal(after.metadata?.annotations?.[CONFIG_VERSION_ANNOTATION], version);
      assert.equal(after.status?.hostIP, ip(cp1));

      const newUid = after.metadata?.uid;
      // The read above may see Ready before the watch delivers that event: wait for the watch to catch up.
      await waitFor(() => watch.events.some((e) => e.obj.metadata?.uid === newUid && isReady(e.obj)) || undefined, {
        ...WAIT,
        description: 'the watch delivers the new pod Ready',
      });
      const seen = watch.events.filter((e) => e.obj.status?.hostIP === ip(cp1) || e.obj.spec?.nodeName === cp1);
      const notReadyAt = seen.findIndex(
        (e) => e.obj.metadata?.uid === newUid && e.obj.status?.hostIP === ip(cp1) && !isReady(e.obj),
      );
      const readyAt = seen.findIndex((e) => e.obj.metadata?.uid === newUid && isReady(e.obj));
      const deletedAt = seen.findIndex((e) => e.type === 'DELETED' && e.obj.metadata?.uid === before.metadata?.uid);
      assert.ok(
        deletedAt >= 0 && notReadyAt > deletedAt && readyAt > notReadyAt,
        `old pod deleted, new one not Ready, then Ready: ${JSON.stringify(seen.map((e) => [e.type, e.obj.metadata?.uid === newUid ? 'new' : 'old', isReady(e.obj)]))}`,
      );
      assert.ok(
        seen
          .filter((e) => e.obj.metadata?.uid === newUid)
          .every(
            (e) =>
              e.obj.spec?.containers[0]?.image === image &&
              e.obj.metadata?.annotations?.[CONFIG_VERSION_ANNOTATION] === version,
          ),
      );
    } finally {
      watch.stop();
    }
    const now = await Promise.all([
      mirror('kube-controller-manager', cp1),
      mirror('kube-scheduler', cp1),
      mirror('kube-apiserver', cp2),
    ]);
    assert.deepEqual(
      now.map((p) => p.metadata?.uid),
      others.map((p) => p.metadata?.uid),
      'controller-manager, scheduler and the other node untouched',
    );

    assertApiServerImageApplied(since, image);
  });

  it('a new kubelet image (variant suffix): Services/kubelet goes away and comes back healthy; the Node reports the version, NotReady briefly, then Ready', async function () {
    const events: { type: EventType; spec: ServiceSpec | undefined }[] = [];
    const cosi = c.makeServerStreamRequest(
      StateService.watch.path,
      StateService.watch.requestSerialize,
      StateService.watch.responseDeserialize,
      { namespace: 'runtime', type: 'Services.v1alpha1.talos.dev', id: 'kubelet', options: undefined, apiVersion: 1 },
      targeting(w1),
    );
    cosi.on('data', (m: WatchResponse) => {
      for (const e of m.event)
        events.push({
          type: e.eventType,
          spec: e.resource?.spec ? ServiceSpec.decode(e.resource.spec.protoSpec) : undefined,
        });
    });
    cosi.on('error', () => undefined);
    const nodeWatch = await recordWatch<V1Node>(kc, '/api/v1/nodes', { fieldSelector: `metadata.name=${w1}` });
    try {
      await waitFor(() => events.length > 0 || undefined, { ...WAIT, description: 'initial kubelet service event' });
      const res = await apply(
        w1,
        withValue(await readConfig(w1), 'machine.kubelet.image', 'ghcr.io/siderolabs/kubelet:v1.36.3-fat'),
      );
      assert.notEqual(typeof res, 'string', `ApplyConfiguration: ${String(res)}`);
      await waitFor(
        async () => {
          const n = await core.readNode({ name: w1 });
          return n.status?.nodeInfo?.kubeletVersion === 'v1.36.3' && nodeReady(n) === 'True';
        },
        { ...WAIT, description: `${w1} Ready on kubelet v1.36.3` },
      );
      await waitFor(
        () =>
          events.slice(events.findIndex((e) => e.type === EventType.DESTROYED) + 1).some((e) => e.spec?.healthy) ||
          undefined,
        {
          ...WAIT,
          description: 'kubelet service healthy again after going away',
        },
      );
    } finally {
      cosi.cancel();
      nodeWatch.stop();
    }
    const kinds = events.map((e) =>
      e.type === EventType.DESTROYED ? 'destroyed' : e.spec?.healthy ? 'healthy' : e.spec?.running ? 'running' : 'down',
    );
    assert.equal(kinds[0], 'healthy', `first the running kubelet: ${kinds.join(',')}`);
    const destroyed = kinds.indexOf('destroyed');
    assert.ok(
      destroyed > 0 &&
        kinds.indexOf('running', destroyed) > destroyed &&
        kinds.indexOf('healthy', destroyed) > kinds.indexOf('running', destroyed),
      `destroyed, back running, then healthy: ${kinds.join(',')}`,
    );

    const states = nodeWatch.events.map((e) => `${e.obj.status?.nodeInfo?.kubeletVersion}/${nodeReady(e.obj)}`);
    const notReady = states.indexOf('v1.36.3/False');
    assert.ok(
      notReady >= 0 && states.indexOf('v1.36.3/True', notReady) > notReady,
      `NotReady on the new version, then Ready: ${states.join(',')}`,
    );
    assert.ok(!states.includes('v1.35.2/False'), 'the old kubelet never reported NotReady');
    assert.equal(
      KubeletSpecSpec.decode(protoSpec(await mustGet(w1, 'k8s', 'KubeletSpecs.kubernetes.talos.dev', 'kubelet'))).image,
      'ghcr.io/siderolabs/kubelet:v1.36.3-fat',
    );
  });

  it('a new proxy image in a control-plane config rolls kube-system/kube-proxy node by node, at most one node unavailable', async function () {
    const ds0 = await apps.readNamespacedDaemonSet(KUBE_PROXY);
    assert.equal(templateImage(ds0), 'registry.k8s.io/kube-proxy:v1.35.2');
    assert.deepEqual(
      [ds0.status?.desiredNumberScheduled, ds0.status?.numberAvailable, ds0.status?.updatedNumberScheduled],
      [4, 4, 4],
    );
    const image = 'registry.k8s.io/kube-proxy:v1.36.3';
    const pods = await recordWatch<V1Pod>(kc, `/api/v1/namespaces/${KUBE_PROXY.namespace}/pods`, {
      labelSelector: 'k8s-app=kube-proxy',
    });
    const statuses = await recordWatch<V1DaemonSet>(kc, `/apis/apps/v1/namespaces/${KUBE_PROXY.namespace}/daemonsets`, {
      fieldSelector: `metadata.name=${KUBE_PROXY.name}`,
    });
    let done: V1DaemonSet;
    try {
      await apply(cp1, withValue(await readConfig(cp1), 'cluster.proxy.image', image));
      done = await waitFor(
        async () => {
          const ds = await apps.readNamespacedDaemonSet(KUBE_PROXY);
          const s = ds.status;
          const templated = templateImage(ds) === image;
          return templated &&
            ds.metadata?.generation === s?.observedGeneration &&
            s?.updatedNumberScheduled === 4 &&
            s.numberAvailable === 4 &&
            s.desiredNumberScheduled === 4
            ? ds
            : undefined;
        },
        { ...WAIT, description: 'kube-proxy rollout done' },
      );
      assert.equal(templateImage(done), image);
      assert.ok(generationOf(done) > generationOf(ds0), 'the template change bumped the generation');
      const live = (
        await core.listNamespacedPod({ namespace: KUBE_PROXY.namespace, labelSelector: 'k8s-app=kube-proxy' })
      ).items;
      assert.deepEqual(live.map((p) => p.spec?.nodeName).sort(), nodes.map((n) => n.name).sort(), 'one pod per node');
      assert.ok(
        live.every((p) => p.spec?.containers[0]?.image === image && isReady(p)),
        'every pod new and Ready once the status says done',
      );
      assert.ok(
        live.every(
          (p) =>
            p.metadata?.ownerReferences?.[0]?.kind === 'DaemonSet' &&
            p.metadata.ownerReferences[0].uid === ds0.metadata?.uid,
        ),
      );
    } finally {
      pods.stop();
      statuses.stop();
    }
    const { worst, order } = replayRollout(
      pods.events,
      nodes.map((n) => n.name),
      image,
    );
    assert.equal(worst, 1, 'exactly one node at a time without a Ready kube-proxy');
    assert.deepEqual(order, nodes.map((n) => n.name).sort(), 'each node once, in order');
    const doneEarly = statuses.events.filter((e) => {
      const s = e.obj.status;
      return (
        e.obj.metadata?.generation === s?.observedGeneration &&
        s?.updatedNumberScheduled === 4 &&
        s.numberAvailable === 4
      );
    });
    assert.ok(
      doneEarly.every((e) => templateImage(e.obj) === image || e === statuses.events[0]),
      'no status claims the new template done before it is',
    );
    assert.ok(
      statuses.events.every((e) => (e.obj.status?.numberUnavailable ?? 0) <= 1),
      'numberUnavailable never above 1',
    );

    const gen = done.metadata?.generation;
    await apply(cp2, withValue(await readConfig(cp2), 'cluster.proxy.image', image));
    await waitFor(() => sim.node(cp2).history.includes(`kube-proxy image ${image} published`) || undefined, {
      ...WAIT,
      description: 'second CP published its proxy image',
    });
    assert.equal(
      (await apps.readNamespacedDaemonSet(KUBE_PROXY)).metadata?.generation,
      gen,
      'the same image on another CP changes nothing',
    );
  });
  it('faults: a static pod that never gets Ready, a rejected ApplyConfiguration, an unreadable config; each in the call record', async function () {
    // (a) the scheduler's new mirror pod stays not Ready until the fault is cleared.
    const image = 'registry.k8s.io/kube-scheduler:v1.36.3';
    sim.faults.set(cp2, { staticPodNeverReady: 'kube-scheduler' });
    await apply(cp2, withValue(await readConfig(cp2), 'cluster.scheduler.image', image));
    await waitFor(() => sim.node(cp2).history.includes('kube-scheduler held not ready') || undefined, {
      ...WAIT,
      description: 'scheduler held not Ready',
    });
    const held = await mirror('kube-scheduler', cp2);
    assert.deepEqual([held.spec?.containers[0]?.image, isReady(held)], [image, false]);
    sim.faults.set(cp2, { staticPodNeverReady: undefined });
    const ready = await waitFor(
      async () => {
        const p = await mirror('kube-scheduler', cp2);
        return isReady(p) ? p : undefined;
      },
      { ...WAIT, description: 'scheduler Ready once the fault is cleared' },
    );
    assert.equal(ready.metadata?.uid, held.metadata?.uid, 'the same pod becomes Ready');

    // (b) a rejected apply changes nothing.
    const since = sim.lastCallSeq();
    const before = await readConfig(cp2);
    const historyBefore = sim.node(cp2).history.length;
    const message = '1 error occurred:\n\t* cluster.apiServer.image: invalid image reference "nope:::"\n';
    sim.faults.set(cp2, { applyConfigError: { code: grpc.status.INVALID_ARGUMENT, message } });
    assert.equal(await apply(cp2, withValue(before, 'cluster.apiServer.image', 'nope:::')), 'INVALID_ARGUMENT');
    assert.equal(await readConfig(cp2), before, 'the config is unchanged');
    assert.deepEqual(sim.node(cp2).history.slice(historyBefore), [], 'nothing happened on the node');
    const [rejected] = sim.callLog({ node: cp2, since, method: 'MachineService.ApplyConfiguration' });
    assert.deepEqual(rejected?.result, { code: grpc.status.INVALID_ARGUMENT, codeName: 'INVALID_ARGUMENT', message });
    assert.deepEqual(rejected?.imageChanges, [
      { path: 'cluster.apiServer.image', from: 'registry.k8s.io/kube-apiserver:v1.35.2', to: 'nope:::' },
    ]);
    sim.faults.set(cp2, { applyConfigError: undefined });

    // (c) the config cannot be read: Get and List fail with the fault, and are recorded.
    const readSince = sim.lastCallSeq();
    sim.faults.set(w1, { configReadError: { code: grpc.status.UNAVAILABLE, message: 'config is being updated' } });
    try {
      assert.equal(await get(w1, 'config', 'MachineConfigs.config.talos.dev', 'v1alpha1'), 'UNAVAILABLE');
      assert.equal(
        await streamed(
          c,
          StateService.list,
          { namespace: 'config', type: 'MachineConfigs.config.talos.dev', options: undefined },
          targeting(w1),
        ),
        'UNAVAILABLE',
      );
      assert.notEqual(
        typeof (await get(w1, 'k8s', 'KubeletSpecs.kubernetes.talos.dev', 'kubelet')),
        'string',
        'other resources still read',
      );
    } finally {
      sim.faults.clear(w1);
    }
    assert.equal(typeof (await get(w1, 'config', 'MachineConfigs.config.talos.dev', 'v1alpha1')), 'object');
    const reads = sim
      .callLog({ node: w1, since: readSince })
      .map((r) => [r.method, r.resource, typeof r.result === 'string' ? r.result : r.result.codeName]);
    assert.deepEqual(reads, [
      ['State.Get', 'config/MachineConfigs.config.talos.dev/v1alpha1', 'UNAVAILABLE'],
      ['State.List', 'config/MachineConfigs.config.talos.dev/', 'UNAVAILABLE'],
      ['State.Get', 'config/MachineConfigs.config.talos.dev/v1alpha1', 'ok'],
    ]);
  });

  it('after a reboot the mirror pods carry the restarted config versions again (no stale match for the next upgrade)', async function () {
    const before = await mirror('kube-apiserver', cp1);
    assert.notEqual(
      before.metadata?.annotations?.[CONFIG_VERSION_ANNOTATION],
      '1',
      'the apiserver was upgraded earlier',
    );
    const boots = sim.node(cp1).reboots;
    assert.notEqual(
      typeof (await unary(c, MachineServiceService.reboot, { mode: RebootRequest_Mode.DEFAULT }, targeting(cp1))),
      'string',
    );
    await waitFor(
      () => (sim.node(cp1).reboots > boots && sim.node(cp1).history.at(-1)?.startsWith('running')) || undefined,
      { ...WAIT, description: `${cp1} rebooted and running` },
    );
    const version = (await mustGet(cp1, 'controlplane', 'APIServerConfigs.kubernetes.talos.dev', 'kube-apiserver'))
      .metadata?.version;
    const after = await mirror('kube-apiserver', cp1);
    assert.equal(version, '1', 'resource versions restart after a boot');
    assert.equal(after.metadata?.annotations?.[CONFIG_VERSION_ANNOTATION], version);
    assert.equal(after.spec?.containers[0]?.image, 'registry.k8s.io/kube-apiserver:v1.36.3');
    assert.ok(isReady(after));
  });

  it('the fleet recorded no background errors', function () {
    assert.deepEqual(fleet.workloads.errors, []);
  });
});
