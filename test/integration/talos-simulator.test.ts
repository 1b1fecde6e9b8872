// The Talos simulator as any Talos client sees it (raw gRPC, not the product client): apid-style
// `nodes` fan-out, COSI Watch, the talosconfig file, per-node listeners; and a reboot made visible
// in Kubernetes through the real fleet (FleetControl on the lab's kube-apiserver).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { ContainerDriver, ContainerdNamespace } from '../../proto/gen/common/common.js';
import { Empty } from '../../proto/gen/google/protobuf/empty.js';
import { ImageServiceService } from '../../proto/gen/machine/image.js';
import { LifecycleServiceService } from '../../proto/gen/machine/lifecycle.js';
import {
  ApplyConfigurationRequest_Mode,
  MachineServiceService,
  RebootRequest_Mode,
  UpgradeRequest_RebootMode,
  type VersionResponse,
} from '../../proto/gen/machine/machine.js';
import { EventType, StateService, type WatchResponse } from '../../proto/gen/v1alpha1/state.js';
import { Resource } from '../../proto/gen/v1alpha1/resource.js';
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { MachineStatusSpec } from '../../proto/gen/resource/definitions/runtime/runtime.js';
import { RuntimeMachineStage } from '../../proto/gen/resource/definitions/enums/enums.js';
import { createTalosClient } from '../../controller/talos/index.js';
import { startFleet, type Fleet } from '../lab/fleet/index.js';
import { loadKubeConfig } from '../lab/kube.js';
import { type LabDir, makeLabDir } from '../lab/process.js';
import {
  createRecordingFleet,
  type RecordingFleet,
  type SimCall,
  startTalosSimulator,
  type TalosSimulator,
} from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';
import { rawClient, streamed, targeting, unary } from './talos-raw.js';
import { testContext as op } from '../support/op-context.js';
import { sharedCluster } from '../support/shared-cluster.js';

const SCHEMATIC = randomBytes(32).toString('hex');

/** Every record names the node and the caller, and arrival/answer times are in order and in [t0, now]. */
function assertCallerAndTimes(calls: SimCall[], node: string, identity: string, t0: number): void {
  let prev: SimCall | undefined;
  for (const r of calls) {
    assert.equal(r.node, node);
    assert.equal(r.identity, identity);
    assert.match(r.peer, /127\.0\.0\.1:\d+$/);
    assert.ok(
      r.at >= t0 && r.endedAt !== undefined && r.endedAt >= r.at && r.endedAt <= Date.now(),
      `times of call ${r.seq}`,
    );
    if (prev) assert.ok(r.seq > prev.seq && r.at >= prev.at, `order of call ${r.seq}`);
    prev = r;
  }
}

/** A call record reduced to what a test compares: method, key field, phase seen, result, effect. */
function brief(r: SimCall): [string, string | undefined, string, string, string | undefined] {
  const key = r.image ?? r.rebootMode ?? r.applyMode;
  return [r.method, key, r.phase, typeof r.result === 'string' ? r.result : r.result.codeName, r.effect];
}

function version(c: grpc.Client, md: grpc.Metadata): Promise<VersionResponse> {
  const def = MachineServiceService.version;
  return new Promise((resolve, reject) =>
    c.makeUnaryRequest(
      def.path,
      def.requestSerialize,
      def.responseDeserialize,
      Empty.create(),
      md,
      { deadline: Date.now() + 3000 },
      (err, res) => (err || !res ? reject(err ?? new Error('no response')) : resolve(res)),
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
      {
        name: 'sim-cp',
        role: 'controlplane',
        talosVersion: 'v1.13.9',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: '127.0.80.10',
      },
      {
        name: 'sim-w1',
        role: 'worker',
        talosVersion: 'v1.12.6',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: '127.0.80.11',
      },
      {
        name: 'sim-w2',
        role: 'worker',
        talosVersion: 'v1.14.0',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: '127.0.80.12',
      },
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
      const [ok, down, unknown] = res.messages.map((m) => ({
        host: m.metadata?.hostname,
        error: m.metadata?.error ?? '',
        code: m.metadata?.status?.code,
        tag: m.version?.tag,
      }));
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
        c.makeUnaryRequest(
          def.path,
          def.requestSerialize,
          def.responseDeserialize,
          { namespace: 'runtime', type: 'MachineStatuses.runtime.talos.dev', id: 'machine', options: {} },
          md,
          (err) => resolve(err as grpc.ServiceError),
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

  // Issue 49, item 10. internal/app/apid/pkg/backend/apid.go NewAPID refuses a target with a port
  // (siderolabs/net AddressContainsPort), which director.go singleDirector / aggregateDirector answer as
  // codes.Internal before any node is called; a bare IPv6 address is a target without a port.
  it('a `node` (or `nodes` target) with a port is INTERNAL `invalid target "…"`, before any node is called', async function () {
    const versionWith = (md: grpc.Metadata): Promise<grpc.ServiceError | VersionResponse> =>
      version(c, md).catch((err: grpc.ServiceError) => err);
    for (const [key, value] of [
      ['node', '127.0.80.11:50000'],
      ['node', 'sim-w1:50000'],
      ['node', '[::1]:50000'],
      ['nodes', '127.0.80.11,127.0.80.12:50000'],
    ] as const) {
      const err = await versionWith(targeting(value, key));
      assert.ok('code' in err, `${key}: ${value} should fail`);
      assert.deepEqual(
        [err.code, err.details],
        [grpc.status.INTERNAL, `invalid target "${value.split(',').find((v) => v.includes(':')) ?? value}"`],
        `${key}: ${value}`,
      );
    }
    const v6 = await versionWith(targeting('::1'));
    assert.ok(
      'code' in v6 && v6.code === grpc.status.UNAVAILABLE,
      'an IPv6 address without a port is a target apid dials (none here)',
    );
  });

  // internal/app/resources/access.go AccessPolicy (the filter in front of machined's COSI State server,
  // v1alpha1_server.go Register): any write is refused first, PermissionDenied "write access is not
  // allowed"; the method roles (services/machined.go) let only os:admin call Create/Update/Destroy at
  // all; cosi-project/runtime pkg/state/protobuf/server/server.go unmarshals a Create's resource before
  // (pkg/resource/protobuf/resource.go Unmarshal: "metadata is missing").
  it('COSI Create, Update and Destroy: os:admin gets PERMISSION_DENIED "write access is not allowed", os:reader "not authorized"; a Create without a resource fails unmarshalling', async function () {
    const resource: Resource = {
      metadata: {
        namespace: 'runtime',
        type: 'MachineStatuses.runtime.talos.dev',
        id: 'machine',
        version: '1',
        owner: '',
        phase: 'running',
        created: undefined,
        updated: undefined,
        finalizers: [],
        labels: {},
        annotations: {},
      },
      spec: { protoSpec: Buffer.alloc(0), yamlSpec: 'stage: running\n' },
    };
    const carrying = (field: number, r: Resource | undefined): Buffer => {
      const w = new BinaryWriter();
      if (r) Resource.encode(r, w.uint32((field << 3) | 2).fork()).join();
      return Buffer.from(w.finish());
    };
    const destroy = Buffer.from(
      new BinaryWriter()
        .uint32(10)
        .string('runtime')
        .uint32(18)
        .string('MachineStatuses.runtime.talos.dev')
        .uint32(26)
        .string('machine')
        .finish(),
    );
    const write = (client: grpc.Client, method: string, body: Buffer): Promise<[string, string]> =>
      new Promise((resolve) =>
        client.makeUnaryRequest(
          `/cosi.resource.State/${method}`,
          (b: Buffer) => b,
          (b: Buffer) => b,
          body,
          targeting('sim-w2'),
          { deadline: Date.now() + 3000 },
          (err) => resolve(err ? [grpc.status[err.code] ?? String(err.code), err.details] : ['OK', '']),
        ),
      );
    const refused = ['PERMISSION_DENIED', 'write access is not allowed'];
    assert.deepEqual(await write(c, 'Create', carrying(1, resource)), refused);
    assert.deepEqual(await write(c, 'Update', carrying(2, resource)), refused);
    assert.deepEqual(await write(c, 'Destroy', destroy), refused);
    assert.deepEqual(await write(c, 'Create', carrying(1, undefined)), ['UNKNOWN', 'metadata is missing']);
    assert.deepEqual(await write(c, 'Create', carrying(1, { ...resource, spec: undefined })), [
      'UNKNOWN',
      'spec is missing',
    ]);
    const r = sim.issueClientCert('cosi-reader', { roles: ['os:reader'] });
    const reader = new grpc.Client(
      sim.endpoint,
      grpc.credentials.createSsl(Buffer.from(sim.caPem), Buffer.from(r.key), Buffer.from(r.cert)),
    );
    try {
      assert.deepEqual(await write(reader, 'Create', carrying(1, resource)), ['PERMISSION_DENIED', 'not authorized']);
    } finally {
      reader.close();
    }
  });

  it('COSI Watch on MachineStatus: empty first response, CREATED, then rebooting, and the stream breaks while down', async function () {
    const def = StateService.watch;
    const md = new grpc.Metadata();
    md.set('node', 'sim-w2');
    const stream = c.makeServerStreamRequest(
      def.path,
      def.requestSerialize,
      def.responseDeserialize,
      {
        namespace: 'runtime',
        type: 'MachineStatuses.runtime.talos.dev',
        id: 'machine',
        options: undefined,
        apiVersion: 1,
      },
      md,
    );
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
    const stages = got
      .flatMap((r) => r.event)
      .filter((e) => e.eventType === EventType.UPDATED)
      .map((e) => MachineStatusSpec.decode(e.resource?.spec?.protoSpec ?? new Uint8Array()).stage);
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
    const client = createTalosClient(
      { endpoints: ctx.endpoints, secret: { 'ca.crt': ctx.ca, 'tls.crt': ctx.crt, 'tls.key': ctx.key } },
      { idleCloseMs: 0 },
    );
    try {
      assert.equal((await client.version(op(), '127.0.80.11')).tag, 'v1.12.6');
    } finally {
      client.close();
    }
  });

  it('each node also answers on its own InternalIP:50000 (where free), as itself', async function () {
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

describe('Talos simulator as a test oracle: call record, upgrade counters, Reboot in every phase (raw gRPC)', function () {
  this.timeout(30_000);
  const IMAGE_14 = `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.14.0`;
  const IMAGE_13 = `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.13.9`;
  let dir: LabDir;
  let fleet: RecordingFleet;
  let sim: TalosSimulator;
  let c: grpc.Client;

  before(async function () {
    dir = makeLabDir('talos-sim-record');
    fleet = createRecordingFleet([
      {
        name: 'rec-life',
        role: 'worker',
        talosVersion: 'v1.13.9',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: '127.0.82.10',
      },
      {
        name: 'rec-legacy',
        role: 'worker',
        talosVersion: 'v1.12.6',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: '127.0.82.11',
      },
      {
        name: 'rec-reboot',
        role: 'worker',
        talosVersion: 'v1.14.0',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: '127.0.82.12',
      },
      {
        name: 'rec-lag',
        role: 'worker',
        talosVersion: 'v1.12.6',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: '127.0.82.13',
      },
      {
        name: 'rec-boot',
        role: 'worker',
        talosVersion: 'v1.12.6',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: '127.0.82.14',
      },
      {
        name: 'rec-cp',
        role: 'controlplane',
        talosVersion: 'v1.12.6',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: '127.0.82.15',
      },
    ]);
    sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: false });
    c = rawClient(sim);
  });

  after(async function () {
    c?.close();
    await sim?.stop();
    dir?.remove();
  });

  const running = (name: string, tag: string): Promise<true> =>
    waitFor(() => (sim.node(name).phase === 'running' && sim.node(name).version === tag) || undefined, {
      timeoutMs: 10_000,
      intervalMs: 10,
      description: `${name} running ${tag}`,
    });
  const inPhase = (name: string, phase: string): Promise<true> =>
    waitFor(() => sim.node(name).phase === phase || undefined, {
      timeoutMs: 10_000,
      intervalMs: 10,
      description: `${name} ${phase}`,
    });

  it('records Pull, LifecycleService.Upgrade and Reboot (time, caller, image, result) and counts one upgrade and one boot into the new version', async function () {
    const t0 = Date.now();
    const since = sim.lastCallSeq();
    const md = (): grpc.Metadata => targeting('127.0.82.10');
    const system = { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_SYSTEM };
    const install = { containerd: system, source: { imageName: IMAGE_14 } };
    assert.equal(await streamed(c, LifecycleServiceService.upgrade, install, md()), 'INTERNAL', 'install before pull');
    // No containerd instance: namespace NS_UNKNOWN is refused (upstream ctrhelper.ContainerdInstanceHelper).
    assert.equal(
      await streamed(c, ImageServiceService.pull, { containerd: undefined, imageRef: IMAGE_14 }, md()),
      'INVALID_ARGUMENT',
    );
    const pulled = await streamed(c, ImageServiceService.pull, { containerd: system, imageRef: IMAGE_14 }, md());
    assert.ok(Array.isArray(pulled) && pulled.at(-1)?.name === IMAGE_14, `pull: ${JSON.stringify(pulled)}`);
    const installed = await streamed(c, LifecycleServiceService.upgrade, install, md());
    assert.ok(
      Array.isArray(installed) && installed.at(-1)?.progress?.exitCode === 0,
      `install: ${JSON.stringify(installed)}`,
    );
    const rebooted = await unary(c, MachineServiceService.reboot, { mode: RebootRequest_Mode.DEFAULT }, md());
    assert.notEqual(typeof rebooted, 'string');
    await running('rec-life', 'v1.14.0');

    const calls = sim.callLog({ node: 'rec-life', since });
    assert.deepEqual(calls.map(brief), [
      ['LifecycleService.Upgrade', IMAGE_14, 'running', 'INTERNAL', undefined],
      ['ImageService.Pull', IMAGE_14, 'running', 'INVALID_ARGUMENT', undefined],
      ['ImageService.Pull', IMAGE_14, 'running', 'ok', 'pulled'],
      ['LifecycleService.Upgrade', IMAGE_14, 'running', 'ok', 'staged v1.14.0'],
      ['MachineService.Reboot', 'DEFAULT', 'running', 'ok', 'reboot into staged v1.14.0'],
    ]);
    const failed = calls[0]?.result;
    assert.ok(
      typeof failed === 'object' && failed.code === grpc.status.INTERNAL && /not found/.test(failed.message),
      JSON.stringify(failed),
    );
    assert.equal(calls[3]?.exitCode, 0);
    assertCallerAndTimes(calls, 'rec-life', 'admin', t0);
    assert.equal(sim.node('127.0.82.10').calls, sim.node('rec-life').calls, 'the same record by IP and by name');
    const n = sim.node('rec-life');
    assert.deepEqual([n.upgradesStarted, n.bootsIntoNewVersion, n.reboots], [1, 1, 1]);
  });

  // Issue 49, item 3. v1alpha1_server.go Upgrade: after the image check (and, on a control plane,
  // the etcd pre-checks) it acks and runs the upgrade sequence in the background without takeover;
  // by runtime/sequencer.go CanTakeOver (v1alpha1/v1alpha1_priority_lock.go Lock) an upgrade takes
  // over a boot only, so an upgrade or reboot in progress refuses it inside (ErrLocked, only logged).
  it('legacy Upgrade on a worker: a second Upgrade and a Reboot while upgrading are acked without effect; one upgrade, one reboot', async function () {
    const since = sim.lastCallSeq();
    const md = (): grpc.Metadata => targeting('rec-legacy');
    sim.faults.set('rec-legacy', { holdPhase: 'upgrading' });
    const upgrade = {
      image: IMAGE_13,
      preserve: false,
      stage: false,
      force: false,
      rebootMode: UpgradeRequest_RebootMode.POWERCYCLE,
    };
    const first = await unary(c, MachineServiceService.upgrade, upgrade, md());
    assert.equal(typeof first === 'string' ? first : first.messages[0]?.ack, 'Upgrade request received');
    await waitFor(() => sim.node('rec-legacy').history.includes('held in upgrading'), {
      timeoutMs: 10_000,
      intervalMs: 10,
      description: 'upgrade held',
    });
    const second = await unary(c, MachineServiceService.upgrade, upgrade, md());
    assert.equal(
      typeof second === 'string' ? second : second.messages[0]?.ack,
      'Upgrade request received',
      'the second Upgrade is acknowledged',
    );
    assert.notEqual(
      typeof (await unary(c, MachineServiceService.reboot, { mode: RebootRequest_Mode.DEFAULT }, md())),
      'string',
    );
    assert.equal(sim.node('rec-legacy').phase, 'upgrading');
    sim.faults.set('rec-legacy', { holdPhase: undefined });
    await running('rec-legacy', 'v1.13.9');

    assert.deepEqual(sim.callLog({ node: 'rec-legacy', since }).map(brief), [
      ['MachineService.Upgrade', IMAGE_13, 'running', 'ok', 'upgrade started v1.12.6 -> v1.13.9'],
      [
        'MachineService.Upgrade',
        IMAGE_13,
        'upgrading',
        'ok',
        'upgrade ignored: an upgrade is in progress (sequence locked)',
      ],
      [
        'MachineService.Reboot',
        'DEFAULT',
        'upgrading',
        'ok',
        'reboot ignored: an upgrade is in progress (sequence locked)',
      ],
    ]);
    assert.equal(sim.callLog({ node: 'rec-legacy', since })[0]?.rebootMode, 'POWERCYCLE');
    const n = sim.node('rec-legacy');
    assert.deepEqual([n.upgradesStarted, n.bootsIntoNewVersion, n.reboots], [1, 1, 1]);
    assert.equal(fleet.calls.filter((f) => f.name === 'rec-legacy' && f.op === 'takeDown').length, 1);
  });

  it('legacy Upgrade on a node still booting is acked and takes over the boot: the node upgrades without finishing that boot', async function () {
    const since = sim.lastCallSeq();
    const md = (): grpc.Metadata => targeting('rec-boot');
    sim.faults.set('rec-boot', { holdPhase: 'booting' });
    assert.notEqual(
      typeof (await unary(c, MachineServiceService.reboot, { mode: RebootRequest_Mode.DEFAULT }, md())),
      'string',
    );
    await waitFor(() => sim.node('rec-boot').history.includes('held in booting'), {
      timeoutMs: 10_000,
      intervalMs: 10,
      description: 'boot held',
    });
    const bootId = sim.node('rec-boot').bootId;
    const upgrade = {
      image: IMAGE_13,
      preserve: false,
      stage: false,
      force: false,
      rebootMode: UpgradeRequest_RebootMode.DEFAULT,
    };
    const res = await unary(c, MachineServiceService.upgrade, upgrade, md());
    assert.equal(typeof res === 'string' ? res : res.messages[0]?.ack, 'Upgrade request received');
    assert.equal(sim.node('rec-boot').phase, 'upgrading', 'the upgrade took over the boot');
    sim.faults.clear('rec-boot');
    await running('rec-boot', 'v1.13.9');
    assert.notEqual(sim.node('rec-boot').bootId, bootId);
    assert.deepEqual(sim.callLog({ node: 'rec-boot', since }).map(brief), [
      ['MachineService.Reboot', 'DEFAULT', 'running', 'ok', 'reboot'],
      ['MachineService.Upgrade', IMAGE_13, 'booting', 'ok', 'upgrade started v1.12.6 -> v1.13.9 (took over the boot)'],
    ]);
    const n = sim.node('rec-boot');
    assert.deepEqual([n.upgradesStarted, n.bootsIntoNewVersion, n.reboots], [1, 1, 2]);
    assert.ok(!n.history.includes('running v1.12.6'), `the taken-over boot never finished: ${n.history.join('; ')}`);
  });

  // On a control plane the etcd pre-checks run before the ack (internal/pkg/etcd/etcd.go
  // ValidateForUpgrade): every member must answer a linearizable read within QuorumCheckTimeout. While
  // the node upgrades its own member is stopped, so a second Upgrade is refused after that wait, with
  // the wrapped context deadline (DEADLINE_EXCEEDED); force skips the check and meets the locked sequence.
  it('legacy Upgrade on a control-plane node: a second Upgrade while it upgrades fails the etcd pre-check (DEADLINE_EXCEEDED); with force it is acked without effect', async function () {
    const since = sim.lastCallSeq();
    const md = (): grpc.Metadata => targeting('rec-cp');
    sim.faults.set('rec-cp', { holdPhase: 'upgrading' });
    const upgrade = {
      image: IMAGE_13,
      preserve: false,
      stage: false,
      force: false,
      rebootMode: UpgradeRequest_RebootMode.DEFAULT,
    };
    const first = await unary(c, MachineServiceService.upgrade, upgrade, md());
    assert.equal(typeof first === 'string' ? first : first.messages[0]?.ack, 'Upgrade request received');
    await waitFor(() => sim.node('rec-cp').history.includes('held in upgrading'), {
      timeoutMs: 10_000,
      intervalMs: 10,
      description: 'upgrade held',
    });
    const t = Date.now();
    assert.equal(await unary(c, MachineServiceService.upgrade, upgrade, md()), 'DEADLINE_EXCEEDED');
    assert.ok(Date.now() - t >= 250, 'after the quorum check waited (etcdQuorumCheckMs)');
    const forced = await unary(c, MachineServiceService.upgrade, { ...upgrade, force: true }, md());
    assert.equal(typeof forced === 'string' ? forced : forced.messages[0]?.ack, 'Upgrade request received');
    sim.faults.clear('rec-cp');
    await running('rec-cp', 'v1.13.9');
    const calls = sim.callLog({ node: 'rec-cp', since });
    assert.deepEqual(calls.map(brief), [
      ['MachineService.Upgrade', IMAGE_13, 'running', 'ok', 'upgrade started v1.12.6 -> v1.13.9'],
      ['MachineService.Upgrade', IMAGE_13, 'upgrading', 'DEADLINE_EXCEEDED', undefined],
      [
        'MachineService.Upgrade',
        IMAGE_13,
        'upgrading',
        'ok',
        'upgrade ignored: an upgrade is in progress (sequence locked)',
      ],
    ]);
    const refused = calls[1]?.result;
    assert.ok(
      typeof refused === 'object' &&
        /^error validating etcd for upgrade: etcd member [0-9a-f]{16} is not healthy; all members must be healthy to perform an upgrade: context deadline exceeded$/.test(
          refused.message,
        ),
      JSON.stringify(refused),
    );
    assert.equal(sim.node('rec-cp').upgradesStarted, 1);
  });

  it('a sequence start lag: Upgrade is acked while the stage still says running; an Upgrade and a Reboot in that time are acked and change nothing', async function () {
    const since = sim.lastCallSeq();
    const md = (): grpc.Metadata => targeting('rec-lag');
    // Longer than the test: the test starts the sequence itself.
    sim.faults.set('rec-lag', { sequenceStartLagMs: 600_000 });
    const upgrade = {
      image: IMAGE_13,
      preserve: false,
      stage: false,
      force: false,
      rebootMode: UpgradeRequest_RebootMode.DEFAULT,
    };
    const first = await unary(c, MachineServiceService.upgrade, upgrade, md());
    assert.equal(typeof first === 'string' ? first : first.messages[0]?.ack, 'Upgrade request received');
    const n = sim.node('rec-lag');
    assert.deepEqual(
      [n.stage, n.sequencePending, n.upgradesStarted],
      ['running', true, 0],
      'acknowledged, not started',
    );
    const second = await unary(c, MachineServiceService.upgrade, upgrade, md());
    assert.equal(
      typeof second === 'string' ? second : second.messages[0]?.ack,
      'Upgrade request received',
      'a second Upgrade is acknowledged too',
    );
    assert.notEqual(
      typeof (await unary(c, MachineServiceService.reboot, { mode: RebootRequest_Mode.DEFAULT }, md())),
      'string',
    );
    n.startPendingSequence();
    assert.equal(n.stage, 'upgrading');
    sim.faults.clear('rec-lag');
    await running('rec-lag', 'v1.13.9');

    assert.deepEqual(sim.callLog({ node: 'rec-lag', since }).map(brief), [
      ['MachineService.Upgrade', IMAGE_13, 'running', 'ok', 'upgrade started v1.12.6 -> v1.13.9'],
      ['MachineService.Upgrade', IMAGE_13, 'running', 'ok', 'upgrade ignored: another sequence is starting (locked)'],
      ['MachineService.Reboot', 'DEFAULT', 'running', 'ok', 'reboot ignored: another sequence is starting (locked)'],
    ]);
    assert.deepEqual([n.upgradesStarted, n.bootsIntoNewVersion, n.reboots], [1, 1, 1]);
  });

  it('Reboot while rebooting is acked without a second reboot, while down fails UNAVAILABLE, while booting reboots again', async function () {
    const since = sim.lastCallSeq();
    const ops = sim.issueClientCert('ops', { roles: ['os:operator'] });
    const opsClient = new grpc.Client(
      sim.endpoint,
      grpc.credentials.createSsl(Buffer.from(sim.caPem), Buffer.from(ops.key), Buffer.from(ops.cert)),
    );
    try {
      const reboot = (): Promise<unknown> =>
        unary(opsClient, MachineServiceService.reboot, { mode: RebootRequest_Mode.DEFAULT }, targeting('rec-reboot'));
      sim.faults.set('rec-reboot', { holdPhase: 'rebooting' });
      assert.notEqual(typeof (await reboot()), 'string');
      await waitFor(() => sim.node('rec-reboot').history.includes('held in rebooting'), {
        timeoutMs: 10_000,
        intervalMs: 10,
        description: 'reboot held',
      });
      assert.notEqual(typeof (await reboot()), 'string', 'a Reboot while rebooting is acknowledged');

      sim.faults.set('rec-reboot', { holdPhase: undefined, neverComesBack: true });
      await inPhase('rec-reboot', 'down');
      assert.equal(await reboot(), 'UNAVAILABLE');

      sim.faults.set('rec-reboot', { holdPhase: 'booting' });
      sim.faults.powerOn('rec-reboot');
      await inPhase('rec-reboot', 'booting');
      assert.notEqual(typeof (await reboot()), 'string');
      assert.equal(sim.node('rec-reboot').phase, 'rebooting', 'a Reboot while booting takes over');
      sim.faults.clear('rec-reboot');
      await waitFor(() => sim.node('rec-reboot').reboots === 2 && sim.node('rec-reboot').phase === 'running', {
        timeoutMs: 10_000,
        intervalMs: 10,
        description: 'second reboot done',
      });
    } finally {
      opsClient.close();
    }

    const calls = sim.callLog({ node: 'rec-reboot', since });
    assert.deepEqual(calls.map(brief), [
      ['MachineService.Reboot', 'DEFAULT', 'running', 'ok', 'reboot'],
      ['MachineService.Reboot', 'DEFAULT', 'rebooting', 'ok', 'reboot ignored: already rebooting'],
      ['MachineService.Reboot', 'DEFAULT', 'down', 'UNAVAILABLE', undefined],
      ['MachineService.Reboot', 'DEFAULT', 'booting', 'ok', 'reboot'],
    ]);
    assert.ok(calls.every((r) => r.identity === 'ops'));
    const down = calls[2]?.result;
    assert.ok(typeof down === 'object' && /connection refused/.test(down.message), JSON.stringify(down));
    const n = sim.node('rec-reboot');
    assert.deepEqual([n.upgradesStarted, n.bootsIntoNewVersion, n.reboots, n.version], [0, 0, 2, 'v1.14.0']);
    assert.equal(fleet.calls.filter((f) => f.name === 'rec-reboot' && f.op === 'takeDown').length, 2);
  });

  it('Rollback as upstream (srv.go Rollback; bootloader/grub/revert.go): UNKNOWN before any ack without a previous entry; else acknowledged, then a reboot into the previous version; again flips back', async function () {
    const since = sim.lastCallSeq();
    // rec-reboot was never upgraded: no other bootloader entry.
    assert.equal(await unary(c, MachineServiceService.rollback, {}, targeting('rec-reboot')), 'UNKNOWN');
    // rec-life went 1.13.9 → 1.14.0 in the first test of this suite.
    await running('rec-life', 'v1.14.0');
    assert.notEqual(typeof (await unary(c, MachineServiceService.rollback, {}, targeting('rec-life'))), 'string');
    await running('rec-life', 'v1.13.9');
    assert.notEqual(typeof (await unary(c, MachineServiceService.rollback, {}, targeting('rec-life'))), 'string');
    await running('rec-life', 'v1.14.0');
    assert.equal(sim.node('rec-life').rollbacks, 2);
    const calls = sim.callLog({ since }).filter((r) => r.method === 'MachineService.Rollback');
    assert.deepEqual(
      calls.map((r) => [r.node, typeof r.result === 'object' ? r.result.message : r.result, r.effect]),
      [
        ['rec-reboot', 'cannot rollback to "", label does not exist', undefined],
        ['rec-life', 'ok', 'rollback to v1.13.9'],
        ['rec-life', 'ok', 'rollback to v1.14.0'],
      ],
    );
  });

  it('records ApplyConfiguration per node, including each target of a legacy `nodes` fan-out', async function () {
    const since = sim.lastCallSeq();
    const data = Buffer.from(sim.node('rec-life').config);
    const dry = await unary(
      c,
      MachineServiceService.applyConfiguration,
      { data, mode: ApplyConfigurationRequest_Mode.AUTO, dryRun: true, tryModeTimeout: undefined },
      targeting('rec-life'),
    );
    assert.notEqual(typeof dry, 'string');
    sim.faults.unreachable('rec-legacy', 60_000);
    try {
      const fan = await unary(
        c,
        MachineServiceService.applyConfiguration,
        { data, mode: ApplyConfigurationRequest_Mode.NO_REBOOT, dryRun: false, tryModeTimeout: undefined },
        targeting('127.0.82.10,127.0.82.11', 'nodes'),
      );
      assert.ok(typeof fan !== 'string' && fan.messages.length === 2);
    } finally {
      sim.faults.clear('rec-legacy');
    }
    assert.deepEqual(
      sim.callLog({ since }).map((r) => [r.node, ...brief(r), r.dryRun]),
      [
        ['rec-life', 'MachineService.ApplyConfiguration', 'AUTO', 'running', 'ok', 'dry run', true],
        [
          'rec-life',
          'MachineService.ApplyConfiguration',
          'NO_REBOOT',
          'running',
          'ok',
          'config applied (unchanged)',
          false,
        ],
        ['rec-legacy', 'MachineService.ApplyConfiguration', 'NO_REBOOT', 'running', 'UNAVAILABLE', undefined, false],
      ],
    );
    assert.deepEqual(sim.callLog({ since, method: 'MachineService.Reboot' }), []);
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
        {
          name: 'talossim-cp',
          role: 'controlplane',
          talosVersion: 'v1.13.9',
          kubernetesVersion: 'v1.35.4',
          schematic: SCHEMATIC,
          internalIP: '127.0.81.10',
        },
        {
          name: 'talossim-w1',
          role: 'worker',
          talosVersion: 'v1.12.6',
          kubernetesVersion: 'v1.35.4',
          schematic: SCHEMATIC,
          internalIP: '127.0.81.11',
        },
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
    const client = createTalosClient(
      { endpoints: [sim.endpoint], secret: sim.secretData },
      { idleCloseMs: 0, backoff: { initialMs: 20, maxMs: 200, factor: 2 } },
    );
    try {
      const before = await client.identity(op(), '127.0.81.11');
      await client.legacyUpgrade(op(), '127.0.81.11', `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.13.9`);
      await waitFor(async () => ready(await core.readNode({ name: 'talossim-w1' })) !== 'True', {
        timeoutMs: 10_000,
        intervalMs: 20,
        description: 'Node NotReady',
      });
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
    const client = createTalosClient(
      { endpoints: [sim.endpoint], secret: sim.secretData },
      { idleCloseMs: 0, backoff: { initialMs: 20, maxMs: 200, factor: 2 } },
    );
    try {
      const config = await client.readConfig(op(), '127.0.81.10');
      const updated = config.replaceAll(':v1.35.4', ':v1.36.3');
      assert.notEqual(updated, config, 'the machine config names v1.35.4 images');
      await client.applyConfig(op(), '127.0.81.10', updated);
      await waitFor(
        async () => (await core.readNode({ name: 'talossim-cp' })).status?.nodeInfo?.kubeletVersion === 'v1.36.3',
        {
          timeoutMs: 20_000,
          description: 'Node kubeletVersion v1.36.3',
        },
      );
      await waitFor(
        async () =>
          (await core.readNamespacedPod({ namespace: 'kube-system', name: 'kube-apiserver-talossim-cp' })).spec
            ?.containers[0]?.image === 'registry.k8s.io/kube-apiserver:v1.36.3',
        { timeoutMs: 20_000, description: 'kube-apiserver mirror pod on v1.36.3' },
      );
    } finally {
      client.close();
    }
  });
});
