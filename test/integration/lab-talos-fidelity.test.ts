// Where the Talos simulator must answer as real Talos does, because a different answer could hide a
// product bug (issue 22, items 1-9). Raw gRPC with the generated types, as any Talos client sends
// it; each case names the upstream file (siderolabs/talos) whose behaviour it follows.
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { parse as parseYaml } from 'yaml';
import { Code, ContainerDriver, ContainerdNamespace } from '../../proto/gen/common/common.js';
import {
  ImageServicePullLayerProgress_Status,
  ImageServiceService,
  type ImageServicePullResponse,
} from '../../proto/gen/machine/image.js';
import { LifecycleServiceService, type LifecycleServiceUpgradeResponse } from '../../proto/gen/machine/lifecycle.js';
import {
  type Event as MachineEvent,
  EventsRequest,
  MachineServiceService,
  MachineStatusEvent,
  MachineStatusEvent_MachineStage,
  PhaseEvent,
  PhaseEvent_Action,
  RebootRequest_Mode,
  SequenceEvent,
  SequenceEvent_Action,
  type ServiceInfo,
  ServiceStateEvent,
  ServiceStateEvent_Action,
  TaskEvent,
  TaskEvent_Action,
  UpgradeRequest_RebootMode,
} from '../../proto/gen/machine/machine.js';
import { Layer } from '../../proto/gen/resource/definitions/extensions/extensions.js';
import {
  APIServerConfigSpec,
  ControllerManagerConfigSpec,
  KubeletSpecSpec,
} from '../../proto/gen/resource/definitions/k8s/k8s.js';
import { ImageFactorySchematicSpec } from '../../proto/gen/resource/definitions/runtime/runtime.js';
import { ResourceDefinitionSpec, ResourceDefinitionSpec_Sensitivity } from '../../proto/gen/v1alpha1/meta.js';
import { ServiceSpec } from '../../proto/gen/resource/definitions/v1alpha1/v1alpha1.js';
import {
  EventType,
  StateService,
  type ListResponse,
  type WatchRequest,
  type WatchResponse,
} from '../../proto/gen/v1alpha1/state.js';
import { type LabDir, makeLabDir } from '../lab/process.js';
import { startRegistry, type Registry } from '../lab/registry/index.js';
import {
  createRecordingFleet,
  startTalosSimulator,
  type TalosSimulator,
  VANILLA_SCHEMATIC,
} from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';
import { rawClient, targeting } from './talos-raw.js';

const SCHEMATIC = randomBytes(32).toString('hex');
const SYSTEM = { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_SYSTEM };
const CRI = { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_CRI };

interface Failure {
  code: string;
  details: string;
}

function fail(err: grpc.ServiceError): Failure {
  return { code: grpc.status[err.code] ?? String(err.code), details: err.details };
}

interface Def<Req, Res> {
  path: string;
  requestSerialize: (req: Req) => Buffer;
  responseDeserialize: (buf: Buffer) => Res;
}

/** A server stream's messages, or the status it failed with (code name and details). */
function stream<Req, Res>(c: grpc.Client, def: Def<Req, Res>, req: Req, node: string): Promise<Res[] | Failure> {
  return new Promise((resolve) => {
    const got: Res[] = [];
    const s = c.makeServerStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, req, targeting(node), {
      deadline: Date.now() + 5000,
    });
    s.on('data', (m: Res) => got.push(m));
    s.on('error', (err: grpc.ServiceError) => resolve(fail(err)));
    s.on('end', () => resolve(got));
  });
}

function call<Req, Res>(c: grpc.Client, def: Def<Req, Res>, req: Req, node: string): Promise<Res | Failure> {
  return new Promise((resolve) =>
    c.makeUnaryRequest(
      def.path,
      def.requestSerialize,
      def.responseDeserialize,
      req,
      targeting(node),
      { deadline: Date.now() + 5000 },
      (err, res) => resolve(err ? fail(err) : (res as Res)),
    ),
  );
}

function isFailure(x: unknown): x is Failure {
  return typeof x === 'object' && x !== null && 'code' in x && 'details' in x;
}

function failure(x: unknown, what: string): Failure {
  assert.ok(isFailure(x), `${what} should fail: ${JSON.stringify(x)}`);
  return x;
}

function ok<T>(x: T | Failure, what: string): T {
  assert.ok(!isFailure(x), `${what}: ${JSON.stringify(x)}`);
  return x;
}

const pull = (
  c: grpc.Client,
  node: string,
  imageRef: string,
  containerd = SYSTEM,
): Promise<ImageServicePullResponse[] | Failure> => stream(c, ImageServiceService.pull, { containerd, imageRef }, node);
const pulledName = (res: ImageServicePullResponse[] | Failure): string | undefined => ok(res, 'pull').at(-1)?.name;
const upgrade = (
  c: grpc.Client,
  node: string,
  imageName: string,
  containerd = SYSTEM,
): Promise<LifecycleServiceUpgradeResponse[] | Failure> =>
  stream(c, LifecycleServiceService.upgrade, { containerd, source: { imageName } }, node);
const exitCode = (res: LifecycleServiceUpgradeResponse[] | Failure): number | undefined =>
  ok(res, 'lifecycle upgrade').at(-1)?.progress?.exitCode;

function legacyUpgrade(c: grpc.Client, node: string, image: string): Promise<unknown> {
  return call(
    c,
    MachineServiceService.upgrade,
    { image, preserve: false, stage: false, force: false, rebootMode: UpgradeRequest_RebootMode.DEFAULT },
    node,
  );
}

/** ExtensionStatuses of a node: name → version (the `schematic` entry's version is the schematic ID). */
async function extensionStatuses(c: grpc.Client, node: string): Promise<Record<string, string>> {
  const res = ok(
    await stream<{ namespace: string; type: string; options: undefined }, ListResponse>(
      c,
      StateService.list,
      { namespace: 'runtime', type: 'ExtensionStatuses.runtime.talos.dev', options: undefined },
      node,
    ),
    'list',
  );
  const out: Record<string, string> = {};
  for (const r of res) {
    const layer = Layer.decode(r.resource?.spec?.protoSpec ?? new Uint8Array());
    out[layer.metadata?.name ?? ''] = layer.metadata?.version ?? '';
  }
  return out;
}

/** An Events message as compared: its payload's type and fields, its actor ID. */
interface SeenEvent {
  id: string;
  actorId: string;
  type: string;
  what: string;
}

const PAYLOADS: Record<string, (b: Uint8Array) => string> = {
  'talos/runtime/machine.SequenceEvent': (b) => {
    const e = SequenceEvent.decode(b);
    return `${e.sequence} ${SequenceEvent_Action[e.action]}${e.error ? ` ${Code[e.error.code]} ${e.error.message}` : ''}`;
  },
  'talos/runtime/machine.PhaseEvent': (b) => {
    const e = PhaseEvent.decode(b);
    return `${e.phase} ${PhaseEvent_Action[e.action]}`;
  },
  'talos/runtime/machine.TaskEvent': (b) => {
    const e = TaskEvent.decode(b);
    return `${e.task} ${TaskEvent_Action[e.action]}`;
  },
  'talos/runtime/machine.ServiceStateEvent': (b) => {
    const e = ServiceStateEvent.decode(b);
    return `${e.service} ${ServiceStateEvent_Action[e.action]}${e.health?.unknown === false ? ` healthy=${e.health.healthy}` : ''}`;
  },
  'talos/runtime/machine.MachineStatusEvent': (b) => {
    const e = MachineStatusEvent.decode(b);
    return `${MachineStatusEvent_MachineStage[e.stage]} ready=${e.status?.ready}`;
  },
};

function seen(e: MachineEvent): SeenEvent {
  const typeUrl = e.data?.typeUrl ?? '';
  const decode = PAYLOADS[typeUrl];
  return {
    id: e.id,
    actorId: e.actorId,
    type: typeUrl.replace('talos/runtime/machine.', ''),
    what: decode ? decode(e.data?.value ?? new Uint8Array()) : '',
  };
}

/**
 * An Events stream read until `done` holds for what arrived (then cancelled), or until it fails:
 * the events as seen, and the failure if any.
 */
function readEvents(
  c: grpc.Client,
  node: string,
  req: Partial<EventsRequest>,
  until: ((got: SeenEvent[]) => boolean) | { done: (got: SeenEvent[]) => boolean; deadlineMs: number },
): Promise<{ events: SeenEvent[]; failure?: Failure }> {
  const { done, deadlineMs } = typeof until === 'function' ? { done: until, deadlineMs: 15_000 } : until;
  return new Promise((resolve) => {
    const events: SeenEvent[] = [];
    const s = c.makeServerStreamRequest(
      MachineServiceService.events.path,
      MachineServiceService.events.requestSerialize,
      MachineServiceService.events.responseDeserialize,
      EventsRequest.fromPartial(req),
      targeting(node),
      { deadline: Date.now() + deadlineMs },
    );
    s.on('data', (m: MachineEvent) => {
      events.push(seen(m));
      if (done(events)) {
        s.cancel();
        resolve({ events });
      }
    });
    s.on('error', (err: grpc.ServiceError) => resolve({ events, failure: fail(err) }));
    s.on('end', () => resolve({ events }));
  });
}

const has =
  (type: string, what: string | RegExp) =>
  (got: SeenEvent[]): boolean =>
    got.some((e) => e.type === type && (typeof what === 'string' ? e.what === what : what.test(e.what)));

describe('Talos simulator fidelity (issue 22)', function () {
  this.timeout(60_000);
  let dir: LabDir;
  let sim: TalosSimulator;
  let c: grpc.Client;
  let reader: grpc.Client;
  let fleet: ReturnType<typeof createRecordingFleet>;

  const node = (name: string, talosVersion: string, i: number, role: 'controlplane' | 'worker' = 'worker') => ({
    name,
    role,
    talosVersion,
    kubernetesVersion: 'v1.35.4',
    schematic: SCHEMATIC,
    internalIP: `127.0.86.${i}`,
  });

  before(async function () {
    dir = makeLabDir('talos-fidelity');
    fleet = createRecordingFleet([
      node('fid-ns', 'v1.13.9', 1),
      node('fid-alias', 'v1.13.9', 2),
      node('fid-plain', 'v1.12.6', 3),
      node('fid-vanilla', 'v1.13.9', 4),
      node('fid-same', 'v1.13.9', 5),
      node('fid-cp-1135', 'v1.13.5', 6, 'controlplane'),
      node('fid-1133', 'v1.13.3', 7),
      node('fid-1129', 'v1.12.9', 8),
      node('fid-1128', 'v1.12.8', 9),
      node('fid-114', 'v1.14.0-alpha.2', 10),
      node('fid-cache', 'v1.13.9', 11),
      node('fid-verify', 'v1.14.0', 12),
      node('fid-ev', 'v1.13.9', 13),
      node('fid-18', 'v1.8.4', 14),
      node('fid-actor', 'v1.12.6', 15),
      node('fid-svc', 'v1.13.9', 16),
    ]);
    sim = await startTalosSimulator({
      fleet,
      dir: dir.path,
      nodeListeners: false,
      timings: { rebootMs: 40, bootMs: 20 },
    });
    c = rawClient(sim);
    const r = sim.issueClientCert('fid-reader', { roles: ['os:reader'] });
    reader = new grpc.Client(
      sim.endpoint,
      grpc.credentials.createSsl(Buffer.from(sim.caPem), Buffer.from(r.key), Buffer.from(r.cert)),
    );
  });

  after(async function () {
    c?.close();
    reader?.close();
    await sim?.stop();
    dir?.remove();
  });

  const running = (name: string, tag: string): Promise<true> =>
    waitFor(() => (sim.node(name).phase === 'running' && sim.node(name).version === tag) || undefined, {
      timeoutMs: 10_000,
      intervalMs: 10,
      description: `${name} running ${tag}`,
    });

  // 1. internal/app/lifecycle/container.go: GetImage in the namespace of the request, else
  //    Internal "installer image … not found in containerd store"; ctrhelper.go: instance validation.
  it('1: pulled images are kept per containerd namespace; the upgrade finds the installer only in the namespace it names', async function () {
    const image = `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.14.0`;
    assert.equal(pulledName(await pull(c, 'fid-ns', image, CRI)), image);
    const wrong = failure(await upgrade(c, 'fid-ns', image, SYSTEM), 'upgrade from system after a pull into cri');
    assert.equal(wrong.code, 'INTERNAL');
    assert.equal(
      wrong.details,
      `upgrade failed: installer image "${image}" not found in containerd store: image "${image}": not found`,
    );
    assert.equal(sim.node('fid-ns').staged, undefined);

    const invalid = failure(
      await pull(c, 'fid-ns', image, { driver: ContainerDriver.CONTAINERD, namespace: ContainerdNamespace.NS_CRI }),
      'cri namespace on the system containerd',
    );
    assert.deepEqual(invalid, { code: 'INVALID_ARGUMENT', details: 'cannot use CRI namespace with containerd driver' });

    assert.equal(exitCode(await upgrade(c, 'fid-ns', image, CRI)), 0, 'the namespace it was pulled into');
    assert.equal(sim.node('fid-ns').staged?.version, 'v1.14.0');
  });

  // Issue 49, item 7. internal/app/images/images.go Pull uses image.WithSkipIfAlreadyPulled:
  // internal/pkg/containers/image/pull.go pullInternal asks containerd for an image by the exact
  // (normalized) name first and, found and unpacked, returns it before any progress reporter exists:
  // the stream carries only the name, and nothing is resolved. Content held under another name or in
  // another namespace of the same containerd (its content store is shared) is pulled, but its layers
  // report ALREADY_EXISTS (content there before the pull) and EXTRACT_COMPLETE once unpacked for this
  // namespace (progress/pull_progress.go trackOngoingPulls, trackPulledLayers). The store of the CRI
  // containerd is /var/lib/containerd on EPHEMERAL (kept by reboots); the system containerd's is under
  // /system, a tmpfs recreated on every boot (learn-more/architecture.md).
  it("49/7: pulling a name the namespace holds sends only the name; content held elsewhere in the containerd is ALREADY_EXISTS; a reboot keeps the CRI containerd's images and drops the system containerd's", async function () {
    const image = 'ghcr.io/siderolabs/installer:v1.14.0';
    const system = { driver: ContainerDriver.CONTAINERD, namespace: ContainerdNamespace.NS_SYSTEM };
    const statuses = (res: ImageServicePullResponse[] | Failure): string[] => [
      ...new Set(
        ok(res, 'pull').flatMap((m) =>
          m.pullProgress ? [ImageServicePullLayerProgress_Status[m.pullProgress.progress?.status ?? 0] ?? '?'] : [],
        ),
      ),
    ];
    const effects = (): (string | undefined)[] =>
      sim
        .node('fid-cache')
        .calls.filter((x) => x.method === 'ImageService.Pull')
        .map((x) => x.effect);
    assert.deepEqual(statuses(await pull(c, 'fid-cache', image)), ['DOWNLOADING', 'EXTRACT_COMPLETE']);
    const again = ok(await pull(c, 'fid-cache', image), 'the same pull again');
    assert.deepEqual(
      again.map((m) => m.name ?? 'progress'),
      [image],
      'only the name: the pull is skipped',
    );
    sim.faults.set('fid-cache', { missingImages: [image] });
    assert.equal(pulledName(await pull(c, 'fid-cache', image)), image, 'skipped before the reference is resolved');
    sim.faults.clear('fid-cache');
    assert.deepEqual(
      statuses(await pull(c, 'fid-cache', image, CRI)),
      ['ALREADY_EXISTS', 'EXTRACT_COMPLETE'],
      'the namespaces of one containerd share its content',
    );
    assert.deepEqual(
      statuses(
        await pull(
          c,
          'fid-cache',
          'ghcr.io/siderolabs/installer@' +
            (sim.node('fid-cache').containerd.get('CRI/NS_SYSTEM')?.get(image)?.digest ?? ''),
        ),
      ),
      [],
      'the digest alias names it too',
    );
    assert.deepEqual(
      statuses(await pull(c, 'fid-cache', image, system)),
      ['DOWNLOADING', 'EXTRACT_COMPLETE'],
      'the system containerd is another store',
    );
    assert.deepEqual(effects(), [
      'pulled',
      'already present',
      'already present',
      'layers already present',
      'already present',
      'pulled',
    ]);
    const bootId = sim.node('fid-cache').bootId;
    ok(await call(c, MachineServiceService.reboot, { mode: RebootRequest_Mode.DEFAULT }, 'fid-cache'), 'reboot');
    await waitFor(
      () => (sim.node('fid-cache').phase === 'running' && sim.node('fid-cache').bootId !== bootId) || undefined,
      { timeoutMs: 10_000, intervalMs: 10, description: 'fid-cache rebooted' },
    );
    assert.deepEqual(statuses(await pull(c, 'fid-cache', image)), [], 'CRI containerd: kept on EPHEMERAL');
    assert.deepEqual(
      statuses(await pull(c, 'fid-cache', image, system)),
      ['DOWNLOADING', 'EXTRACT_COMPLETE'],
      'system containerd: /system is recreated on boot',
    );
  });

  // 3. internal/pkg/containers/image/pull.go + aliases.go (manageAliases): the pulled name is the
  //    normalized reference; aliases for the digest, `name:tag` and `name@digest`.
  it('3: Pull answers the normalized name; digest, tag and name@digest all name the image for the upgrade', async function () {
    const tagged = `ghcr.io/siderolabs/installer:v1.13.10`;
    assert.equal(pulledName(await pull(c, 'fid-alias', tagged)), tagged);
    const stored = sim.node('fid-alias').containerd.get('CRI/NS_SYSTEM');
    const digest = stored?.get(tagged)?.digest ?? '';
    assert.match(digest, /^sha256:[0-9a-f]{64}$/);
    assert.deepEqual(
      [...(stored?.keys() ?? [])].sort(),
      [digest, `ghcr.io/siderolabs/installer@${digest}`, tagged].sort(),
    );
    for (const name of [digest, `ghcr.io/siderolabs/installer@${digest}`, tagged]) {
      assert.equal(exitCode(await upgrade(c, 'fid-alias', name)), 0, `upgrade by ${name}`);
      assert.equal(sim.node('fid-alias').staged?.version, 'v1.13.10', `${name} installs the tag it was published as`);
    }
    // containerd looks names up exactly: `name:tag@digest` is none of the aliases.
    assert.equal(failure(await upgrade(c, 'fid-alias', `${tagged}@${digest}`), 'name:tag@digest').code, 'INTERNAL');
    // ParseDockerRef drops the tag of `name:tag@digest` and completes short names.
    assert.equal(
      pulledName(await pull(c, 'fid-alias', `${tagged}@${digest}`)),
      `ghcr.io/siderolabs/installer@${digest}`,
    );
    assert.equal(pulledName(await pull(c, 'fid-alias', 'alpine')), 'docker.io/library/alpine:latest');
    assert.equal(failure(await pull(c, 'fid-alias', 'Not A Reference'), 'invalid reference').code, 'UNKNOWN');
  });

  // Issue 49, item 1. internal/app/images/images.go Pull answers img.Name(), the name containerd
  // created the image under: the reference it pulled, as containerd's resolver answers the reference
  // it was given (containerd core/remotes/docker/resolver.go Resolve; client/pull.go fetch). That is
  // the normalized `name:tag` (internal/pkg/containers/image/pull.go pullInternal), except when an
  // ImageVerificationConfig rule matches the image: then pullInternal pulls verify.ImageSignature's
  // DigestedImageRef (internal/pkg/containers/image/verify/verify.go), `name@sha256:<digest>`.
  // manageAliases (aliases.go) still names the image by its tag, so the upgrade finds it by the tag.
  it('49/1: Pull answers `name:tag`, or `name@sha256:<digest>` when an image verification rule matches; the upgrade finds the installer by its tag either way', async function () {
    const tagged = `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.14.1`;
    const repo = `factory.talos.dev/metal-installer/${SCHEMATIC}`;
    sim.faults.set('fid-verify', { imageVerification: true });
    try {
      const name = pulledName(await pull(c, 'fid-verify', tagged));
      const digest = sim.node('fid-verify').containerd.get('CRI/NS_SYSTEM')?.get(tagged)?.digest ?? '';
      assert.match(digest, /^sha256:[0-9a-f]{64}$/);
      assert.equal(name, `${repo}@${digest}`, 'verified: pulled and named by the digest');
      assert.deepEqual(
        [...(sim.node('fid-verify').containerd.get('CRI/NS_SYSTEM')?.keys() ?? [])].sort(),
        [digest, `${repo}@${digest}`, tagged].sort(),
      );
      assert.equal(exitCode(await upgrade(c, 'fid-verify', tagged)), 0, 'the installer by its tag');
      assert.equal(sim.node('fid-verify').staged?.version, 'v1.14.1');
    } finally {
      sim.faults.clear('fid-verify');
    }
    // Without a rule (the default) the same pull answers the tag.
    const other = `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.14.2`;
    assert.equal(pulledName(await pull(c, 'fid-verify', other)), other);
  });

  // 4. internal/app/machined/pkg/controllers/runtime/extension_status.go: the statuses are the booted
  //    image's extensions; a plain installer (no Image Factory) has none, not even `schematic`.
  it('4: a plain installer leaves the node without extensions and without a schematic', async function () {
    assert.deepEqual(await extensionStatuses(c, 'fid-plain'), {
      'iscsi-tools': 'v0.2.0',
      'qemu-guest-agent': '10.0.2',
      schematic: SCHEMATIC,
    });
    ok(await legacyUpgrade(c, 'fid-plain', 'ghcr.io/siderolabs/installer:v1.13.9'), 'legacy upgrade');
    await running('fid-plain', 'v1.13.9');
    assert.deepEqual(await extensionStatuses(c, 'fid-plain'), {});
    assert.equal(sim.node('fid-plain').schematic, undefined);
    // The Kubernetes side: Talos labels the Node from the booted image, so the schematic annotation goes too.
    assert.equal(fleet.node('fid-plain')?.schematic, '');
  });

  it('4: a factory installer brings its own schematic: vanilla has no extensions, the same schematic keeps them', async function () {
    const vanilla = `factory.talos.dev/metal-installer/${VANILLA_SCHEMATIC}:v1.14.0`;
    const same = `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.14.0`;
    for (const [name, image] of [
      ['fid-vanilla', vanilla],
      ['fid-same', same],
    ] as const) {
      pulledName(await pull(c, name, image));
      assert.equal(exitCode(await upgrade(c, name, image)), 0);
      ok(await call(c, MachineServiceService.reboot, { mode: RebootRequest_Mode.DEFAULT }, name), 'reboot');
      await running(name, 'v1.14.0');
    }
    assert.deepEqual(await extensionStatuses(c, 'fid-vanilla'), { schematic: VANILLA_SCHEMATIC });
    assert.deepEqual(await extensionStatuses(c, 'fid-same'), {
      'iscsi-tools': 'v0.2.0',
      'qemu-guest-agent': '10.0.2',
      schematic: SCHEMATIC,
    });
  });

  // 5. internal/app/resources/access.go: Sensitive types need os:admin, checked before the namespace;
  //    KubeletSpecs and APIServerConfigs are Sensitive from v1.12.9 and v1.13.4.
  it('5: os:reader is refused KubeletSpecs and APIServerConfigs on v1.12.9+ / v1.13.4+, allowed before', async function () {
    const get = (client: grpc.Client, n: string, [namespace, type, id]: [string, string, string]): Promise<unknown> =>
      call(client, StateService.get, { namespace, type, id, options: undefined }, n);
    const kubelet = (n: string): Promise<unknown> =>
      get(reader, n, ['k8s', 'KubeletSpecs.kubernetes.talos.dev', 'kubelet']);
    for (const n of ['fid-cp-1135', 'fid-1129'])
      assert.deepEqual(failure(await kubelet(n), `KubeletSpecs on ${n}`), {
        code: 'PERMISSION_DENIED',
        details: 'not authorized',
      });
    for (const n of ['fid-1133', 'fid-1128']) ok(await kubelet(n), `KubeletSpecs on ${n}`);
    const apiServer = failure(
      await get(reader, 'fid-cp-1135', ['controlplane', 'APIServerConfigs.kubernetes.talos.dev', 'kube-apiserver']),
      'APIServerConfigs',
    );
    assert.equal(apiServer.code, 'PERMISSION_DENIED');
    ok(
      await get(c, 'fid-cp-1135', ['controlplane', 'APIServerConfigs.kubernetes.talos.dev', 'kube-apiserver']),
      'admin reads it',
    );
  });

  it('5: os:reader listing MachineConfigs in another namespace is refused (sensitivity first); os:admin gets an empty list', async function () {
    const list = (client: grpc.Client): Promise<ListResponse[] | Failure> =>
      stream(
        client,
        StateService.list,
        { namespace: 'runtime', type: 'MachineConfigs.config.talos.dev', options: undefined },
        'fid-1133',
      );
    assert.deepEqual(failure(await list(reader), 'reader'), { code: 'PERMISSION_DENIED', details: 'not authorized' });
    assert.deepEqual(ok(await list(c), 'admin'), []);
  });

  // 6. internal/app/lifecycle/lifecycle.go Install: an installed machine answers AlreadyExists.
  it('6: LifecycleService.Install on an installed node answers ALREADY_EXISTS "machine is already installed"', async function () {
    const res = await stream(
      c,
      LifecycleServiceService.install,
      {
        containerd: SYSTEM,
        source: { imageName: `ghcr.io/siderolabs/installer:v1.13.9` },
        destination: { disk: '/dev/sda' },
      },
      'fid-1133',
    );
    assert.deepEqual(failure(res, 'install'), { code: 'ALREADY_EXISTS', details: 'machine is already installed' });
  });

  // 7. internal/app/machined/pkg/runtime/v1alpha2/v1alpha2_state.go registers the namespaces
  //    (v1.13 adds security); access.go refuses any other name with PermissionDenied.
  it('7: registered namespaces answer empty for a type that lives elsewhere; other names are refused; security from v1.13', async function () {
    const list = (node: string, namespace: string): Promise<ListResponse[] | Failure> =>
      stream(c, StateService.list, { namespace, type: 'Versions.runtime.talos.dev', options: undefined }, node);
    for (const ns of ['cluster-raw', 'security', 'network-config', 'perf', 'meta'])
      assert.deepEqual(ok(await list('fid-1133', ns), `namespace ${ns}`), []);
    for (const ns of ['block', 'time', 'siderolink', 'containers', 'v1alpha1']) {
      assert.deepEqual(failure(await list('fid-1133', ns), `namespace ${ns}`), {
        code: 'PERMISSION_DENIED',
        details: `namespace "${ns}" is not supported`,
      });
    }
    assert.deepEqual(failure(await list('fid-1128', 'security'), 'security on v1.12'), {
      code: 'PERMISSION_DENIED',
      details: 'namespace "security" is not supported',
    });
  });

  // 8. cosi-project/runtime pkg/resource/meta/spec/resource_definition.go (Fill): what
  //    client.ResolveResourceKind (talosctl get <alias>) reads.
  it('8: meta ResourceDefinitions name every type with its generated aliases and sensitivity', async function () {
    const res = ok(
      await stream(
        reader,
        StateService.list,
        { namespace: 'meta', type: 'ResourceDefinitions.meta.cosi.dev', options: undefined },
        'fid-cp-1135',
      ),
      'list',
    );
    const defs = new Map(res.map((r) => [r.resource?.metadata?.id ?? '', r.resource?.spec?.yamlSpec ?? '']));
    const mc = defs.get('machineconfigs.config.talos.dev') ?? '';
    for (const line of [
      'type: MachineConfigs.config.talos.dev',
      'displayType: MachineConfig',
      'defaultNamespace: config',
      'sensitivity: sensitive',
    ])
      assert.ok(mc.includes(line), `${line} in\n${mc}`);
    assert.match(mc, /aliases:\n {2}- machineconfig\n {2}- mc\n {2}- mcs\n/);
    assert.match(
      mc,
      /allAliases:\n {2}- machineconfigs\n {2}- machineconfigs\.config\n {2}- machineconfigs\.config\.talos\n/,
    );
    const es = defs.get('extensionstatuses.runtime.talos.dev') ?? '';
    assert.match(es, /displayType: ExtensionStatus\n/);
    assert.ok(!es.includes('sensitivity'), es);
    assert.ok(
      (defs.get('kubeletspecs.kubernetes.talos.dev') ?? '').includes('sensitivity: sensitive'),
      'KubeletSpecs sensitive on v1.13.5',
    );
  });

  // Issue 49, item 8. cosi-project/runtime pkg/resource/meta/spec/resource_definition.go: the spec is
  // marshalled to protobuf too (MarshalProto, cosi-project/specification proto/v1alpha1/meta.proto),
  // and that is what Siderolabs' client decodes: pkg/machinery/client/resources.go ResolveResourceKind
  // matches `talosctl get <kind>` against each definition's ID and allAliases (case-insensitively)
  // and takes its defaultNamespace. Fill adds to the aliases a type's ResourceDefinition() declares
  // (v1alpha1/service.go `svc`, runtime/extension_status.go `extensions`, meta resource_definition.go
  // `api-resources`) the lower-cased singular and the initials (`ms`, `mc`/`mcs`); sensitivity is the
  // type's (config/machine_config.go always; k8s/kubelet_spec.go from v1.12.9 and v1.13.4).
  it('49/8: meta ResourceDefinitions carry the protobuf spec the Go client resolves `talosctl get ms|svc|extensions` with, sensitivity by version', async function () {
    const definitions = async (n: string, client = c): Promise<Map<string, ResourceDefinitionSpec>> =>
      new Map(
        ok(
          await stream(
            client,
            StateService.list,
            { namespace: 'meta', type: 'ResourceDefinitions.meta.cosi.dev', options: undefined },
            n,
          ),
          'definitions',
        ).map((r) => [r.resource?.metadata?.id ?? '', ResourceDefinitionSpec.decode(protoOf(r.resource))]),
      );
    const resolve = (defs: Map<string, ResourceDefinitionSpec>, kind: string): string[] =>
      [...defs]
        .filter(
          ([id, d]) =>
            id.toLowerCase() === kind.toLowerCase() || d.allAliases.some((a) => a.toLowerCase() === kind.toLowerCase()),
        )
        .map(([, d]) => `${d.defaultNamespace}/${d.resourceType}`);
    const cp = await definitions('fid-cp-1135', reader);
    for (const [kind, want] of [
      ['ms', 'runtime/MachineStatuses.runtime.talos.dev'],
      ['MachineStatus', 'runtime/MachineStatuses.runtime.talos.dev'],
      ['svc', 'runtime/Services.v1alpha1.talos.dev'],
      ['service', 'runtime/Services.v1alpha1.talos.dev'],
      ['extensions', 'runtime/ExtensionStatuses.runtime.talos.dev'],
      ['mc', 'config/MachineConfigs.config.talos.dev'],
      ['machineconfigs.config', 'config/MachineConfigs.config.talos.dev'],
      ['kubeletspecs.kubernetes.talos.dev', 'k8s/KubeletSpecs.kubernetes.talos.dev'],
      ['apiserverconfig', 'controlplane/APIServerConfigs.kubernetes.talos.dev'],
      ['api-resources', 'meta/ResourceDefinitions.meta.cosi.dev'],
      ['rd', 'meta/ResourceDefinitions.meta.cosi.dev'],
    ])
      assert.deepEqual(resolve(cp, kind ?? ''), [want], `talosctl get ${kind}`);
    const ms = cp.get('machinestatuses.runtime.talos.dev');
    assert.deepEqual(
      [ms?.displayType, ms?.aliases, ms?.allAliases],
      [
        'MachineStatus',
        ['machinestatus', 'ms'],
        ['machinestatuses', 'machinestatuses.runtime', 'machinestatuses.runtime.talos', 'machinestatus', 'ms'],
      ],
    );
    assert.deepEqual(ms?.printColumns, [
      { name: 'Stage', jsonPath: '{.stage}' },
      { name: 'Ready', jsonPath: '{.status.ready}' },
    ]);
    const svc = cp.get('services.v1alpha1.talos.dev');
    assert.deepEqual([svc?.displayType, svc?.aliases], ['Service', ['svc', 'service']]);
    assert.deepEqual(cp.get('extensionstatuses.runtime.talos.dev')?.aliases, ['extensions', 'extensionstatus', 'es']);
    const sensitivity = (defs: Map<string, ResourceDefinitionSpec>, type: string) =>
      ResourceDefinitionSpec_Sensitivity[defs.get(type.toLowerCase())?.sensitivity ?? -1];
    assert.equal(sensitivity(cp, 'MachineConfigs.config.talos.dev'), 'SENSITIVE');
    assert.equal(sensitivity(cp, 'KubeletSpecs.kubernetes.talos.dev'), 'SENSITIVE', 'on v1.13.5');
    assert.equal(sensitivity(cp, 'MachineStatuses.runtime.talos.dev'), 'NON_SENSITIVE');
    const old = await definitions('fid-1133');
    assert.equal(sensitivity(old, 'MachineConfigs.config.talos.dev'), 'SENSITIVE', 'on v1.13.3');
    assert.equal(sensitivity(old, 'KubeletSpecs.kubernetes.talos.dev'), 'NON_SENSITIVE', 'on v1.13.3');
    assert.deepEqual(resolve(old, 'bootid'), [], 'no BootIDs definition before v1.14.0-alpha.2');
  });

  // 9. extension_status.go: the ID is the layer's image without `.sqsh`; the imager names images by index.
  it('9: extension IDs are the layer index and images `<index>.sqsh`', async function () {
    const res = ok(
      await stream(
        c,
        StateService.list,
        { namespace: 'runtime', type: 'ExtensionStatuses.runtime.talos.dev', options: undefined },
        'fid-1133',
      ),
      'list',
    );
    const got = res.map((r) => [
      r.resource?.metadata?.id,
      Layer.decode(r.resource?.spec?.protoSpec ?? new Uint8Array()).image,
    ]);
    assert.deepEqual(got, [
      ['0', '0.sqsh'],
      ['1', '1.sqsh'],
      ['2', '2.sqsh'],
    ]);
  });

  type Listed =
    | { metadata?: { owner: string } | undefined; spec?: { protoSpec: Uint8Array; yamlSpec: string } | undefined }
    | undefined;
  const protoOf = (r: Listed): Uint8Array => r?.spec?.protoSpec ?? new Uint8Array();
  const yamlOf = (r: Listed): string => r?.spec?.yamlSpec ?? '';
  const ownerOf = (r: { metadata?: { owner: string } | undefined } | undefined): string =>
    r?.metadata?.owner ?? '<missing>';
  const list = async (n: string, namespace: string, type: string) =>
    ok(await stream(c, StateService.list, { namespace, type, options: undefined }, n), `list ${type}`).map(
      (r) => r.resource,
    );

  // 10. Each type's metadata.owner is its controller's Name() (runtime/machine_status.go, version.go,
  //     extension_status.go, image_factory_schematic.go, v1alpha1/service.go, k8s/kubelet_spec.go,
  //     k8s/control_plane.go); machined writes MachineConfigs itself (config/acquire.go SetConfig).
  it('10: every resource names the controller that owns it; MachineConfigs have none', async function () {
    const types = [
      ['runtime', 'MachineStatuses.runtime.talos.dev'],
      ['runtime', 'Versions.runtime.talos.dev'],
      ['runtime', 'ExtensionStatuses.runtime.talos.dev'],
      ['runtime', 'Services.v1alpha1.talos.dev'],
      ['config', 'MachineConfigs.config.talos.dev'],
      ['k8s', 'KubeletSpecs.kubernetes.talos.dev'],
      ['controlplane', 'APIServerConfigs.kubernetes.talos.dev'],
      ['controlplane', 'ControllerManagerConfigs.kubernetes.talos.dev'],
      ['controlplane', 'SchedulerConfigs.kubernetes.talos.dev'],
    ];
    const owners: Record<string, string> = Object.fromEntries(
      await Promise.all(
        types.map(async ([namespace = '', type = '']): Promise<[string, string]> => [
          type,
          [...new Set((await list('fid-cp-1135', namespace, type)).map(ownerOf))].join(),
        ]),
      ),
    );
    assert.deepEqual(owners, {
      'MachineStatuses.runtime.talos.dev': 'runtime.MachineStatusController',
      'Versions.runtime.talos.dev': 'runtime.VersionController',
      'ExtensionStatuses.runtime.talos.dev': 'runtime.ExtensionStatusController',
      'Services.v1alpha1.talos.dev': 'v1alpha1.ServiceController',
      'MachineConfigs.config.talos.dev': '',
      'KubeletSpecs.kubernetes.talos.dev': 'k8s.KubeletSpecController',
      'APIServerConfigs.kubernetes.talos.dev': 'k8s.ControlPlaneAPIServerController',
      'ControllerManagerConfigs.kubernetes.talos.dev': 'k8s.ControlPlaneControllerManagerController',
      'SchedulerConfigs.kubernetes.talos.dev': 'k8s.ControlPlaneSchedulerController',
    });
  });

  // Issue 49, item 6: machined sets MachineConfig's yaml_spec to the config as a YAML string, written by
  // Go's yaml.v3 as a literal block indented by four spaces (config/machine_config.go); a block left
  // unindented at the top level, as the yaml package writes it, reads as an empty string in Go.
  it('6: the MachineConfig yaml_spec is the whole config as an indented literal block', async function () {
    const [mc] = await list('fid-cp-1135', 'config', 'MachineConfigs.config.talos.dev');
    const text = yamlOf(mc);
    assert.match(text, /^\|[-+]?\n {4}\S/, text.slice(0, 40));
    const config = parseYaml(text) as unknown;
    assert.equal(typeof config, 'string');
    assert.match(String(config), /^version: v1alpha1$/m);
  });

  // 10. k8s/control_plane.go fills ServiceCIDRs / PodCIDRs from cluster.network; k8s/kubelet_spec.go
  //     puts the KubeletConfiguration it builds into KubeletSpec.config.
  it('10: the CIDRs of cluster.network reach APIServerConfig and ControllerManagerConfig; KubeletSpec carries the kubelet configuration', async function () {
    const [api] = await list('fid-cp-1135', 'controlplane', 'APIServerConfigs.kubernetes.talos.dev');
    assert.deepEqual(APIServerConfigSpec.decode(protoOf(api)).serviceCidRs, ['10.96.0.0/12']);
    // Issue 49, item 6: the API server's YAML key is the struct tag `serviceCIDR` (k8s/apiserver_config.go), the controller manager's `serviceCIDRs`.
    assert.match(yamlOf(api), /serviceCIDR:\n {2}- 10\.96\.0\.0\/12\n/);
    assert.ok(!yamlOf(api).includes('serviceCIDRs'), yamlOf(api));
    const [cm] = await list('fid-cp-1135', 'controlplane', 'ControllerManagerConfigs.kubernetes.talos.dev');
    const cmSpec = ControllerManagerConfigSpec.decode(protoOf(cm));
    assert.deepEqual([cmSpec.podCidRs, cmSpec.serviceCidRs], [['10.244.0.0/16'], ['10.96.0.0/12']]);
    assert.match(yamlOf(cm), /podCIDRs:\n {2}- 10\.244\.0\.0\/16\n/);
    const [kubelet] = await list('fid-1133', 'k8s', 'KubeletSpecs.kubernetes.talos.dev');
    const config = (KubeletSpecSpec.decode(protoOf(kubelet)).config ?? {}) as Record<string, unknown>;
    assert.equal(config['kind'], 'KubeletConfiguration');
    assert.equal(config['apiVersion'], 'kubelet.config.k8s.io/v1beta1');
    assert.deepEqual([config['clusterDomain'], config['clusterDNS']], ['cluster.local', ['10.96.0.10']]);
    assert.match(yamlOf(kubelet), /config:\n {2}apiVersion: kubelet\.config\.k8s\.io\/v1beta1\n/);
  });

  // 10. `talosctl services`: machined runs its system services; etcd and trustd only on a control plane.
  //     Issue 49, item 9: v1alpha1/service.go (ServiceController) keeps a Services resource per running
  //     service, syslogd and the dashboard included, auditd from v1.9; the dashboard has no health check.
  it('10: Services lists the system services besides the kubelet, etcd and trustd only on a control-plane node', async function () {
    const ids = async (n: string) =>
      (await list(n, 'runtime', 'Services.v1alpha1.talos.dev')).map((r) => r?.metadata?.id).sort();
    assert.deepEqual(await ids('fid-cp-1135'), [
      'apid',
      'auditd',
      'containerd',
      'cri',
      'dashboard',
      'etcd',
      'kubelet',
      'machined',
      'syslogd',
      'trustd',
      'udevd',
    ]);
    assert.deepEqual(await ids('fid-1133'), [
      'apid',
      'auditd',
      'containerd',
      'cri',
      'dashboard',
      'kubelet',
      'machined',
      'syslogd',
      'udevd',
    ]);
    const dashboard = (await list('fid-1133', 'runtime', 'Services.v1alpha1.talos.dev')).find(
      (r) => r?.metadata?.id === 'dashboard',
    );
    assert.deepEqual(ServiceSpec.decode(protoOf(dashboard)), { running: true, healthy: false, unknown: true });
  });

  /** A service as a booted node runs it: Running, its last event Running, healthy (the dashboard's health unknown). */
  const assertBooted = (s: ServiceInfo): void => {
    assert.equal(s.state, 'Running', s.id);
    const health = s.id === 'dashboard' ? [true, false] : [false, true];
    assert.deepEqual([s.health?.unknown, s.health?.healthy], health, `${s.id} health`);
    const events = s.events?.events ?? [];
    assert.equal(events.at(-1)?.state, 'Running', `${s.id}: last event`);
    assert.ok(events.length > 0 && events.length <= 64, s.id);
  };

  // Issue 49, item 9. v1alpha1_server.go ServiceList answers every service of
  // system.Services(...).List() (sorted by ID) as ServiceRunner.AsProto (service_runner.go): its state
  // name, its last 64 events (system/events/events.go) and its health (system/health: unknown until a
  // first check; the dashboard has no health check). Which services: v1alpha1_sequencer.go /
  // v1alpha1_sequencer_tasks.go (udevd, machined, auditd, syslogd, containerd, the dashboard and apid
  // early; cri, and trustd and etcd on a control plane, from startAllServices; the kubelet); syslogd
  // since v1.7 (siderolabs/talos#8287), auditd since v1.9 (siderolabs/talos#9620). os:reader may call it.
  it('49/9: ServiceList answers the services a booted node of that version and role runs, Running and healthy (the dashboard health unknown)', async function () {
    const services = async (n: string, client = c): Promise<ServiceInfo[]> =>
      ok(await call(client, MachineServiceService.serviceList, {}, n), `ServiceList on ${n}`).messages[0]?.services ??
      [];
    const cp = await services('fid-cp-1135', reader);
    assert.deepEqual(
      cp.map((s) => s.id),
      ['apid', 'auditd', 'containerd', 'cri', 'dashboard', 'etcd', 'kubelet', 'machined', 'syslogd', 'trustd', 'udevd'],
    );
    cp.forEach(assertBooted);
    assert.equal(cp.find((s) => s.id === 'etcd')?.events?.events.at(-1)?.msg, 'Health check successful');
    assert.deepEqual(
      (await services('fid-1133')).map((s) => s.id),
      ['apid', 'auditd', 'containerd', 'cri', 'dashboard', 'kubelet', 'machined', 'syslogd', 'udevd'],
      'a worker: no etcd, no trustd',
    );
    assert.deepEqual(
      (await services('fid-18')).map((s) => s.id),
      ['apid', 'containerd', 'cri', 'dashboard', 'kubelet', 'machined', 'syslogd', 'udevd'],
      'v1.8: no auditd',
    );
  });

  // v1alpha1_sequencer.go Reboot: stopServicesForUpgrade (v1alpha1_sequencer_tasks.go
  // StopServicesEphemeral: cri, udevd, trustd and their dependents) before stopAllServices; machined's
  // services live in memory, so after the boot the history starts again.
  it('49/9: during a reboot ServiceList shows the services on EPHEMERAL stopped; the node down answers UNAVAILABLE; after the boot all run again', async function () {
    const state = async (): Promise<Record<string, string>> =>
      Object.fromEntries(
        (
          ok(await call(c, MachineServiceService.serviceList, {}, 'fid-svc'), 'ServiceList').messages[0]?.services ?? []
        ).map((s) => [s.id, s.state]),
      );
    sim.faults.set('fid-svc', { holdPhase: 'rebooting' });
    const bootId = sim.node('fid-svc').bootId;
    try {
      ok(await call(c, MachineServiceService.reboot, { mode: RebootRequest_Mode.DEFAULT }, 'fid-svc'), 'reboot');
      await waitFor(() => sim.node('fid-svc').history.includes('held in rebooting') || undefined, {
        timeoutMs: 10_000,
        intervalMs: 10,
        description: 'fid-svc held rebooting',
      });
      assert.deepEqual(await state(), {
        apid: 'Running',
        auditd: 'Running',
        containerd: 'Running',
        cri: 'Finished',
        dashboard: 'Running',
        kubelet: 'Finished',
        machined: 'Running',
        syslogd: 'Running',
        udevd: 'Finished',
      });
    } finally {
      sim.faults.clear('fid-svc');
    }
    await waitFor(() => sim.node('fid-svc').phase === 'down' || undefined, {
      timeoutMs: 10_000,
      intervalMs: 1,
      description: 'fid-svc down',
    });
    const down = await call(c, MachineServiceService.serviceList, {}, 'fid-svc');
    assert.equal(failure(down, 'ServiceList while down').code, 'UNAVAILABLE');
    await waitFor(
      () => (sim.node('fid-svc').phase === 'running' && sim.node('fid-svc').bootId !== bootId) || undefined,
      { timeoutMs: 10_000, intervalMs: 10, description: 'fid-svc rebooted' },
    );
    assert.ok(Object.values(await state()).every((s) => s === 'Running'));
    const kubelet = ok(
      await call(c, MachineServiceService.serviceList, {}, 'fid-svc'),
      'ServiceList',
    ).messages[0]?.services.find((s) => s.id === 'kubelet');
    assert.deepEqual(
      kubelet?.events?.events.map((e) => e.state),
      ['Waiting', 'Preparing', 'Preparing', 'Running', 'Running'],
      'a fresh history',
    );
  });

  // v1alpha1_server.go Events: sendEmptyEvent first (runtime/events.go NewEvent(nil, with_actor_id):
  // empty type URL, an xid ID), then Events().Watch. v1alpha1_controller.go publishes SequenceEvent
  // START/STOP and PhaseEvent/TaskEvent with the context of the API call (its actor ID), the
  // MachineStatusController its MachineStatusEvents and the service runners their ServiceStateEvents
  // without one. talosctl's tracker (cmd/talosctl/pkg/talos/action/node.go) follows the events of its
  // actor ID, reconnects with tail_events -1 when the node is back, and waits for RUNNING + ready.
  it('49/9: Events streams the node as it happens: hello, the reboot sequence with its actor ID, services stopping, UNAVAILABLE when down; after the boot tail_events -1 replays booting to running + ready', async function () {
    const before = sim.node('fid-ev').bootId;
    const live = readEvents(c, 'fid-ev', {}, () => false);
    await delay(50);
    const reboot = ok(
      await call(c, MachineServiceService.reboot, { mode: RebootRequest_Mode.DEFAULT }, 'fid-ev'),
      'reboot',
    );
    const actorId = reboot.messages[0]?.actorId ?? '';
    const { events, failure: broke } = await live;
    assert.equal(broke?.code, 'UNAVAILABLE', 'the stream breaks when the node goes down');
    assert.deepEqual(events[0], { id: events[0]?.id, actorId: '', type: '', what: '' }, 'the hello event first');
    for (const e of events) assert.match(e.id, /^[0-9a-v]{20}$/);
    assert.deepEqual(
      events.map((e) => e.id),
      events.map((e) => e.id).sort(),
      'xid IDs in order',
    );
    const of = (what: string): SeenEvent | undefined => events.find((e) => e.what === what);
    assert.equal(of('reboot START')?.actorId, actorId);
    assert.equal(of('stopAllServices START')?.actorId, actorId);
    assert.equal(of('REBOOTING ready=false')?.actorId, '', 'machine status events carry no actor ID');
    assert.equal(of('kubelet STOPPING')?.actorId, '');
    assert.ok(events.indexOf(of('reboot START') as SeenEvent) < events.indexOf(of('kubelet FINISHED') as SeenEvent));
    await waitFor(() => (sim.node('fid-ev').phase === 'running' && sim.node('fid-ev').bootId !== before) || undefined, {
      timeoutMs: 10_000,
      intervalMs: 10,
      description: 'fid-ev rebooted',
    });
    const replay = await readEvents(c, 'fid-ev', { tailEvents: -1 }, has('MachineStatusEvent', 'RUNNING ready=true'));
    const whats = replay.events.map((e) => `${e.type} ${e.what}`);
    assert.deepEqual(
      whats.filter((w) => w.startsWith('SequenceEvent') || w.startsWith('MachineStatusEvent')),
      [
        'SequenceEvent initialize START',
        'SequenceEvent initialize STOP',
        'SequenceEvent boot START',
        'MachineStatusEvent BOOTING ready=false',
        'SequenceEvent boot STOP',
        'MachineStatusEvent RUNNING ready=true',
      ],
      'a new boot: the old events are gone',
    );
    assert.ok(whats.includes('ServiceStateEvent kubelet RUNNING healthy=true'), whats.join('\n'));
  });

  // runtime/events.go WatchOptions: tail_events (> 0 that many, < 0 all), tail_id (after that ID),
  // tail_seconds; only one of them (WithTailID / WithTailDuration refuse the others); tail_id must be
  // an xid (v1alpha1_server.go Events: "error parsing tail_id"); with_actor_id keeps that actor's events
  // (runtime.WithActorID). Errors reach the caller after the hello event, as UNKNOWN.
  it('49/9: Events honours tail_events, tail_id, tail_seconds and with_actor_id', async function () {
    const all = (await readEvents(c, 'fid-1133', { tailEvents: -1 }, has('MachineStatusEvent', 'RUNNING ready=true')))
      .events;
    const backlog = all.slice(1);
    assert.ok(backlog.length > 10, `${backlog.length} events since the boot`);
    const two = await readEvents(c, 'fid-1133', { tailEvents: 2 }, (got) => got.length === 3);
    assert.deepEqual(
      two.events.slice(1).map((e) => e.id),
      backlog.slice(-2).map((e) => e.id),
    );
    const pivot = backlog[4]?.id ?? '';
    const after = await readEvents(c, 'fid-1133', { tailId: pivot }, (got) => got.length === backlog.length - 4);
    assert.deepEqual(
      after.events.slice(1).map((e) => e.id),
      backlog.slice(5).map((e) => e.id),
    );
    const recent = await readEvents(c, 'fid-1133', { tailSeconds: 3600 }, (got) => got.length === backlog.length + 1);
    assert.deepEqual(
      recent.events.slice(1).map((e) => e.id),
      backlog.map((e) => e.id),
    );
    const bad = await readEvents(c, 'fid-1133', { tailId: 'not-an-xid' }, () => false);
    assert.deepEqual(bad.failure, { code: 'UNKNOWN', details: 'error parsing tail_id: xid: invalid ID' });
    assert.equal(bad.events.length, 1, 'the hello event came first');
    const both = await readEvents(c, 'fid-1133', { tailEvents: 1, tailSeconds: 5 }, () => false);
    assert.deepEqual(both.failure, {
      code: 'UNKNOWN',
      details: "WithTailDuration can't be specified at the same time with WithTailEvents or WithTailID",
    });

    // with_actor_id: a legacy upgrade held while it installs; its actor's events only.
    sim.faults.set('fid-actor', { holdPhase: 'upgrading' });
    try {
      const up = ok(await legacyUpgrade(c, 'fid-actor', 'ghcr.io/siderolabs/installer:v1.12.7'), 'legacy upgrade') as {
        messages: { actorId: string }[];
      };
      const actorId = up.messages[0]?.actorId ?? '';
      const mine = await readEvents(
        c,
        'fid-actor',
        { tailEvents: -1, withActorId: actorId },
        has('TaskEvent', 'stopServicesForUpgrade STOP'),
      );
      assert.equal(mine.events[0]?.actorId, actorId, 'the hello event carries the requested actor ID');
      assert.ok(
        mine.events.every((e) => e.actorId === actorId),
        'only that actor',
      );
      assert.deepEqual(
        mine.events.slice(1, 4).map((e) => `${e.type} ${e.what}`),
        ['SequenceEvent upgrade START', 'PhaseEvent drain START', 'TaskEvent cordonAndDrainNode START'],
      );
      const other = await readEvents(
        c,
        'fid-actor',
        { tailEvents: -1, withActorId: 'someone-else' },
        {
          done: () => false,
          deadlineMs: 300,
        },
      );
      assert.equal(other.failure?.code, 'DEADLINE_EXCEEDED');
      assert.deepEqual(
        other.events.map((e) => [e.type, e.actorId]),
        [['', 'someone-else']],
        'another actor: the hello event only',
      );
    } finally {
      sim.faults.clear('fid-actor');
    }
    await running('fid-actor', 'v1.12.7');
  });

  // Issue 49, item 9. internal/app/machined/pkg/runtime/v1alpha2/v1alpha2_state.go registers the
  // `storage` (pkg/machinery/resources/storage) and `containers` (pkg/machinery/resources/containers)
  // namespaces on v1.14: a type that lives elsewhere is listed empty there, not refused.
  it('49/9: on v1.14 the storage and containers namespaces list empty; before they are refused', async function () {
    for (const ns of ['storage', 'containers']) {
      const listed = (n: string) =>
        stream(c, StateService.list, { namespace: ns, type: 'Versions.runtime.talos.dev', options: undefined }, n);
      assert.deepEqual(ok(await listed('fid-114'), `${ns} on v1.14`), []);
      assert.deepEqual(failure(await listed('fid-1133'), `${ns} on v1.13`), {
        code: 'PERMISSION_DENIED',
        details: `namespace "${ns}" is not supported`,
      });
    }
  });

  // Issue 49, item 4. internal/app/resources/access.go (AccessPolicy, the filter machined puts in
  // front of the COSI State server, v1alpha1_server.go Register): a type without a ResourceDefinition
  // is refused first, PermissionDenied `resource type "…" is not supported`. The definitions are those
  // a version registers (internal/app/machined/pkg/runtime/v1alpha2/v1alpha2_state.go): BootIDs and
  // ImageFactorySchematics from v1.14.0-alpha.2 (pkg/machinery/resources/runtime/boot_id.go,
  // image_factory_schematic.go), so on v1.13 they are not NotFound.
  it('49/4: a type the version does not have (BootIDs, ImageFactorySchematics on v1.13) is PERMISSION_DENIED "not supported" for Get, List, Watch and meta; on v1.14 it is there', async function () {
    for (const [type, id] of [
      ['BootIDs.runtime.talos.dev', 'boot-id'],
      ['ImageFactorySchematics.runtime.talos.dev', 'image-factory-schematic'],
    ] as const) {
      const refused = { code: 'PERMISSION_DENIED', details: `resource type "${type}" is not supported` };
      assert.deepEqual(
        failure(
          await call(c, StateService.get, { namespace: 'runtime', type, id, options: undefined }, 'fid-1133'),
          `Get ${type} on v1.13`,
        ),
        refused,
      );
      assert.deepEqual(
        failure(
          await stream(c, StateService.list, { namespace: 'runtime', type, options: undefined }, 'fid-1133'),
          `List ${type} on v1.13`,
        ),
        refused,
      );
      assert.deepEqual(
        failure(
          await stream(
            c,
            StateService.watch,
            { namespace: 'runtime', type, id, options: undefined, apiVersion: 1 },
            'fid-1133',
          ),
          `Watch ${type} on v1.13`,
        ),
        refused,
      );
      ok(
        await call(c, StateService.get, { namespace: 'runtime', type, id, options: undefined }, 'fid-114'),
        `Get ${type} on v1.14`,
      );
    }
    const defined = async (n: string): Promise<string[]> =>
      ok(
        await stream(
          c,
          StateService.list,
          { namespace: 'meta', type: 'ResourceDefinitions.meta.cosi.dev', options: undefined },
          n,
        ),
        'definitions',
      ).map((r) => r.resource?.metadata?.id ?? '');
    const on113 = await defined('fid-1133');
    assert.ok(
      !on113.includes('bootids.runtime.talos.dev') && !on113.includes('imagefactoryschematics.runtime.talos.dev'),
      on113.join(),
    );
    assert.ok(on113.includes('versions.runtime.talos.dev'));
    const on114 = await defined('fid-114');
    assert.ok(
      on114.includes('bootids.runtime.talos.dev') && on114.includes('imagefactoryschematics.runtime.talos.dev'),
      on114.join(),
    );
  });

  // Issue 49, item 5. cosi-project/runtime pkg/state/impl/inmem/collection.go Watch: a watch of one
  // ID that does not exist starts with a DESTROYED event of the resource's tombstone, which
  // pkg/resource/protobuf/resource.go marshals with metadata version `undefined`, phase `running`,
  // zero times, and an empty but present spec (the Go client refuses an event without one: "spec is
  // missing", resource.go Unmarshal). WatchKind's BOOTSTRAPPED event carries a tombstone too.
  // pkg/state/protobuf/server/server.go Watch refuses bootstrap contents and label queries for one ID.
  it('49/5: watching an ID that does not exist sends a DESTROYED tombstone (version "undefined", a spec); bootstrap contents or a label query on one ID are UNIMPLEMENTED', async function () {
    const firstEvents = (req: WatchRequest, count: number): Promise<WatchResponse[]> =>
      new Promise((resolve, reject) => {
        const got: WatchResponse[] = [];
        const s = c.makeServerStreamRequest(
          StateService.watch.path,
          StateService.watch.requestSerialize,
          StateService.watch.responseDeserialize,
          req,
          targeting('fid-1133'),
          {},
        );
        s.on('data', (m: WatchResponse) => {
          got.push(m);
          if (got.length === count) {
            s.cancel();
            resolve(got);
          }
        });
        s.on('error', (err: grpc.ServiceError) => (err.code === grpc.status.CANCELLED ? undefined : reject(err)));
      });
    const watch = (over: Partial<WatchRequest>): WatchRequest => ({
      namespace: 'runtime',
      type: 'Services.v1alpha1.talos.dev',
      id: 'no-such-service',
      options: undefined,
      apiVersion: 1,
      ...over,
    });
    /** An event's resource as compared: metadata fields, created time, and the spec (undefined when absent). */
    const shown = (e: WatchResponse['event'][number] | undefined) => {
      const r = e?.resource;
      const md = r?.metadata;
      return {
        type: e?.eventType,
        md: md && [md.namespace, md.type, md.id, md.version, md.phase, md.owner],
        created: md?.created?.toISOString(),
        spec: r?.spec && [r.spec.protoSpec.length, r.spec.yamlSpec],
      };
    };
    const [ready, initial] = await firstEvents(watch({}), 2);
    assert.deepEqual(ready?.event, [], 'first an empty WatchResponse');
    assert.deepEqual(shown(initial?.event[0]), {
      type: EventType.DESTROYED,
      md: ['runtime', 'Services.v1alpha1.talos.dev', 'no-such-service', 'undefined', 'running', ''],
      created: '0001-01-01T00:00:00.000Z',
      spec: [0, ''],
    });

    const [, bootstrapped] = await firstEvents(
      watch({
        id: undefined,
        options: {
          bootstrapContents: true,
          tailEvents: 0,
          labelQuery: [],
          idQuery: undefined,
          aggregated: false,
          bootstrapBookmark: false,
        },
      }),
      2,
    );
    assert.deepEqual(shown(bootstrapped?.event.at(-1)), {
      type: EventType.BOOTSTRAPPED,
      md: ['runtime', 'Services.v1alpha1.talos.dev', '', 'undefined', 'running', ''],
      created: '0001-01-01T00:00:00.000Z',
      spec: [0, ''],
    });

    const options = {
      bootstrapContents: true,
      tailEvents: 0,
      labelQuery: [],
      idQuery: undefined,
      aggregated: false,
      bootstrapBookmark: false,
    };
    assert.deepEqual(
      failure(
        await stream(c, StateService.watch, watch({ id: 'kubelet', options }), 'fid-1133'),
        'bootstrap contents for one ID',
      ),
      { code: 'UNIMPLEMENTED', details: 'bootstrap contents is not implemented for resource watch' },
    );
    const labelQuery = [{ terms: [{ key: 'a', op: 0, value: [], invert: false }] }];
    assert.deepEqual(
      failure(
        await stream(
          c,
          StateService.watch,
          watch({ id: 'kubelet', options: { ...options, bootstrapContents: false, labelQuery } }),
          'fid-1133',
        ),
        'label query for one ID',
      ),
      { code: 'UNIMPLEMENTED', details: 'label query is not implemented for resource watch' },
    );
  });

  // image_factory_schematic.go parseAuthor: the flavor is the author's name before " (", the URL inside.
  it("ImageFactorySchematic (v1.14): flavor and API URL parsed from the schematic extension's author", async function () {
    const [r] = await list('fid-114', 'runtime', 'ImageFactorySchematics.runtime.talos.dev');
    const spec = ImageFactorySchematicSpec.decode(protoOf(r));
    assert.deepEqual(
      [spec.schematicId, spec.flavor, spec.apiurl],
      [SCHEMATIC, 'Image Factory', 'https://factory.talos.dev'],
    );
  });
});

// 2. internal/app/images/images.go Pull (NotFound "error pulling image"), v1alpha1_server.go
//    Upgrade (PullAndValidateInstallerImage: "error validating installer image" before the ack).
describe('Talos simulator with the lab registry (issue 22, item 2)', function () {
  this.timeout(60_000);
  let dir: LabDir;
  let registry: Registry;
  let sim: TalosSimulator;
  let c: grpc.Client;
  let published: string;

  before(async function () {
    dir = makeLabDir('talos-fidelity-registry');
    registry = await startRegistry();
    published = (await registry.publish('siderolabs/installer', 'v1.13.9')).digest;
    await registry.publish(`metal-installer/${SCHEMATIC}`, 'v1.14.0');
    const fleet = createRecordingFleet([
      {
        name: 'reg-life',
        role: 'worker',
        talosVersion: 'v1.13.9',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: '127.0.87.1',
      },
      {
        name: 'reg-legacy',
        role: 'worker',
        talosVersion: 'v1.12.6',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: '127.0.87.2',
      },
    ]);
    sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: false, registry: { url: registry.url } });
    c = rawClient(sim);
  });

  after(async function () {
    c?.close();
    await sim?.stop();
    await registry?.stop();
    dir?.remove();
  });

  it('Pull of a tag the registry does not hold fails NOT_FOUND; a published one answers its name and the registry digest', async function () {
    const missing = failure(await pull(c, 'reg-life', 'ghcr.io/siderolabs/installer:v1.13.8'), 'unpublished tag');
    assert.equal(missing.code, 'NOT_FOUND');
    assert.match(
      missing.details,
      /^error pulling image: failed to pull image "ghcr\.io\/siderolabs\/installer:v1\.13\.8": .*not found$/,
    );
    const factory = `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.14.0`;
    assert.equal(pulledName(await pull(c, 'reg-life', factory)), factory);
    assert.equal(
      pulledName(await pull(c, 'reg-life', 'ghcr.io/siderolabs/installer:v1.13.9')),
      'ghcr.io/siderolabs/installer:v1.13.9',
    );
    assert.equal(
      sim.node('reg-life').containerd.get('CRI/NS_SYSTEM')?.get('ghcr.io/siderolabs/installer:v1.13.9')?.digest,
      published,
    );
    // A pull by digest alone learns the tag from the image itself.
    assert.equal(
      pulledName(await pull(c, 'reg-life', `ghcr.io/siderolabs/installer@${published}`)),
      `ghcr.io/siderolabs/installer@${published}`,
    );
    // Hosts the lab registry does not stand in for are outside the lab: they resolve.
    assert.equal(
      pulledName(await pull(c, 'reg-life', 'registry.k8s.io/kube-apiserver:v1.36.3')),
      'registry.k8s.io/kube-apiserver:v1.36.3',
    );
  });

  it('legacy Upgrade to an unpublished installer fails UNKNOWN "error validating installer image" before the ack; nothing starts', async function () {
    const since = sim.lastCallSeq();
    const res = failure(
      await legacyUpgrade(c, 'reg-legacy', 'ghcr.io/siderolabs/installer:v1.13.8'),
      'unpublished installer',
    );
    assert.equal(res.code, 'UNKNOWN');
    assert.match(
      res.details,
      /^error validating installer image "ghcr\.io\/siderolabs\/installer:v1\.13\.8": .*not found$/,
    );
    assert.deepEqual([sim.node('reg-legacy').phase, sim.node('reg-legacy').upgradesStarted], ['running', 0]);
    ok(await legacyUpgrade(c, 'reg-legacy', 'ghcr.io/siderolabs/installer:v1.13.9'), 'published installer');
    await waitFor(
      () => (sim.node('reg-legacy').phase === 'running' && sim.node('reg-legacy').version === 'v1.13.9') || undefined,
      { timeoutMs: 10_000, intervalMs: 10, description: 'reg-legacy on v1.13.9' },
    );
    assert.deepEqual(
      sim
        .callLog({ node: 'reg-legacy', since })
        .map((r) => (typeof r.result === 'string' ? r.result : r.result.codeName)),
      ['UNKNOWN', 'ok'],
    );
  });

  it('useRegistry(undefined) goes back to "every reference resolves"', async function () {
    sim.useRegistry(undefined);
    try {
      assert.equal(
        pulledName(await pull(c, 'reg-life', 'ghcr.io/siderolabs/installer:v1.13.8')),
        'ghcr.io/siderolabs/installer:v1.13.8',
      );
    } finally {
      sim.useRegistry({ url: registry.url });
    }
    assert.equal(
      failure(await pull(c, 'reg-life', 'ghcr.io/siderolabs/installer:v1.13.7'), 'with the registry again').code,
      'NOT_FOUND',
    );
  });
});
