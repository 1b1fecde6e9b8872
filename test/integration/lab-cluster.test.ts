// Self-tests of the lab's control plane and fleet: the parts every other test stands on.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  PolicyV1Api,
  type KubeConfig,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { sharedCluster } from '../support/shared-cluster.js';
import { startFleet, describeFleet, type Fleet } from '../lab/fleet/index.js';
import { WORKLOAD_LABEL } from '../lab/fleet/objects.js';
import { apiStatus, loadKubeConfig, mergePatch } from '../lab/kube.js';
import { waitFor } from '../lab/wait.js';
import type { LabCluster } from '../lab/cluster/index.js';

/** The image of a pod's first container. */
const imageOf = (p: V1Pod): string | undefined => p.spec?.containers[0]?.image;
/** The machine config version a mirror pod was made from (its talos.dev/config-version annotation). */
const configVersionOf = (p: V1Pod): string | undefined => p.metadata?.annotations?.['talos.dev/config-version'];

describe('lab: control plane and fleet', function () {
  this.timeout(180_000);
  let cluster: LabCluster;
  let fleet: Fleet;
  let core: CoreV1Api;
  let policy: PolicyV1Api;
  let apps: AppsV1Api;
  let kc: KubeConfig;
  const ns = 'lab-selftest';

  before(async function () {
    cluster = await sharedCluster();
    kc = loadKubeConfig(cluster.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    policy = kc.makeApiClient(PolicyV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    fleet = await startFleet({
      kubeconfigPath: cluster.kubeconfigPath,
      nodes: describeFleet({ nodes: 4, controlPlanes: 1, prefix: 'selftest', subnet: 20 }),
      workloads: [
        { namespace: ns, name: 'web', kind: 'replicaset', replicas: 2, pdb: { minAvailable: 2 } },
        { namespace: ns, name: 'agent', kind: 'daemonset' },
        { namespace: ns, name: 'bare', kind: 'bare', replicas: 1 },
      ],
      rescheduleDelayMs: 300,
    });
  });

  after(async () => fleet?.stop());

  const webPods = async (): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: ns, labelSelector: `${WORKLOAD_LABEL}=web` })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    );
  const isReady = (p: V1Pod): boolean =>
    p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const evict = (pod: V1Pod): Promise<unknown> =>
    core.createNamespacedPodEviction({
      namespace: ns,
      name: pod.metadata?.name ?? '',
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: pod.metadata?.name ?? '', namespace: ns } },
    });

  // First: it reads the state startFleet returned with, before any other case moves it.
  it("startFleet returns with each PDB already counting its workload's pods healthy (an eviction right after the start meets a settled PDB)", async () => {
    const pdb = await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'web' });
    assert.equal(pdb.status?.observedGeneration, pdb.metadata?.generation);
    assert.deepEqual([pdb.status?.expectedPods, pdb.status?.currentHealthy, pdb.status?.disruptionsAllowed], [2, 2, 0]);
  });

  it('registered nodes carry no condition taint and have their kube-node-lease Lease', async () => {
    const nodes = (await core.listNode({ labelSelector: 'lab.kangalpatch.io/simulated=true' })).items.filter(
      (n: V1Node) => n.metadata?.name?.startsWith('selftest-'),
    );
    assert.equal(nodes.length, 4);
    for (const n of nodes)
      assert.deepEqual(
        (n.spec?.taints ?? []).filter((t) => t.key.startsWith('node.kubernetes.io/')),
        [],
        n.metadata?.name,
      );
    const leases = kc.makeApiClient(CoordinationV1Api);
    for (const n of nodes)
      assert.equal(
        (await leases.readNamespacedLease({ namespace: 'kube-node-lease', name: n.metadata?.name ?? '' })).spec
          ?.holderIdentity,
        n.metadata?.name,
      );
  });

  it('the real kubectl lists the fleet with Talos node info', () => {
    const out = execFileSync(
      cluster.kubectl,
      [
        '--kubeconfig',
        cluster.kubeconfigPath,
        'get',
        'nodes',
        '-l',
        'lab.kangalpatch.io/simulated=true',
        '-o',
        'wide',
        '--no-headers',
      ],
      { encoding: 'utf8' },
    );
    const rows = out
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('selftest-'));
    assert.equal(rows.length, 4, out);
    for (const row of rows) {
      assert.match(row, /\sReady\s/);
      assert.match(row, /Talos \(v1\.12\.4\)/);
      assert.match(row, /127\.20\.0\.\d+/);
    }
  });

  it('eviction of a PDB-covered pod is refused (429) while disruptionsAllowed is 0 and succeeds once positive', async () => {
    await waitFor(async () => ((await webPods()).filter(isReady).length === 2 ? true : undefined), {
      timeoutMs: 20_000,
      description: 'two ready web pods',
    });
    await waitFor(
      async () => {
        const pdb = await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'web' });
        return pdb.status?.currentHealthy === 2 && pdb.status.observedGeneration === pdb.metadata?.generation
          ? true
          : undefined;
      },
      { timeoutMs: 20_000, description: 'PDB web to count two healthy pods' },
    );
    const [victim] = await webPods();
    assert.ok(victim);
    await assert.rejects(evict(victim), (err: unknown) => apiStatus(err) === 429);

    await policy.patchNamespacedPodDisruptionBudget(
      { namespace: ns, name: 'web', body: { spec: { minAvailable: 1 } } },
      mergePatch,
    );
    await waitFor(
      async () =>
        (await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name: 'web' })).status?.disruptionsAllowed ===
        1
          ? true
          : undefined,
      {
        timeoutMs: 20_000,
        description: 'disruptionsAllowed to become 1',
      },
    );
    await evict(victim);
    // The fleet finishes the deletion (grace 0) and a replacement appears on another node.
    const replacedVictim = (pods: V1Pod[]): boolean =>
      pods.length === 2 && pods.every(isReady) && !pods.some((p) => p.metadata?.name === victim.metadata?.name);
    await waitFor(async () => (replacedVictim(await webPods()) ? true : undefined), {
      timeoutMs: 20_000,
      description: 'the evicted web pod to be replaced',
    });
  });

  it("a ReplicaSet pod deleted while the fleet's watch was down is replaced once the watch resumes, from its DELETED event (no replay, no recount)", async () => {
    const [victim] = await webPods();
    assert.ok(victim);
    const recounts = fleet.workloads.resyncs.begun;
    fleet.workloads.dropWatches();
    await core.deleteNamespacedPod({
      namespace: ns,
      name: victim.metadata?.name ?? '',
      body: { gracePeriodSeconds: 0 },
    });
    const replacedVictim = (pods: V1Pod[]): boolean =>
      pods.length === 2 && pods.every(isReady) && !pods.some((p) => p.metadata?.name === victim.metadata?.name);
    await waitFor(async () => (replacedVictim(await webPods()) ? true : undefined), {
      timeoutMs: 20_000,
      description: 'the web ReplicaSet back at two ready pods',
    });
    assert.equal(
      fleet.workloads.resyncs.begun,
      recounts,
      'the watch resumed from its resourceVersion: nothing replayed, nothing recounted',
    );
  });

  it("a ReplicaSet pod still terminating when the fleet's watch starts over (a replay, as after 410 Gone) is replaced once, when it goes (chaos seed 3661)", async () => {
    const [victim] = await webPods();
    const name = victim?.metadata?.name ?? '';
    assert.ok(victim);
    // A finalizer holds the pod terminating across the watch restart, as a slow container would.
    await core.patchNamespacedPod(
      { namespace: ns, name, body: { metadata: { finalizers: ['lab.kangalpatch.test/hold'] } } },
      mergePatch,
    );
    await core.deleteNamespacedPod({ namespace: ns, name, body: { gracePeriodSeconds: 0 } });
    const begun = fleet.workloads.resyncs.begun;
    fleet.workloads.dropWatches({ replay: true });
    await waitFor(() => Promise.resolve(fleet.workloads.resyncs.done > begun ? true : undefined), {
      timeoutMs: 20_000,
      description: 'the fleet to count replicas after its pod watch restarted',
    });
    assert.equal((await webPods()).length, 1, 'no replacement yet: the terminating pod is replaced when it goes');
    await core.patchNamespacedPod({ namespace: ns, name, body: { metadata: { finalizers: null } } }, mergePatch);
    const replacedVictim = (pods: V1Pod[]): boolean =>
      pods.length === 2 && pods.every(isReady) && !pods.some((p) => p.metadata?.name === name);
    await waitFor(async () => (replacedVictim(await webPods()) ? true : undefined), {
      timeoutMs: 20_000,
      description: 'the web ReplicaSet back at two ready pods, not three',
    });
    const all = await core.listNamespacedPod({ namespace: ns, labelSelector: `${WORKLOAD_LABEL}=web` });
    assert.equal(all.items.length, 2, `web pods: ${all.items.map((p) => p.metadata?.name ?? '').join(', ')}`);
  });

  it('a ReplicaSet replacement whose create fails (a ResourceQuota here; an apiserver restart in chaos seed 4619) is made once creates work again, once', async () => {
    const [victim] = await webPods();
    assert.ok(victim);
    // Every pod create in the namespace refused; a probe pod says when the quota is in force.
    await core.createNamespacedResourceQuota({
      namespace: ns,
      body: { metadata: { name: 'no-pods' }, spec: { hard: { pods: '0' } } },
    });
    // Quota admission reads the status, which the lab's controller manager does not compute.
    await core.patchNamespacedResourceQuotaStatus(
      { namespace: ns, name: 'no-pods', body: { status: { hard: { pods: '0' }, used: { pods: '0' } } } },
      mergePatch,
    );
    try {
      await waitFor(
        async () => {
          try {
            await core.createNamespacedPod({
              namespace: ns,
              body: { metadata: { name: 'quota-probe' }, spec: { containers: [{ name: 'c', image: 'probe' }] } },
            });
          } catch (err) {
            return apiStatus(err) === 403 ? true : undefined;
          }
          await core.deleteNamespacedPod({ namespace: ns, name: 'quota-probe', body: { gracePeriodSeconds: 0 } });
          return undefined;
        },
        { timeoutMs: 20_000, description: 'the quota to refuse pod creates' },
      );
      const failed = fleet.workloads.replacements.failed;
      await core.deleteNamespacedPod({
        namespace: ns,
        name: victim.metadata?.name ?? '',
        body: { gracePeriodSeconds: 0 },
      });
      await waitFor(() => (fleet.workloads.replacements.failed > failed ? true : undefined), {
        timeoutMs: 20_000,
        description: "the replacement's create to be refused",
      });
      assert.equal((await webPods()).length, 1);
    } finally {
      await core.deleteNamespacedResourceQuota({ namespace: ns, name: 'no-pods' });
    }
    const replacedVictim = (pods: V1Pod[]): boolean =>
      pods.length === 2 && pods.every(isReady) && !pods.some((p) => p.metadata?.name === victim.metadata?.name);
    await waitFor(async () => (replacedVictim(await webPods()) ? true : undefined), {
      timeoutMs: 60_000,
      description: 'the web ReplicaSet back at two ready pods',
    });
    const all = await core.listNamespacedPod({ namespace: ns, labelSelector: `${WORKLOAD_LABEL}=web` });
    assert.equal(all.items.length, 2, `web pods: ${all.items.map((p) => p.metadata?.name ?? '').join(', ')}`);
  });

  it('a test can bind a pod to a node right after its cordon (workloads.createPodOn), for drain races', async () => {
    const name = 'selftest-worker-2';
    await fleet.workloads.add({ namespace: ns, name: 'late', kind: 'bare', replicas: 0 });
    assert.equal(
      (await core.listNamespacedPod({ namespace: ns, labelSelector: `${WORKLOAD_LABEL}=late` })).items.length,
      0,
    );
    await core.patchNode({ name, body: { spec: { unschedulable: true } } }, mergePatch);
    try {
      const pod = await fleet.workloads.createPodOn(name, { namespace: ns, name: 'late' });
      assert.equal(pod.spec?.nodeName, name);
      assert.ok(isReady(pod), 'Running and Ready on the cordoned node');
      assert.equal(pod.metadata?.labels?.[WORKLOAD_LABEL], 'late');
      assert.ok((await fleet.workloads.podsOn(name)).some((p) => p.metadata?.name === pod.metadata?.name));
      await core.deleteNamespacedPod({
        namespace: ns,
        name: pod.metadata?.name ?? '',
        body: { gracePeriodSeconds: 0 },
      });
      await assert.rejects(
        fleet.workloads.createPodOn(name, { namespace: ns, name: 'nope' }),
        /no workload lab-selftest\/nope/,
      );
    } finally {
      await core.patchNode({ name, body: { spec: { unschedulable: false } } }, mergePatch);
    }
  });

  it('a node taken down reports Ready=Unknown and comes back with a new boot ID and version', async () => {
    const name = 'selftest-worker-1';
    const readyOf = (n: V1Node): string | undefined => n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
    const taintKeys = (n: V1Node): string[] => (n.spec?.taints ?? []).map((t) => t.key);
    const before = await core.readNode({ name });
    await fleet.takeDown(name);
    const down = await core.readNode({ name });
    assert.equal(readyOf(down), 'Unknown');
    assert.ok(taintKeys(down).includes('node.kubernetes.io/unreachable'), 'a down node carries the unreachable taint');
    await fleet.bringUp(name, { talosVersion: 'v1.13.0' });
    const up = await core.readNode({ name });
    assert.equal(readyOf(up), 'True');
    assert.equal(up.status?.nodeInfo?.osImage, 'Talos (v1.13.0)');
    assert.notEqual(up.status?.nodeInfo?.bootID, before.status?.nodeInfo?.bootID);
    assert.deepEqual(
      taintKeys(up).filter((k) => k.startsWith('node.kubernetes.io/')),
      [],
      'condition taints are gone once Ready',
    );
  });

  it('a control-plane node publishes static pods (hostIP, config version); syncStaticPod replaces one, setKubelet moves the Node', async () => {
    const name = 'selftest-cp-1';
    const apiserverPod = (): Promise<V1Pod> =>
      core.readNamespacedPod({ namespace: 'kube-system', name: `kube-apiserver-${name}` });
    const readyOf = (n: V1Node): string | undefined => n.status?.conditions?.find((c) => c.type === 'Ready')?.status;
    const first = await apiserverPod();
    assert.equal(imageOf(first), 'registry.k8s.io/kube-apiserver:v1.35.2');
    assert.equal(first.metadata?.ownerReferences?.[0]?.kind, 'Node');
    assert.equal(configVersionOf(first), '1');
    assert.equal(first.status?.hostIP, fleet.node(name)?.internalIP);
    assert.ok(isReady(first));
    const image = 'registry.k8s.io/kube-apiserver:v1.36.3';
    await fleet.syncStaticPod(name, 'kube-apiserver', { image, configVersion: '2', ready: false });
    const replaced = await apiserverPod();
    assert.equal(imageOf(replaced), image);
    assert.notEqual(replaced.metadata?.uid, first.metadata?.uid, 'a changed static pod gets a new mirror pod');
    assert.equal(configVersionOf(replaced), '2');
    assert.ok(!isReady(replaced));
    await fleet.syncStaticPod(name, 'kube-apiserver', { image, configVersion: '2', ready: true });
    const ready = await apiserverPod();
    assert.equal(ready.metadata?.uid, replaced.metadata?.uid, 'readiness alone keeps the mirror pod');
    assert.ok(isReady(ready));
    const scheduler = await core.readNamespacedPod({ namespace: 'kube-system', name: `kube-scheduler-${name}` });
    assert.equal(imageOf(scheduler), 'registry.k8s.io/kube-scheduler:v1.35.2', 'other static pods stay');

    await fleet.setKubelet(name, { version: 'v1.36.3', ready: false });
    const starting = await core.readNode({ name });
    assert.deepEqual([starting.status?.nodeInfo?.kubeletVersion, readyOf(starting)], ['v1.36.3', 'False']);
    await fleet.setKubelet(name, { version: 'v1.36.3', ready: true });
    assert.equal(readyOf(await core.readNode({ name })), 'True');
  });

  it('the garbage collector deletes pods owned by a deleted ReplicaSet', async () => {
    assert.ok((await webPods()).length > 0);
    await apps.deleteNamespacedReplicaSet({ namespace: ns, name: 'web', propagationPolicy: 'Background' });
    await waitFor(async () => ((await webPods()).length === 0 ? true : undefined), {
      timeoutMs: 30_000,
      description: 'GC to delete the web pods',
    });
  });

  it('the namespace controller finishes deleting a namespace', async () => {
    await core.createNamespace({ body: { metadata: { name: 'lab-selftest-gone' } } });
    await core.deleteNamespace({ name: 'lab-selftest-gone' });
    await waitFor(
      () =>
        core.readNamespace({ name: 'lab-selftest-gone' }).then(
          () => undefined,
          (err: unknown) => (apiStatus(err) === 404 ? true : undefined),
        ),
      { timeoutMs: 30_000, description: 'namespace lab-selftest-gone to be deleted' },
    );
  });

  it('the fleet recorded no background errors', () => {
    assert.deepEqual(fleet.workloads.errors, []);
  });
});
