// One simulated Talos node: its state (version, schematic, platform, boot ID, machine config,
// extensions, stage), its per-version behaviour, its faults, and its COSI resources. The
// Kubernetes side of a reboot goes through FleetControl only.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { stringify as toYaml } from 'yaml';
import { MachineConfigSpec } from '../../../proto/gen/resource/config/config.js';
import { RuntimeMachineStage } from '../../../proto/gen/resource/definitions/enums/enums.js';
import { Layer } from '../../../proto/gen/resource/definitions/extensions/extensions.js';
import {
  APIServerConfigSpec,
  ControllerManagerConfigSpec,
  KubeletSpecSpec,
  SchedulerConfigSpec,
} from '../../../proto/gen/resource/definitions/k8s/k8s.js';
import { ServiceSpec } from '../../../proto/gen/resource/definitions/v1alpha1/v1alpha1.js';
import {
  BootIDSpec,
  ImageFactorySchematicSpec,
  MachineStatusSpec,
  VersionSpec,
} from '../../../proto/gen/resource/definitions/runtime/runtime.js';
import type { ComponentImages, FleetControl, FleetNodeState, NodeRole, StaticPodComponent } from '../fleet/types.js';
import { STATIC_POD_COMPONENTS, STATIC_PODS, versionOfImage } from '../fleet/static-pods.js';
import {
  type ClusterNetwork,
  configImages,
  configNetwork,
  type ImageChange,
  kubeletConfiguration,
  machineConfigYaml,
  type MultiDocKind,
} from './machine-config.js';
import type { StoreKey, StoredImage } from './images.js';
import { talosTag, versionAtLeast } from './versions.js';
import { VANILLA_SCHEMATIC } from '../fleet/describe.js';
import type { EtcdMemberFaults } from './etcd.js';
import { definitionProto, fillDefinition } from './definitions.js';
import { Machined } from './machined.js';
import { Code } from '../../../proto/gen/common/common.js';
import { SequenceEvent_Action } from '../../../proto/gen/machine/machine.js';

export interface TalosSimTimings {
  /** Legacy Upgrade: ack → node goes down (installer run, drain, stop services). */
  upgradeMs: number;
  /** ImageService.Pull duration. */
  pullMs: number;
  /** LifecycleService.Upgrade stream duration. */
  installMs: number;
  /** Reboot requested → API gone (stage `rebooting`). */
  shutdownMs: number;
  /** API unreachable while the machine restarts. */
  rebootMs: number;
  /** API answers, stage `booting`, not ready, → running + ready (Kubernetes Node Ready again). */
  bootMs: number;
  /** ApplyConfiguration changed a static pod's image → its mirror pod is replaced (new UID), not Ready. */
  staticPodRestartMs: number;
  /** New mirror pod not Ready → Ready. */
  staticPodReadyMs: number;
  /** ApplyConfiguration changed the kubelet image (`machine.kubelet.image` or a KubeletConfig document) → the kubelet service is down (COSI Services/kubelet gone) this long, then runs the new version (Node kubeletVersion moves, Ready=False). */
  kubeletRestartMs: number;
  /** Restarted kubelet Ready=False → Ready (Services/kubelet healthy). 0: Ready at once. */
  kubeletReadyMs: number;
  /** kube-proxy DaemonSet rollout: a node's new pod is created → Ready (then the next node's turn). */
  kubeProxyPodMs: number;
  /** A control-plane node's etcd member: started when the node boots (API up) → healthy (see etcd.ts). */
  etcdHealthyMs: number;
  /** Healthy → caught up with the leader's raft index (linearly from the index it stopped at). */
  etcdCatchUpMs: number;
  /** How fast the cluster's raft index advances. */
  etcdEntriesPerSecond: number;
  /**
   * The legacy Upgrade's etcd pre-check on a control-plane node waits this long for a member that is
   * down or starting before it gives up (upstream QuorumCheckTimeout, 15 s; internal/pkg/etcd/etcd.go).
   */
  etcdQuorumCheckMs: number;
}

/** Sub-second timings for tests. */
export const TEST_TIMINGS: TalosSimTimings = {
  upgradeMs: 60,
  pullMs: 30,
  installMs: 40,
  shutdownMs: 20,
  rebootMs: 120,
  bootMs: 60,
  staticPodRestartMs: 400,
  staticPodReadyMs: 300,
  kubeletRestartMs: 300,
  kubeletReadyMs: 200,
  kubeProxyPodMs: 200,
  etcdHealthyMs: 80,
  etcdCatchUpMs: 150,
  etcdEntriesPerSecond: 10_000,
  etcdQuorumCheckMs: 300,
};
/** A few seconds per reboot, for the demo. */
export const DEMO_TIMINGS: TalosSimTimings = {
  upgradeMs: 2000,
  pullMs: 1500,
  installMs: 2500,
  shutdownMs: 500,
  rebootMs: 3000,
  bootMs: 1500,
  staticPodRestartMs: 3000,
  staticPodReadyMs: 4000,
  kubeletRestartMs: 3000,
  kubeletReadyMs: 2000,
  kubeProxyPodMs: 2000,
  etcdHealthyMs: 2000,
  etcdCatchUpMs: 3000,
  etcdEntriesPerSecond: 1000,
  etcdQuorumCheckMs: 15_000,
};

interface RpcFault {
  code: GrpcStatus;
  message: string;
}

/** Faults scriptable per node from tests. */
export interface NodeFaults {
  /** Legacy Upgrade and LifecycleService.Upgrade fail with this status before doing anything. */
  upgradeError?: RpcFault;
  /** ImageService.Pull fails with this status. */
  pullError?: RpcFault;
  /** Kubernetes component images (exact references) ImageService.Pull cannot find: NOT_FOUND, as containerd answers. */
  missingImages?: string[];
  /**
   * The node's machine config has an ImageVerificationConfig rule that verifies every image it pulls:
   * ImageService.Pull pulls (and names) the image by the digest it verified, `name@sha256:…`,
   * instead of the tag (internal/pkg/containers/image/pull.go; verify/verify.go).
   */
  imageVerification?: boolean;
  /** The installer fails: LifecycleService.Upgrade ends with this exit code; legacy Upgrade aborts without reboot. */
  installExitCode?: number;
  /** After going down for a reboot, the node never answers again (until powerOn). */
  neverComesBack?: boolean;
  /** Booted into this Talos version, the node runs but its kubelet never registers again: the Node stays NotReady. */
  kubeletNeverJoinsOn?: string;
  /** Extra time the node stays down on each reboot. */
  slowBootMs?: number;
  /** The new boot fails and the bootloader reverts: old version, new boot ID. */
  bootsOldPartition?: boolean;
  /**
   * MachineService.Rollback is received and then waits, changing nothing, until the fault is cleared
   * (then it rolls back) or the caller gives up: a caller killed while waiting left the node as it was.
   */
  rollbackHangs?: boolean;
  /** Every call to this node answers this much later. */
  slowResponseMs?: number;
  /**
   * Legacy Upgrade and Reboot: the sequence starts this long after the ack (the stage stays
   * `running`), as machined answers first and runs the sequence in the background; a second call in
   * that time is acknowledged and refused inside (ErrLocked, only logged), changing nothing.
   */
  sequenceStartLagMs?: number;
  /** The node's apid refuses the caller: `role` ⇒ PERMISSION_DENIED; `wrong-ca` ⇒ TLS failure (UNAVAILABLE). */
  tlsRejected?: 'wrong-ca' | 'role';
  /**
   * The node stays in this phase once it enters it (`upgrading`: the legacy installer runs;
   * `rebooting`: shutting down, API still up; `booting`: API up, not ready) until the fault is
   * cleared or changed, so a test can call the node in that phase without racing a timer.
   */
  holdPhase?: 'upgrading' | 'rebooting' | 'booting';
  /** After its image changes, this static pod's new mirror pod stays not Ready (until the fault is cleared). */
  staticPodNeverReady?: StaticPodComponent;
  /** ApplyConfiguration is rejected with this status; nothing changes on the node. */
  applyConfigError?: RpcFault;
  /** COSI Get/List/Watch of MachineConfigs fails with this status (the config cannot be read). */
  configReadError?: RpcFault;
  /** LifecycleService.Upgrade streams progress forever, never an exit code, until the caller gives up. */
  endlessInstall?: boolean;
  /** ImageService.Pull streams layer progress forever, never the pulled image's name, until the caller gives up. */
  endlessPull?: boolean;
  /** This stream accepts the call, then sends nothing and never ends until the caller gives up. */
  silentStream?: 'ImageService.Pull' | 'LifecycleService.Upgrade';
  /**
   * Answers a newer or broken Talos could give: a Version without `version.tag`, a MachineStatus
   * whose stage is this number (0: no stage), pull progress whose status is this number.
   */
  malformed?: { versionWithoutTag?: boolean; machineStage?: number; pullStatus?: number };
  /** This control-plane node's etcd member (see etcd.ts): isolated, lagging, alarmed, a learner, not started, a stale member list. */
  etcd?: EtcdMemberFaults;
}

export type Phase = 'running' | 'upgrading' | 'rebooting' | 'down' | 'booting';

/**
 * The Talos API calls the simulator records per node (gRPC service.method): every mutating call,
 * plus COSI reads of the machine config (State.* on MachineConfigs, the first step of a config patch).
 */
export type SimCallMethod =
  | 'MachineService.Upgrade'
  | 'ImageService.Pull'
  | 'LifecycleService.Install'
  | 'LifecycleService.Upgrade'
  | 'MachineService.Reboot'
  | 'MachineService.Rollback'
  | 'MachineService.ApplyConfiguration'
  | 'MachineService.EtcdForfeitLeadership'
  | 'MachineService.EtcdAlarmDisarm'
  | 'State.Get'
  | 'State.List'
  | 'State.Watch';

/** What the caller saw: `pending` while a stream runs, `ok`, or the gRPC status it was answered with. */
type SimCallResult = 'pending' | 'ok' | { code: GrpcStatus; codeName: string; message: string };

/**
 * One mutating call that reached a node (through apid routing, including calls refused because the
 * node was down, slow or the role too low; calls apid could not route to any node are not here).
 */
export interface SimCall {
  /** Order across all nodes of all simulators in this process. */
  seq: number;
  method: SimCallMethod;
  /** The node's name (whatever the caller targeted it by). */
  node: string;
  /** Epoch ms when the call arrived. */
  at: number;
  /** Epoch ms when the answer was complete (end of stream for streaming calls). */
  endedAt: number | undefined;
  /** grpc-js peer of the caller (`ipv4:127.0.0.1:54321`). */
  peer: string;
  /** Common name of the caller's client certificate. */
  identity: string | undefined;
  /** The node's phase when the call arrived. */
  phase: Phase;
  /** Installer image (legacy Upgrade, Pull, LifecycleService.Upgrade), or the Kubernetes image pulled. */
  image?: string;
  /** ImageService.Pull: containerd namespace by name (`NS_SYSTEM`, `NS_CRI`). */
  containerdNamespace?: string;
  /** Reboot mode by name: `DEFAULT`, `POWERCYCLE`, `FORCE` (Reboot, legacy Upgrade). */
  rebootMode?: string;
  /** ApplyConfiguration mode by name (`AUTO`, `NO_REBOOT`, ...). */
  applyMode?: string;
  dryRun?: boolean;
  /**
   * ApplyConfiguration: the component images the sent config changes against the node's config
   * at arrival (path such as `cluster.apiServer.image`, from, to), also for rejected calls and dry runs.
   */
  imageChanges?: ImageChange[];
  /** State.*: `namespace/type/id` read (id empty for List/Watch of a whole type). */
  resource?: string;
  result: SimCallResult;
  /** LifecycleService.Upgrade: the final exit_code the stream reported (the stream itself ends OK). */
  exitCode?: number;
  /** What the node did about it, for messages: `upgrade started`, `reboot ignored: ...`, ... */
  effect?: string;
}

let nextCallSeq = 1;
/** A fresh sequence number for a SimCall. */
export function callSeq(): number {
  return nextCallSeq++;
}

export interface SimResource {
  namespace: string;
  type: string;
  id: string;
  yaml: string;
  proto: Uint8Array;
  sensitive: boolean;
  annotations: Record<string, string>;
  /** metadata.owner: the name of the controller that writes it (empty for resources machined writes itself). */
  owner: string;
}

interface VersionRecord {
  version: number;
  yaml: string;
  created: Date;
  updated: Date;
}

/** An extension layer; its image is `<index>.sqsh` and its ID the index (pkg/imager, extension_status.go). */
export interface ExtensionInfo {
  name: string;
  version: string;
  author: string;
}

/** What a node boots after an upgrade: the installer's Talos version, schematic and extensions. */
export interface BootTarget {
  version: string;
  /** Image Factory schematic; undefined for an installer not built by the factory (plain `siderolabs/installer`). */
  schematic: string | undefined;
  extensions: ExtensionInfo[];
}

/** The extensions the lab's factory schematics carry besides `schematic` itself. */
const SAMPLE_EXTENSIONS: readonly ExtensionInfo[] = [
  { name: 'iscsi-tools', version: 'v0.2.0', author: 'Sidero Labs' },
  { name: 'qemu-guest-agent', version: '10.0.2', author: 'Sidero Labs' },
];

/**
 * The system extensions an image built for `schematic` has. The lab knows two kinds of images: the
 * vanilla factory schematic and a plain installer (no schematic) have none; every other schematic
 * stands for a customized one with iscsi-tools and qemu-guest-agent. Upstream a node reports the
 * extensions of the image it booted (ExtensionStatusController reads the booted image's
 * extensions config: internal/app/machined/pkg/controllers/runtime/extension_status.go), so an
 * upgrade with an installer of another schematic (or a plain one) changes them.
 */
export function extensionsOf(schematic: string | undefined): ExtensionInfo[] {
  return schematic === undefined || schematic === VANILLA_SCHEMATIC ? [] : SAMPLE_EXTENSIONS.map((e) => ({ ...e }));
}

/**
 * Types only an os:admin may read (COSI access policy, internal/app/resources/access.go: the type's
 * Sensitivity, checked before the namespace). MachineConfigs always; KubeletSpecs and
 * APIServerConfigs from v1.12.9 and v1.13.4 (upstream "fix: mark more resources as sensitive").
 */
export function sensitiveType(type: string, talosVersion: string): boolean {
  if (type === 'MachineConfigs.config.talos.dev') return true;
  if (type !== 'KubeletSpecs.kubernetes.talos.dev' && type !== 'APIServerConfigs.kubernetes.talos.dev') return false;
  const v = talosTag(talosVersion);
  if (!v) return false;
  return (v.major === 1 && v.minor === 12 && v.patch >= 9) || v.compare('1.13.4') >= 0;
}

export class RpcError extends Error {
  constructor(
    readonly code: GrpcStatus,
    readonly details: string,
  ) {
    super(details);
  }
}

/** What a SimNode is made with besides its fleet state (the SimNode constructor's further arguments). */
export type SimNodeContext = [
  fleet: FleetControl,
  timings: () => TalosSimTimings,
  clusterName: string,
  controlPlaneEndpoint: string,
  /** Talos 1.14 component documents the node's initial config carries (see MachineConfigInput.multiDocs). */
  multiDocs?: readonly MultiDocKind[],
];

export class SimNode {
  readonly events = new EventEmitter();
  readonly name: string;
  readonly ip: string;
  readonly role: NodeRole;
  version: string;
  /** Image Factory schematic of the booted image; undefined after a plain (non-factory) installer. */
  schematic: string | undefined;
  kubernetesVersion: string;
  /** Version's platform.name; a test sets it for a node of another platform (aws, hcloud, ...). */
  platform = 'metal';
  /** SecurityState's secureBoot: the node booted with Secure Boot. */
  secureBoot = false;
  arch = 'amd64';
  bootId: string;
  phase: Phase = 'running';
  config: string;
  extensions: ExtensionInfo[];
  faults: NodeFaults = {};
  /**
   * A test's hand on the order of events: every call to this node waits for it (given the gRPC
   * method path) before the node answers, so a test can make the node change (reboot, say) exactly
   * between two calls of the product, without racing a timer.
   */
  answerGate: ((method: string) => Promise<void>) | undefined;
  unreachableUntil = 0;
  /** Written by LifecycleService.Upgrade, booted by the next Reboot. */
  staged: BootTarget | undefined;
  /** The other bootloader entry (the version before the last upgrade), which Rollback boots; undefined before any upgrade. */
  previous: BootTarget | undefined;
  /** Rollbacks that reached the node (each flips the bootloader and reboots). */
  rollbacks = 0;
  /** containerd's image stores (by driver and namespace, see images.ts): image name → image. */
  readonly containerd = new Map<StoreKey, Map<string, StoredImage>>();
  installing = false;
  applying = false;
  /** An acknowledged sequence not started yet (faults.sequenceStartLagMs). */
  private pendingSequence: (() => void) | undefined;
  /** machined of the current boot: services (ServiceList) and runtime events (Events). */
  machined: Machined;
  /** The reboot or upgrade sequence running, with the actor ID of the call that started it. */
  private sequenceRun: { name: 'reboot' | 'upgrade'; actorId: string } | undefined;
  /** Everything that happened to the node, for assertions. */
  readonly history: string[] = [];
  /** Every mutating API call that reached this node, in arrival order (see SimCall). */
  readonly calls: SimCall[] = [];
  /**
   * Upgrades the node actually started: accepted legacy Upgrades plus Reboots that activated an
   * image staged by LifecycleService.Upgrade. Two here for one rollout means the node was upgraded twice.
   */
  upgradesStarted = 0;
  /** Boots into an upgrade target (not counting a boot that fell back to the old partition). */
  bootsIntoNewVersion = 0;
  /** Every time the node went down for a reboot (upgrade or plain). */
  reboots = 0;
  /** The kubelet service: `stopped` while it restarts (COSI Services/kubelet absent), `starting` until healthy. */
  kubelet: 'running' | 'stopped' | 'starting' = 'running';
  private readonly versions = new Map<string, VersionRecord>();
  /** Per static pod (and `kubelet`): the latest restart; pending steps of an older one give way. */
  private readonly restarts = new Map<string, number>();
  /** Static pods a `staticPodNeverReady` fault holds not Ready, with the step that makes them Ready. */
  private readonly heldNotReady = new Map<StaticPodComponent, () => Promise<void>>();
  /** The step a `holdPhase` fault is holding back. */
  private held: { phase: Phase; resume: () => void | Promise<void> } | undefined;
  private readonly faultWaiters = new Set<() => void>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  private readonly fleet: FleetControl;
  private readonly timings: () => TalosSimTimings;
  readonly clusterName: string;
  readonly controlPlaneEndpoint: string;

  /** `context`: the fleet, the timings, the cluster's name and control-plane endpoint, the node's initial multi-docs. */
  constructor(state: FleetNodeState, ...context: SimNodeContext) {
    const [fleet, timings, clusterName, controlPlaneEndpoint, multiDocs = []] = context;
    this.fleet = fleet;
    this.timings = timings;
    this.clusterName = clusterName;
    this.controlPlaneEndpoint = controlPlaneEndpoint;
    if (multiDocs.length > 0 && !versionAtLeast(state.talosVersion, 14, 'alpha.0')) {
      throw new Error(
        `node ${state.name} runs Talos ${state.talosVersion}: the ${multiDocs.join(', ')} document(s) exist from Talos v1.14 on; give it v1.14.x or no multiDocs`,
      );
    }
    this.name = state.name;
    this.ip = state.internalIP;
    this.role = state.role;
    this.version = state.talosVersion;
    this.schematic = state.schematic === '' ? undefined : state.schematic;
    this.kubernetesVersion = state.kubernetesVersion;
    this.bootId = state.bootId;
    this.phase = state.up ? 'running' : 'down';
    this.config = machineConfigYaml({
      name: state.name,
      role: state.role,
      ip: state.internalIP,
      talosVersion: state.talosVersion,
      kubernetesVersion: state.kubernetesVersion,
      schematic: state.schematic,
      clusterName,
      controlPlaneEndpoint,
      multiDocs,
    });
    this.extensions = extensionsOf(state.schematic);
    this.machined = new Machined(this.version, this.role);
    if (state.up) this.bootedBefore();
  }

  /** A node that was up when the lab started: its machined has been through a whole boot. */
  private bootedBefore(): void {
    this.machined.booting();
    this.machined.machineStatus('booting', false);
    this.machined.booted();
    this.machined.machineStatus('running', true);
  }

  /** Throws what a caller sees through apid when this node cannot answer. */
  assertReachable(now = Date.now()): void {
    const dial = `connection error: desc = "transport: Error while dialing: dial tcp ${this.ip}:50000: `;
    if (this.phase === 'down') throw new RpcError(GrpcStatus.UNAVAILABLE, `${dial}connect: connection refused"`);
    if (now < this.unreachableUntil) throw new RpcError(GrpcStatus.UNAVAILABLE, `${dial}i/o timeout"`);
    if (this.faults.tlsRejected === 'wrong-ca') {
      throw new RpcError(
        GrpcStatus.UNAVAILABLE,
        'connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"',
      );
    }
  }

  get stage(): string {
    return this.phase === 'down' ? 'rebooting' : this.phase;
  }

  get ready(): boolean {
    return this.phase === 'running';
  }

  changed(what: string): void {
    this.history.push(what);
    this.machined.machineStatus(this.phase, this.ready);
    this.events.emit('change', what);
  }

  /**
   * A live config change (ApplyConfiguration, no reboot), carried out the way Talos' controllers
   * do: the COSI resources derived from the config get their new versions at once; each static
   * pod whose image changed restarts (its mirror pod replaced after staticPodRestartMs, Ready
   * staticPodReadyMs later); a new kubelet image restarts the kubelet; a changed proxy image in a
   * control-plane config reaches the kube-proxy DaemonSet. What the change did not touch is left alone.
   */
  applyConfig(config: string): void {
    const before = configImages(this.config);
    this.trackAll(); // versions as they were, so the change below bumps exactly what it touches
    this.config = config;
    this.trackAll();
    const after = configImages(config);
    this.changed('config applied');
    if (this.role === 'controlplane') {
      for (const component of STATIC_POD_COMPONENTS) {
        const image = after[STATIC_PODS[component]];
        if (image && image !== before[STATIC_PODS[component]]) this.restartStaticPod(component, image);
      }
      const proxy = after.proxy;
      // Only a change of the proxy image itself: another CP node's older config must not roll it back.
      if (proxy && proxy !== before.proxy) {
        this.after(0, async () => {
          await this.fleet.setKubeProxyImage(proxy, { podReadyMs: this.timings().kubeProxyPodMs });
          this.history.push(`kube-proxy image ${proxy} published`);
        });
      }
    }
    if (after.kubelet && after.kubelet !== before.kubelet) this.restartKubelet(after.kubelet);
  }

  /** metadata.version of the component's COSI config resource (APIServerConfigs, ...) as a reader sees it now. */
  componentConfigVersion(component: StaticPodComponent): string {
    const r = this.resources().find((x) => x.namespace === 'controlplane' && x.id === component);
    return r ? String(this.track(r).version) : '';
  }

  private trackAll(): void {
    for (const r of this.resources()) this.track(r);
  }

  /** Starts a new restart of `what`; the returned check turns false once a newer one (or a reboot) starts. */
  private nextRestart(what: string): () => boolean {
    const gen = (this.restarts.get(what) ?? 0) + 1;
    this.restarts.set(what, gen);
    return () => this.restarts.get(what) === gen;
  }

  private restartStaticPod(component: StaticPodComponent, image: string): void {
    const isCurrent = this.nextRestart(component);
    this.heldNotReady.delete(component);
    const configVersion = this.componentConfigVersion(component);
    const sync = (ready: boolean): Promise<void> =>
      this.fleet.syncStaticPod(this.name, component, { image, configVersion, ready });
    const becomeReady = async (): Promise<void> => {
      if (!isCurrent()) return;
      await sync(true);
      this.changed(`${component} ready`);
    };
    this.after(this.timings().staticPodRestartMs, async () => {
      if (!isCurrent()) return;
      await sync(false);
      this.changed(`${component} restarted on ${image}`);
      this.after(this.timings().staticPodReadyMs, () => {
        if (!isCurrent()) return;
        if (this.faults.staticPodNeverReady === component) {
          this.heldNotReady.set(component, becomeReady);
          this.history.push(`${component} held not ready`);
          return;
        }
        return becomeReady();
      });
    });
  }

  private restartKubelet(image: string): void {
    const isCurrent = this.nextRestart('kubelet');
    const version = versionOfImage(image) ?? this.kubernetesVersion;
    this.kubelet = 'stopped';
    this.machined.kubelet('stopped');
    this.changed('kubelet stopped');
    this.after(this.timings().kubeletRestartMs, async () => {
      if (!isCurrent()) return;
      const readyMs = this.timings().kubeletReadyMs;
      this.kubernetesVersion = version;
      this.kubelet = readyMs > 0 ? 'starting' : 'running';
      this.machined.kubelet(this.kubelet);
      await this.fleet.setKubelet(this.name, { version, ready: readyMs <= 0 });
      this.changed(`kubelet ${version} ${this.kubelet}`);
      if (readyMs <= 0) return;
      this.after(readyMs, async () => {
        if (!isCurrent()) return;
        this.kubelet = 'running';
        this.machined.kubelet('running');
        await this.fleet.setKubelet(this.name, { version, ready: true });
        this.changed(`kubelet ${version} running`);
      });
    });
  }

  /** A reboot ends every restart in progress: the node comes back running what its config names. */
  private abandonRestarts(): void {
    for (const [what, gen] of this.restarts) this.restarts.set(what, gen + 1);
    this.heldNotReady.clear();
  }

  /** After a boot, the kubelet publishes the static pods afresh, annotated with the restarted resource versions. */
  private async republishStaticPods(): Promise<void> {
    if (this.role !== 'controlplane') return;
    const images = configImages(this.config);
    for (const component of STATIC_POD_COMPONENTS) {
      const image = images[STATIC_PODS[component]];
      if (image)
        await this.fleet.syncStaticPod(this.name, component, {
          image,
          configVersion: this.componentConfigVersion(component),
          ready: true,
        });
    }
  }

  after(ms: number, fn: () => void | Promise<void>): void {
    if (this.stopped) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (this.stopped) return;
      Promise.resolve()
        .then(fn)
        .catch((err: unknown) => this.history.push(`error: ${(err as Error).message}`));
    }, ms);
    this.timers.add(t);
  }

  /** Like after(), but the step waits while a `holdPhase` fault holds the node in `phase`. */
  private afterHeld(phase: Phase, ms: number, fn: () => void | Promise<void>): void {
    this.after(ms, () => {
      if (this.faults.holdPhase === phase && this.phase === phase) {
        this.history.push(`held in ${phase}`);
        this.held = { phase, resume: fn };
        return;
      }
      return fn();
    });
  }

  /** Called when faults change: a step held by `holdPhase` continues once that hold is gone. */
  /** Resolves true once `ok()` holds after a fault change (at once when it holds now), false when the caller gives up first. */
  untilFaults(ok: () => boolean, cancelled: Promise<void>): Promise<boolean> {
    if (ok()) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const check = (): void => {
        if (!ok()) return;
        this.faultWaiters.delete(check);
        resolve(true);
      };
      this.faultWaiters.add(check);
      void cancelled.then(() => {
        this.faultWaiters.delete(check);
        resolve(false);
      });
    });
  }

  faultsChanged(): void {
    for (const check of [...this.faultWaiters]) check();
    for (const [component, resume] of this.heldNotReady) {
      if (this.faults.staticPodNeverReady === component) continue;
      this.heldNotReady.delete(component);
      this.after(0, resume);
    }
    const held = this.held;
    if (!held || this.faults.holdPhase === held.phase) return;
    this.held = undefined;
    this.after(0, held.resume);
  }

  stop(): void {
    this.stopped = true;
    this.held = undefined;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.events.removeAllListeners();
    this.machined.log.close();
  }

  /**
   * Legacy MachineService.Upgrade after the ack. Talos runs the upgrade sequence in the background
   * without takeover (v1alpha1_server.go `Upgrade`); by the sequences' priority
   * (internal/app/machined/pkg/runtime/sequencer.go `CanTakeOver`, v1alpha1/v1alpha1_priority_lock.go)
   * an upgrade takes over a boot and nothing else. So a node still booting starts the upgrade, while
   * an upgrade or reboot in progress refuses it inside (ErrLocked, only logged): the caller already
   * has its ack and nothing more happens. Returns what the node did.
   */
  requestLegacyUpgrade(target: BootTarget, actorId = ''): string {
    if (this.sequencePending) return this.locked('upgrade');
    if (this.phase === 'upgrading' || this.phase === 'rebooting') {
      const effect = `upgrade ignored: ${this.phase === 'upgrading' ? 'an upgrade' : 'a reboot'} is in progress (sequence locked)`;
      this.history.push(effect);
      this.refused('upgrade');
      return effect;
    }
    const effect = `upgrade started ${this.version} -> ${target.version}${this.phase === 'booting' ? ' (took over the boot)' : ''}`;
    this.startSequence(() => this.startLegacyUpgrade(target, actorId));
    return effect;
  }

  /**
   * Legacy MachineService.Upgrade after the ack: the upgrade sequence (its events carry the call's
   * actor ID) drains, stops the pods and the services on EPHEMERAL, installs, then reboots into the
   * new version; an installer that fails ends the sequence with its error and the node runs on.
   */
  startLegacyUpgrade(target: BootTarget, actorId = ''): void {
    // Taking over a boot: the boot in progress never finishes.
    if (this.phase === 'booting') this.bootEpoch++;
    this.upgradesStarted++;
    this.sequenceRun = { name: 'upgrade', actorId };
    this.machined.sequence('upgrade', SequenceEvent_Action.START, actorId);
    this.phase = 'upgrading';
    this.changed(`upgrade ${this.version} -> ${target.version} (legacy)`);
    this.machined.phase('drain', 'cordonAndDrainNode', actorId);
    this.machined.phase('cleanup', 'stopAllPods', actorId);
    this.machined.stopEphemeral(actorId);
    this.afterHeld('upgrading', this.timings().upgradeMs, () => {
      const exitCode = this.faults.installExitCode ?? 0;
      this.machined.phase('upgrade', 'upgrade', actorId);
      if (exitCode !== 0) return this.upgradeFailed(exitCode, actorId);
      this.rebootInto(target);
    });
  }

  /** The installer failed: the upgrade sequence ends with its error (FATAL), the services start again, the node runs on. */
  private upgradeFailed(exitCode: number, actorId: string): void {
    const message = `sequence failed: error running phase 9 in upgrade sequence: task 1/1: failed, exit status ${exitCode}`;
    this.machined.sequenceError('upgrade', { code: Code.FATAL, message }, actorId);
    this.machined.sequence('upgrade', SequenceEvent_Action.STOP, actorId);
    this.sequenceRun = undefined;
    this.machined.restartStopped();
    this.phase = 'running';
    this.changed(`upgrade failed: installer exited with code ${exitCode}`);
  }

  /** A sequence refused because another holds the lock (ErrLocked): a NOOP SequenceEvent with code LOCKED, no actor ID. */
  private refused(what: 'upgrade' | 'reboot'): void {
    this.machined.sequenceError(what, { code: Code.LOCKED, message: 'sequence not started: locked' });
  }

  /**
   * MachineService.Reboot after the ack. Talos runs the reboot sequence in the background with
   * takeover (v1alpha1_server.go `Reboot`; runtime `Sequence.CanTakeOver`): it may take over a
   * boot or another reboot, never an upgrade, and a refused sequence is only logged — the caller
   * already has its ack. So while the node is already `rebooting` (the first reboot takes it down
   * anyway) or `upgrading` (ErrLocked), the call is acknowledged and nothing more happens; while
   * `booting` it reboots the node again. (While `down` the call never gets here: UNAVAILABLE.)
   * Returns what the node did.
   */
  requestReboot(actorId = ''): string {
    if (this.sequencePending) return this.locked('reboot');
    if (this.phase === 'rebooting' || this.phase === 'upgrading') {
      const effect = `reboot ignored: ${this.phase === 'upgrading' ? 'an upgrade is in progress (sequence locked)' : 'already rebooting'}`;
      this.history.push(effect);
      if (this.phase === 'upgrading') this.refused('reboot');
      return effect;
    }
    const staged = this.staged;
    this.staged = undefined;
    if (staged) this.upgradesStarted++;
    this.startSequence(() => this.startReboot(staged, actorId));
    return staged ? `reboot into staged ${staged.version}` : 'reboot';
  }

  /** The reboot sequence (its events carry the call's actor ID): pods, then the services on EPHEMERAL stop; the reboot follows. */
  private startReboot(target: BootTarget | undefined, actorId: string): void {
    this.sequenceRun = { name: 'reboot', actorId };
    this.machined.sequence('reboot', SequenceEvent_Action.START, actorId);
    this.machined.phase('cleanup', 'stopAllPods', actorId);
    this.machined.stopEphemeral(actorId);
    this.rebootInto(target);
  }

  /**
   * MachineService.Rollback after the bootloader flip: reboots into the other entry with takeover
   * (it pre-empts a boot or reboot in progress). Undefined when there is no other entry (the API
   * answers UNKNOWN before any ack). Calling it again flips back.
   */
  requestRollback(): string | undefined {
    const other = this.previous;
    if (!other) return undefined;
    this.rollbacks++;
    this.staged = undefined;
    this.history.push(`rollback to ${other.version}`);
    this.startSequence(() => this.startReboot(other, ''));
    return `rollback to ${other.version}`;
  }

  /** Starts an acknowledged sequence, after faults.sequenceStartLagMs when set. */
  startSequence(start: () => void): void {
    const lag = this.faults.sequenceStartLagMs ?? 0;
    if (lag <= 0) return start();
    const pending = (): void => start();
    this.pendingSequence = pending;
    this.after(lag, () => {
      if (this.pendingSequence === pending) this.startPendingSequence();
    });
  }

  get sequencePending(): boolean {
    return this.pendingSequence !== undefined;
  }

  /** Starts the pending sequence now (tests that do not wait out the lag); nothing when none is pending. */
  startPendingSequence(): void {
    const start = this.pendingSequence;
    this.pendingSequence = undefined;
    start?.();
  }

  /** A call acknowledged while another sequence is about to start: Talos refuses it inside (ErrLocked). */
  locked(what: 'upgrade' | 'reboot'): string {
    const effect = `${what} ignored: another sequence is starting (locked)`;
    this.history.push(effect);
    this.refused(what);
    return effect;
  }

  /** Reboot: stage rebooting → down (Node NotReady) → booting (API answers) → running + ready (Node Ready). */
  rebootInto(target: BootTarget | undefined): void {
    this.bootEpoch++; // a boot still in progress (reboot while booting) must not finish into this reboot
    this.abandonRestarts();
    this.phase = 'rebooting';
    this.changed('rebooting');
    this.afterHeld('rebooting', this.timings().shutdownMs, async () => {
      this.machined.shutdown(this.sequenceRun?.actorId ?? '');
      this.sequenceRun = undefined;
      this.phase = 'down';
      this.reboots++;
      this.changed('down');
      await this.fleet.takeDown(this.name, 'Talos reboot');
      if (this.faults.neverComesBack) {
        this.history.push('never comes back');
        this.pendingBoot = target;
        return;
      }
      this.after(this.timings().rebootMs + (this.faults.slowBootMs ?? 0), () => this.boot(target));
    });
  }

  private pendingBoot: BootTarget | undefined;
  private bootEpoch = 0;

  private boot(target: BootTarget | undefined): void {
    const oldPartition = this.faults.bootsOldPartition === true;
    if (target && !oldPartition) {
      // The entry booted until now becomes the other one, as the bootloader keeps both (A/B).
      if (target.version !== this.version)
        this.previous = { version: this.version, schematic: this.schematic, extensions: this.extensions };
      this.version = target.version;
      this.schematic = target.schematic;
      this.extensions = target.extensions;
      this.bootsIntoNewVersion++;
    }
    this.bootId = randomUUID();
    this.versions.clear(); // resources live in memory: versions restart after a boot
    // The system containerd keeps its images under /system (a tmpfs, recreated on every boot); the
    // CRI containerd's live in /var/lib/containerd on EPHEMERAL, which a reboot or an upgrade keeps.
    for (const key of this.containerd.keys()) if (key.startsWith('CONTAINERD/')) this.containerd.delete(key);
    // A new machined: new services, a new event stream (the old one ended with the reboot).
    this.machined.log.close();
    this.machined = new Machined(this.version, this.role);
    this.machined.booting();
    this.phase = 'booting';
    this.changed(oldPartition && target ? `booted old partition ${this.version}` : `booting ${this.version}`);
    const epoch = this.bootEpoch;
    this.afterHeld('booting', this.timings().bootMs, async () => {
      if (epoch !== this.bootEpoch) return;
      this.phase = 'running';
      this.kubelet = 'running';
      this.machined.booted();
      const kubelet = versionOfImage(configImages(this.config).kubelet);
      if (kubelet) this.kubernetesVersion = kubelet;
      if (this.faults.kubeletNeverJoinsOn === this.version) {
        // Talos is running and ready; the kubelet never registers again, so the Node stays NotReady.
        this.changed(`running ${this.version}; the kubelet never rejoins`);
        return;
      }
      await this.fleet.bringUp(this.name, {
        talosVersion: this.version,
        schematic: this.schematic ?? null,
        bootId: this.bootId,
        kubernetesVersion: this.kubernetesVersion,
      });
      await this.republishStaticPods();
      this.changed(`running ${this.version}`);
    });
  }

  /** Boots a node that never came back (ends the `neverComesBack` fault). */
  powerOn(): void {
    this.faults.neverComesBack = false;
    if (this.phase === 'down') this.boot(this.pendingBoot);
  }

  resources(): SimResource[] {
    return buildResources(this);
  }

  /** The resource's metadata.version (decimal counter, +1 per change, restarting after a boot). */
  track(r: SimResource, now = new Date()): VersionRecord {
    const key = `${r.namespace}/${r.type}/${r.id}`;
    const rec = this.versions.get(key);
    if (!rec) {
      const fresh = { version: 1, yaml: r.yaml, created: now, updated: now };
      this.versions.set(key, fresh);
      return fresh;
    }
    if (rec.yaml !== r.yaml) {
      rec.version++;
      rec.yaml = r.yaml;
      rec.updated = now;
    }
    return rec;
  }
}

const STAGE_ENUM: Record<string, RuntimeMachineStage> = {
  booting: RuntimeMachineStage.MACHINE_STAGE_BOOTING,
  running: RuntimeMachineStage.MACHINE_STAGE_RUNNING,
  rebooting: RuntimeMachineStage.MACHINE_STAGE_REBOOTING,
  upgrading: RuntimeMachineStage.MACHINE_STAGE_UPGRADING,
};

/** A resource as the node serves it, named by `[namespace, type, id]`, its spec as YAML (unless `extra.yaml`) and protobuf. */
/**
 * A multi-line string as Go's yaml.v3 marshals it (how Talos writes MachineConfig's yaml_spec): a
 * literal block indented by four spaces. The yaml package would write the block unindented at the top
 * level, which Go's YAML reads as an empty string.
 */
function goYamlBlock(text: string): string {
  const chomp = text.endsWith('\n\n') ? '+' : text.endsWith('\n') ? '' : '-';
  const body = text.replace(/\n$/, '').split('\n');
  return `|${chomp}\n${body.map((l) => (l === '' ? '' : `    ${l}`)).join('\n')}\n`;
}

function res(
  [namespace, type, id]: [string, string, string],
  spec: unknown,
  proto: Uint8Array,
  extra: Partial<Pick<SimResource, 'sensitive' | 'annotations' | 'yaml'>> = {},
): SimResource {
  const owner = OWNERS[type] ?? '';
  return {
    namespace,
    type,
    id,
    yaml: extra.yaml ?? toYaml(spec),
    proto,
    sensitive: extra.sensitive ?? false,
    annotations: extra.annotations ?? {},
    owner,
  };
}

/**
 * The controller that owns each type (its `Name()` in internal/app/machined/pkg/controllers/...:
 * runtime/machine_status.go, version.go, extension_status.go, boot_id.go, image_factory_schematic.go,
 * v1alpha1/service.go, k8s/kubelet_spec.go, k8s/control_plane.go). MachineConfigs are written by
 * machined's config setter (config/acquire.go calls SetConfig), not by a controller, and meta
 * ResourceDefinitions by the COSI runtime: their owner is empty.
 */
const OWNERS: Record<string, string> = {
  'MachineStatuses.runtime.talos.dev': 'runtime.MachineStatusController',
  'Versions.runtime.talos.dev': 'runtime.VersionController',
  'ExtensionStatuses.runtime.talos.dev': 'runtime.ExtensionStatusController',
  'BootIDs.runtime.talos.dev': 'runtime.BootIDController',
  'ImageFactorySchematics.runtime.talos.dev': 'runtime.ImageFactorySchematicController',
  'SecurityStates.talos.dev': 'runtime.SecurityStateController',
  'Services.v1alpha1.talos.dev': 'v1alpha1.ServiceController',
  'KubeletSpecs.kubernetes.talos.dev': 'k8s.KubeletSpecController',
  'APIServerConfigs.kubernetes.talos.dev': 'k8s.ControlPlaneAPIServerController',
  'ControllerManagerConfigs.kubernetes.talos.dev': 'k8s.ControlPlaneControllerManagerController',
  'SchedulerConfigs.kubernetes.talos.dev': 'k8s.ControlPlaneSchedulerController',
};

/** `MachineStatuses/machine`; the `malformed.machineStage` fault replaces the stage with its number. */
function machineStatus(n: SimNode): SimResource {
  const unmet = n.ready ? [] : [{ name: 'nodeReady', reason: 'node not ready' }];
  const stage = n.faults.malformed?.machineStage;
  return res(
    ['runtime', 'MachineStatuses.runtime.talos.dev', 'machine'],
    { stage: stage ?? n.stage, status: { ready: n.ready, unmetConditions: unmet } },
    MachineStatusSpec.encode({
      stage: stage ?? STAGE_ENUM[n.stage] ?? RuntimeMachineStage.MACHINE_STAGE_UNKNOWN,
      status: { ready: n.ready, unmetConditions: unmet },
    }).finish(),
  );
}

function buildResources(n: SimNode): SimResource[] {
  const out: SimResource[] = [machineStatus(n)];
  if (typeRegistered('Versions.runtime.talos.dev', n.version)) {
    out.push(
      res(
        ['runtime', 'Versions.runtime.talos.dev', 'version'],
        { version: n.version, name: 'Talos' },
        VersionSpec.encode({ version: n.version, name: 'Talos' }).finish(),
      ),
    );
  }
  // The factory adds the virtual `schematic` extension to its images; a plain installer's image has no extensions at all.
  const layers = [
    ...n.extensions,
    ...(n.schematic === undefined
      ? []
      : [{ name: 'schematic', version: n.schematic, author: 'Image Factory (https://factory.talos.dev)' }]),
  ];
  layers.forEach((e, i) => {
    const metadata = {
      name: e.name,
      version: e.version,
      author: e.author,
      description: '',
      compatibility: { talos: { version: '' } },
      extraInfo: '',
    };
    out.push(
      res(
        ['runtime', 'ExtensionStatuses.runtime.talos.dev', String(i)],
        { image: `${i}.sqsh`, metadata: { name: e.name, version: e.version, author: e.author } },
        Layer.encode({ image: `${i}.sqsh`, metadata }).finish(),
      ),
    );
  });
  if (typeRegistered('BootIDs.runtime.talos.dev', n.version)) {
    out.push(
      res(
        ['runtime', 'BootIDs.runtime.talos.dev', 'boot-id'],
        { bootID: n.bootId },
        BootIDSpec.encode({ bootId: n.bootId }).finish(),
      ),
    );
  }
  if (typeRegistered('ImageFactorySchematics.runtime.talos.dev', n.version) && n.schematic !== undefined) {
    // The flavor and URL come from the schematic extension's author, `Image Factory (https://factory.talos.dev)` (image_factory_schematic.go parseAuthor).
    const s = { schematicId: n.schematic, flavor: 'Image Factory', apiUrl: 'https://factory.talos.dev' };
    out.push(
      res(
        ['runtime', 'ImageFactorySchematics.runtime.talos.dev', 'image-factory-schematic'],
        s,
        ImageFactorySchematicSpec.encode({ schematicId: s.schematicId, flavor: s.flavor, apiurl: s.apiUrl }).finish(),
      ),
    );
  }
  // runtime/security_state.go: no proto of ours; the YAML spec as `talosctl get securitystate -o yaml` shows it.
  const security = {
    secureBoot: n.secureBoot,
    ukiSigningKeyFingerprint: '',
    pcrSigningKeyFingerprint: '',
    bootedWithUKI: n.secureBoot,
  };
  out.push(res(['runtime', 'SecurityStates.talos.dev', 'securitystate'], security, new Uint8Array()));
  // yaml_spec of the machine config is a YAML *string scalar* holding the whole config.
  out.push(
    res(
      ['config', 'MachineConfigs.config.talos.dev', 'v1alpha1'],
      null,
      MachineConfigSpec.encode({ yamlMarshalled: Buffer.from(n.config) }).finish(),
      {
        yaml: goYamlBlock(n.config),
        sensitive: true,
        annotations: { 'talos.dev/yaml-spec': '1' },
      },
    ),
  );
  const images = configImages(n.config);
  const network = configNetwork(n.config);
  const kubelet = {
    image: images.kubelet ?? '',
    args: [`--hostname-override=${n.name}`, `--node-ip=${n.ip}`],
    expectedNodename: n.name,
    config: kubeletConfiguration(network),
  };
  out.push(
    res(['k8s', 'KubeletSpecs.kubernetes.talos.dev', 'kubelet'], kubelet, KubeletSpecSpec.encode(kubelet).finish()),
  );
  // While the kubelet restarts its service resource is gone (a watcher sees DESTROYED, then CREATED).
  if (n.kubelet !== 'stopped') {
    const service = { running: n.ready, healthy: n.ready && n.kubelet === 'running', unknown: false };
    out.push(res(['runtime', 'Services.v1alpha1.talos.dev', 'kubelet'], service, ServiceSpec.encode(service).finish()));
  }
  // The other services: those running now, as machined's ServiceController keeps them (v1alpha1/service.go).
  for (const { id, healthy, unknown } of n.machined.runningServices()) {
    const service = { running: true, healthy, unknown };
    out.push(res(['runtime', 'Services.v1alpha1.talos.dev', id], service, ServiceSpec.encode(service).finish()));
  }
  if (n.role === 'controlplane') out.push(...controlPlaneResources(n, images, network));
  return out;
}

/** The control-plane components' config resources (controlplane namespace). */
function controlPlaneResources(n: SimNode, images: ComponentImages, network: ClusterNetwork): SimResource[] {
  const out: SimResource[] = [];
  // The YAML spec spells the CIDR lists as the Go struct tags do: `serviceCIDR` for the API server
  // (pkg/machinery/resources/k8s/apiserver_config.go), `serviceCIDRs` / `podCIDRs` for the controller
  // manager (controllermanager_config.go); the generated protobuf types say `serviceCidRs`.
  const apiServer = {
    image: images.apiServer ?? '',
    controlPlaneEndpoint: n.controlPlaneEndpoint,
    etcdServers: ['https://localhost:2379'],
    localPort: 6443,
    serviceCIDR: network.serviceSubnets,
    advertisedAddress: n.ip,
  };
  const apiServerProto = APIServerConfigSpec.encode({ ...apiServer, serviceCidRs: network.serviceSubnets }).finish();
  out.push(res(['controlplane', 'APIServerConfigs.kubernetes.talos.dev', 'kube-apiserver'], apiServer, apiServerProto));
  const controllerManager = {
    enabled: true,
    image: images.controllerManager ?? '',
    podCIDRs: network.podSubnets,
    serviceCIDRs: network.serviceSubnets,
  };
  const controllerManagerProto = ControllerManagerConfigSpec.encode({
    ...controllerManager,
    podCidRs: network.podSubnets,
    serviceCidRs: network.serviceSubnets,
  }).finish();
  out.push(
    res(
      ['controlplane', 'ControllerManagerConfigs.kubernetes.talos.dev', 'kube-controller-manager'],
      controllerManager,
      controllerManagerProto,
    ),
  );
  const scheduler = { enabled: true, image: images.scheduler ?? '' };
  out.push(
    res(
      ['controlplane', 'SchedulerConfigs.kubernetes.talos.dev', 'kube-scheduler'],
      scheduler,
      SchedulerConfigSpec.encode(scheduler).finish(),
    ),
  );
  return out;
}

/**
 * The namespaces a Talos node registers (internal/app/machined/pkg/runtime/v1alpha2/v1alpha2_state.go;
 * `security` from v1.13; `storage` (pkg/machinery/resources/storage) and `containers`
 * (pkg/machinery/resources/containers) from v1.14). A known type asked for in another of these is
 * simply not there (Get NOT_FOUND, List empty); any other name is refused (internal/app/resources/access.go).
 */
export function talosNamespaces(talosVersion: string): ReadonlySet<string> {
  const base = [
    'meta',
    'runtime',
    'cluster',
    'cluster-raw',
    'config',
    'etcd',
    'files',
    'hardware',
    'k8s',
    'controlplane',
    'kubespan',
    'network',
    'network-config',
    'cri',
    'secrets',
    'perf',
  ];
  if (versionAtLeast(talosVersion, 13)) base.push('security');
  if (versionAtLeast(talosVersion, 14, 'alpha.0')) base.push('storage', 'containers');
  return new Set(base);
}

/** Types the simulated nodes know (anything else is "not supported", as Talos answers). */
export const KNOWN_TYPES: Record<string, string> = {
  'MachineStatuses.runtime.talos.dev': 'runtime',
  'Versions.runtime.talos.dev': 'runtime',
  'ExtensionStatuses.runtime.talos.dev': 'runtime',
  'BootIDs.runtime.talos.dev': 'runtime',
  'ImageFactorySchematics.runtime.talos.dev': 'runtime',
  'SecurityStates.talos.dev': 'runtime',
  'Services.v1alpha1.talos.dev': 'runtime',
  'MachineConfigs.config.talos.dev': 'config',
  'KubeletSpecs.kubernetes.talos.dev': 'k8s',
  'APIServerConfigs.kubernetes.talos.dev': 'controlplane',
  'ControllerManagerConfigs.kubernetes.talos.dev': 'controlplane',
  'SchedulerConfigs.kubernetes.talos.dev': 'controlplane',
  'ResourceDefinitions.meta.cosi.dev': 'meta',
};

/** The first Talos version whose machined registers the type (the others know all of KNOWN_TYPES): [minor, pre-release]. */
const REGISTERED_SINCE: Record<string, [number, string]> = {
  'Versions.runtime.talos.dev': [10, ''],
  'BootIDs.runtime.talos.dev': [14, 'alpha.2'],
  'ImageFactorySchematics.runtime.talos.dev': [14, 'alpha.2'],
};

/**
 * Whether a node of this Talos version registers the type's ResourceDefinition
 * (internal/app/machined/pkg/runtime/v1alpha2/v1alpha2_state.go): the COSI access policy refuses any
 * other type before anything else, PermissionDenied `resource type "…" is not supported`
 * (internal/app/resources/access.go), so a type a version does not have is not NotFound.
 */
export function typeRegistered(type: string, talosVersion: string): boolean {
  if (KNOWN_TYPES[type] === undefined) return false;
  const since = REGISTERED_SINCE[type];
  return since === undefined || versionAtLeast(talosVersion, since[0], since[1]);
}

/**
 * The ResourceDefinition of a type, as COSI registers it (see definitions.ts): ID the lower-cased
 * type, the spec filled in and marshalled to both the protobuf spec (which `talosctl get <alias>`
 * resolves kinds through: client.ResolveResourceKind) and the YAML spec; sensitive as the type is
 * on this version (sensitiveType).
 */
export function resourceDefinition(type: string, talosVersion: string): SimResource {
  const spec = fillDefinition(type, KNOWN_TYPES[type] ?? '', sensitiveType(type, talosVersion));
  return res(['meta', 'ResourceDefinitions.meta.cosi.dev', type.toLowerCase()], spec, definitionProto(spec));
}
