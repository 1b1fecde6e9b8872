// The Talos simulator as any Talos client sees it (raw gRPC, not the product client): apid-style
// `nodes` fan-out, COSI Watch, the talosconfig file, per-node listeners; and a reboot made visible
// in Kubernetes through the real fleet (FleetControl on the lab's kube-apiserver).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { Empty } from '../../proto/gen/google/protobuf/empty.js';
import { MachineServiceService, type VersionResponse } from '../../proto/gen/machine/machine.js';
import { EventType, StateService, type WatchResponse } from '../../proto/gen/v1alpha1/state.js';
import { MachineStatusSpec } from '../../proto/gen/resource/definitions/runtime/runtime.js';
import { RuntimeMachineStage } from '../../proto/gen/resource/definitions/enums/enums.js';
import { createTalosClient } from '../../controller/talos/index.js';
import { startFleet, type Fleet } from '../lab/fleet/index.js';
import { loadKubeConfig } from '../lab/kube.js';
import { type LabDir, makeLabDir } from '../lab/process.js';
import { createRecordingFleet, startTalosSimulator, type TalosSimulator } from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';
import { testContext as op } from '../support/op-context.js';
import { sharedCluster } from '../support/shared-cluster.js';

const SCHEMATIC = randomBytes(32).toString('hex');

function rawClient(sim: TalosSimulator, endpoint = sim.endpoint): grpc.Client {
  const creds = grpc.credentials.createSsl(Buffer.from(sim.caPem), Buffer.from(sim.adminCert.key), Buffer.from(sim.adminCert.cert));
  return new grpc.Client(endpoint, creds);
}

function version(c: grpc.Client, md: grpc.Metadata): Promise<VersionResponse> {
  const def = MachineServiceService.version;
  return new Promise((resolve, reject) =>
    c.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, Empty.create(), md, { deadline: Date.now() + 3000 }, (err, res) =>
      err || !res ? reject(err ?? new Error('no response')) : resolve(res),
    ),
  );
}

describe('Talos simulator (raw gRPC)', function () {
  this.timeout(30_000);
  let dir: LabDir;
  let sim: TalosSimulator;
  let c: grpc.Client;

  before(async function () {
    dir = makeLabDir('talos-sim');
    const fleet = createRecordingFleet([
      { name: 'sim-cp', role: 'controlplane', talosVersion: 'v1.13.9', kubernetesVersion: 'v1.35.4', schematic: SCHEMATIC, internalIP: '127.0.80.10' },
      { name: 'sim-w1', role: 'worker', talosVersion: 'v1.12.6', kubernetesVersion: 'v1.35.4', schematic: SCHEMATIC, internalIP: '127.0.80.11' },
      { name: 'sim-w2', role: 'worker', talosVersion: 'v1.14.0', kubernetesVersion: 'v1.35.4', schematic: SCHEMATIC, internalIP: '127.0.80.12' },
    ]);
    sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: true });
    c = rawClient(sim);
  });

  after(async function () {
    c?.close();
    await sim?.stop();
    dir?.remove();
  });

  it('without node metadata the endpoint node answers; `node` routes to one node with metadata unset', async function () {
    const own = await version(c, new grpc.Metadata());
    assert.equal(own.messages[0]?.version?.tag, 'v1.13.9');
    const md = new grpc.Metadata();
    md.set('node', '127.0.80.11');
    const one = await version(c, md);
    assert.equal(one.messages.length, 1);
    assert.equal(one.messages[0]?.version?.tag, 'v1.12.6');
    assert.equal(one.messages[0]?.metadata, undefined);
  });

  it('legacy `nodes` fan-out: one entry per target with metadata.hostname; a failing target becomes an error entry', async function () {
    sim.faults.unreachable('sim-w2', 5000);
    try {
      const md = new grpc.Metadata();
      md.add('nodes', '127.0.80.11');
      md.add('nodes', '127.0.80.12');
      md.add('nodes', '127.0.80.99');
      const res = await version(c, md);
      assert.equal(res.messages.length, 3);
      const [ok, down, unknown] = res.messages.map((m) => ({ host: m.metadata?.hostname, error: m.metadata?.error ?? '', code: m.metadata?.status?.code, tag: m.version?.tag }));
      assert.deepEqual(ok, { host: '127.0.80.11', error: '', code: undefined, tag: 'v1.12.6' });
      assert.equal(down?.host, '127.0.80.12');
      assert.match(down?.error ?? '', /i\/o timeout/);
      assert.equal(down?.code, grpc.status.UNAVAILABLE);
      assert.match(unknown?.error ?? '', /no route to host/);
    } finally {
      sim.faults.clear('sim-w2');
    }
  });

  it('`nodes` on the COSI API is refused (INVALID_ARGUMENT), `node` with two values too', async function () {
    const def = StateService.get;
    const call = (md: grpc.Metadata): Promise<grpc.ServiceError> =>
      new Promise((resolve) =>
        c.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, { namespace: 'runtime', type: 'MachineStatuses.runtime.talos.dev', id: 'machine', options: {} }, md, (err) =>
          resolve(err as grpc.ServiceError),
        ),
      );
    const nodes = new grpc.Metadata();
    nodes.add('nodes', '127.0.80.11');
    assert.equal((await call(nodes)).code, grpc.status.INVALID_ARGUMENT);
    const two = new grpc.Metadata();
    two.add('node', '127.0.80.11');
    two.add('node', '127.0.80.12');
    const err = await call(two);
    assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
    assert.match(err.details, /node metadata must be single-valued/);
  });

  it('COSI Watch on MachineStatus: empty first response, CREATED, then rebooting, and the stream breaks while down', async function () {
    const def = StateService.watch;
    const md = new grpc.Metadata();
    md.set('node', 'sim-w2');
    const stream = c.makeServerStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, {
      namespace: 'runtime', type: 'MachineStatuses.runtime.talos.dev', id: 'machine', options: undefined, apiVersion: 1,
    }, md);
    const got: WatchResponse[] = [];
    let error: grpc.ServiceError | undefined;
    stream.on('data', (r: WatchResponse) => got.push(r));
    stream.on('error', (e: grpc.ServiceError) => (error = e));
    await waitFor(() => got.length >= 2, { timeoutMs: 3000, description: 'initial watch responses' });
    assert.equal(got[0]?.event.length, 0);
    assert.equal(got[1]?.event[0]?.eventType, EventType.CREATED);
    const client = createTalosClient({ endpoints: [sim.endpoint], secret: sim.secretData }, { idleCloseMs: 0 });
    try {
      await client.reboot(op(), 'sim-w2');
    } finally {
      client.close();
    }
    await waitFor(() => error, { timeoutMs: 3000, description: 'watch stream to break' });
    assert.equal(error?.code, grpc.status.UNAVAILABLE);
    const stages = got.flatMap((r) => r.event).filter((e) => e.eventType === EventType.UPDATED).map((e) => MachineStatusSpec.decode(e.resource?.spec?.protoSpec ?? new Uint8Array()).stage);
    assert.ok(stages.includes(RuntimeMachineStage.MACHINE_STAGE_REBOOTING), `stages: ${stages.join(',')}`);
  });

  it('writes a talosctl-format talosconfig whose credentials work', async function () {
    const cfg = parseYaml(readFileSync(sim.talosconfigPath, 'utf8')) as {
      context: string;
      contexts: Record<string, { endpoints: string[]; nodes: string[]; ca: string; crt: string; key: string }>;
    };
    const ctx = cfg.contexts[cfg.context];
    assert.ok(ctx);
    assert.deepEqual(ctx.endpoints, [sim.endpoint]);
    assert.deepEqual(ctx.nodes, ['127.0.80.10', '127.0.80.11', '127.0.80.12']);
    assert.match(Buffer.from(ctx.key, 'base64').toString(), /^-----BEGIN ED25519 PRIVATE KEY-----/);
    const client = createTalosClient({ endpoints: ctx.endpoints, secret: { 'ca.crt': ctx.ca, 'tls.crt': ctx.crt, 'tls.key': ctx.key } }, { idleCloseMs: 0 });
    try {
      assert.equal((await client.version(op(), '127.0.80.11')).tag, 'v1.12.6');
    } finally {
      client.close();
    }
  });

  it("each node also answers on its own InternalIP:50000 (where free), as itself", async function () {
    const ep = sim.nodeEndpoints['sim-w1'];
    if (!ep) this.skip(); // 127.0.80.11:50000 was taken on this machine
    const own = rawClient(sim, ep);
    try {
      assert.equal((await version(own, new grpc.Metadata())).messages[0]?.version?.tag, 'v1.12.6');
    } finally {
      own.close();
    }
  });
});

describe('Talos simulator with the real fleet (kube-apiserver)', function () {
  this.timeout(180_000);
  let dir: LabDir;
  let fleet: Fleet;
  let sim: TalosSimulator;
  let core: CoreV1Api;

  before(async function () {
    const cluster = await sharedCluster();
    core = loadKubeConfig(cluster.kubeconfigPath).makeApiClient(CoreV1Api);
    dir = makeLabDir('talos-fleet');
    fleet = await startFleet({
      kubeconfigPath: cluster.kubeconfigPath,
      nodes: [
        { name: 'talossim-cp', role: 'controlplane', talosVersion: 'v1.13.9', kubernetesVersion: 'v1.35.4', schematic: SCHEMATIC, internalIP: '127.0.81.10' },
        { name: 'talossim-w1', role: 'worker', talosVersion: 'v1.12.6', kubernetesVersion: 'v1.35.4', schematic: SCHEMATIC, internalIP: '127.0.81.11' },
      ],
    });
    sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: false, timings: { rebootMs: 400 } });
  });

  after(async function () {
    await sim?.stop();
    await fleet?.stop();
    dir?.remove();
  });

  const ready = (n: V1Node): string | undefined => n.status?.conditions?.find((c) => c.type === 'Ready')?.status;

  it('a legacy upgrade takes the Node NotReady and brings it back Ready on the new Talos version', async function () {
    const client = createTalosClient({ endpoints: [sim.endpoint], secret: sim.secretData }, { idleCloseMs: 0, backoff: { initialMs: 20, maxMs: 200, factor: 2 } });
    try {
      const before = await client.identity(op(), '127.0.81.11');
      await client.legacyUpgrade(op(), '127.0.81.11', `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.13.9`);
      await waitFor(async () => ready(await core.readNode({ name: 'talossim-w1' })) !== 'True', { timeoutMs: 10_000, intervalMs: 20, description: 'Node NotReady' });
      const node = await waitFor(
        async () => {
          const n = await core.readNode({ name: 'talossim-w1' });
          return ready(n) === 'True' && n.status?.nodeInfo?.osImage === 'Talos (v1.13.9)' ? n : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 50, description: 'Node Ready on v1.13.9' },
      );
      assert.equal(node.status?.nodeInfo?.osImage, 'Talos (v1.13.9)');
      const after = await client.identity(op(), '127.0.81.11');
      assert.equal(after.tag, 'v1.13.9');
      assert.notEqual(after.bootId, before.bootId);
      assert.equal(fleet.node('talossim-w1')?.bootId, after.bootId);
    } finally {
      client.close();
    }
  });

  it('ApplyConfiguration with new Kubernetes images moves the Node kubelet version and the static pods', async function () {
    const client = createTalosClient({ endpoints: [sim.endpoint], secret: sim.secretData }, { idleCloseMs: 0, backoff: { initialMs: 20, maxMs: 200, factor: 2 } });
    try {
      const config = await client.readConfig(op(), '127.0.81.10');
      const updated = config.replaceAll(':v1.35.4', ':v1.36.3');
      assert.notEqual(updated, config, 'the machine config names v1.35.4 images');
      await client.applyConfig(op(), '127.0.81.10', updated);
      const node = await core.readNode({ name: 'talossim-cp' });
      assert.equal(node.status?.nodeInfo?.kubeletVersion, 'v1.36.3');
      const pod = await core.readNamespacedPod({ namespace: 'kube-system', name: 'kube-apiserver-talossim-cp' });
      assert.equal(pod.spec?.containers[0]?.image, 'registry.k8s.io/kube-apiserver:v1.36.3');
    } finally {
      client.close();
    }
  });
});
