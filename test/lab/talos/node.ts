// One simulated Talos node: its state (version, schematic, platform, boot ID, machine config,
// extensions, stage), its per-version behaviour, its faults, and its COSI resources. The
// Kubernetes side of a reboot goes through FleetControl only.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { parseDocument, stringify as toYaml } from 'yaml';
import { MachineConfigSpec } from '../../../proto/gen/resource/config/config.js';
import { RuntimeMachineStage } from '../../../proto/gen/resource/definitions/enums/enums.js';
import { Layer } from '../../../proto/gen/resource/definitions/extensions/extensions.js';
import {
  BootIDSpec,
  ImageFactorySchematicSpec,
  MachineStatusSpec,
  VersionSpec,
} from '../../../proto/gen/resource/definitions/runtime/runtime.js';
import type { ComponentImages, FleetControl, FleetNodeState, NodeRole } from '../fleet/types.js';
import { versionOfImage } from '../fleet/static-pods.js';
import { machineConfigYaml } from './machine-config.js';
import { versionAtLeast } from './versions.js';


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
}

/** Sub-second timings for tests. */
export const TEST_TIMINGS: TalosSimTimings = { upgradeMs: 60, pullMs: 30, installMs: 40, shutdownMs: 20, rebootMs: 120, bootMs: 60 };
/** A few seconds per reboot, for the demo. */
export const DEMO_TIMINGS: TalosSimTimings = { upgradeMs: 2000, pullMs: 1500, installMs: 2500, shutdownMs: 500, rebootMs: 3000, bootMs: 1500 };

export interface RpcFault {
  code: GrpcStatus;
  message: string;
}

/** Faults scriptable per node from tests. */
export interface NodeFaults {
  /** Legacy Upgrade and LifecycleService.Upgrade fail with this status before doing anything. */
  upgradeError?: RpcFault;
  /** ImageService.Pull fails with this status. */
  pullError?: RpcFault;
  /** The installer fails: LifecycleService.Upgrade ends with this exit code; legacy Upgrade aborts without reboot. */
  installExitCode?: number;
  /** After going down for a reboot, the node never answers again (until powerOn). */
  neverComesBack?: boolean;
  /** Extra time the node stays down on each reboot. */
  slowBootMs?: number;
  /** The new boot fails and the bootloader reverts: old version, new boot ID. */
  bootsOldPartition?: boolean;
  /** Every call to this node answers this much later. */
  slowResponseMs?: number;
  /** The node's apid refuses the caller: `role` ⇒ PERMISSION_DENIED; `wrong-ca` ⇒ TLS failure (UNAVAILABLE). */
  tlsRejected?: 'wrong-ca' | 'role';
  /**
   * The node stays in this phase once it enters it (`upgrading`: the legacy installer runs;
   * `rebooting`: shutting down, API still up; `booting`: API up, not ready) until the fault is
   * cleared or changed, so a test can call the node in that phase without racing a timer.
   */
  holdPhase?: 'upgrading' | 'rebooting' | 'booting';
}

export type Phase = 'running' | 'upgrading' | 'rebooting' | 'down' | 'booting';

/** The mutating Talos API calls the simulator records per node (gRPC service.method). */
export type SimCallMethod =
  | 'MachineService.Upgrade'
  | 'ImageService.Pull'
  | 'LifecycleService.Upgrade'
  | 'MachineService.Reboot'
  | 'MachineService.ApplyConfiguration';

/** What the caller saw: `pending` while a stream runs, `ok`, or the gRPC status it was answered with. */
export type SimCallResult = 'pending' | 'ok' | { code: GrpcStatus; codeName: string; message: string };

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
  /** Installer image (legacy Upgrade, Pull, LifecycleService.Upgrade). */
  image?: string;
  /** Reboot mode by name: `DEFAULT`, `POWERCYCLE`, `FORCE` (Reboot, legacy Upgrade). */
  rebootMode?: string;
  /** ApplyConfiguration mode by name (`AUTO`, `NO_REBOOT`, ...). */
  applyMode?: string;
  dryRun?: boolean;
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
}

interface VersionRecord {
  version: number;
  yaml: string;
  created: Date;
  updated: Date;
}

export interface ExtensionInfo {
  name: string;
  version: string;
  image: string;
  author: string;
}

export class RpcError extends Error {
  constructor(
    readonly code: GrpcStatus,
    readonly details: string,
  ) {
    super(details);
  }
}

export class SimNode {
  readonly events = new EventEmitter();
  readonly name: string;
  readonly ip: string;
  readonly role: NodeRole;
  version: string;
  schematic: string;
  kubernetesVersion: string;
  platform = 'metal';
  arch = 'amd64';
  bootId: string;
  phase: Phase = 'running';
  config: string;
  extensions: ExtensionInfo[];
  faults: NodeFaults = {};
  unreachableUntil = 0;
  /** Written by LifecycleService.Upgrade, booted by the next Reboot. */
  staged: { version: string; schematic: string } | undefined;
  readonly pulled = new Set<string>();
  installing = false;
  applying = false;
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
  private readonly versions = new Map<string, VersionRecord>();
  /** The step a `holdPhase` fault is holding back. */
  private held: { phase: Phase; resume: () => void | Promise<void> } | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    state: FleetNodeState,
    private readonly fleet: FleetControl,
    private readonly timings: () => TalosSimTimings,
    readonly clusterName: string,
    readonly controlPlaneEndpoint: string,
  ) {
    this.name = state.name;
    this.ip = state.internalIP;
    this.role = state.role;
    this.version = state.talosVersion;
    this.schematic = state.schematic;
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
    });
    this.extensions = [
      { name: 'iscsi-tools', version: 'v0.2.0', image: 'iscsi-tools.sqsh', author: 'Sidero Labs' },
      { name: 'qemu-guest-agent', version: '10.0.2', image: 'qemu-guest-agent.sqsh', author: 'Sidero Labs' },
    ];
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
    this.events.emit('change', what);
  }

  /** A live config change reaches Kubernetes: kubelet version and static pods follow the config. */
  async applyConfig(config: string): Promise<void> {
    this.config = config;
    const images = configImages(config);
    this.kubernetesVersion = versionOfImage(images.kubelet) ?? this.kubernetesVersion;
    this.changed('config applied');
    await this.fleet.applyComponents(this.name, images);
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
  faultsChanged(): void {
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
  }

  /** Legacy MachineService.Upgrade after the ack: install, then reboot into the new version. */
  startLegacyUpgrade(target: { version: string; schematic: string }): void {
    this.upgradesStarted++;
    this.phase = 'upgrading';
    this.changed(`upgrade ${this.version} -> ${target.version} (legacy)`);
    this.afterHeld('upgrading', this.timings().upgradeMs, () => {
      if (this.faults.installExitCode !== undefined && this.faults.installExitCode !== 0) {
        this.phase = 'running';
        this.changed(`upgrade failed: installer exited with code ${this.faults.installExitCode}`);
        return;
      }
      this.rebootInto(target);
    });
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
  requestReboot(): string {
    if (this.phase === 'rebooting' || this.phase === 'upgrading') {
      const effect = `reboot ignored: ${this.phase === 'upgrading' ? 'an upgrade is in progress (sequence locked)' : 'already rebooting'}`;
      this.history.push(effect);
      return effect;
    }
    const staged = this.staged;
    this.staged = undefined;
    if (staged) this.upgradesStarted++;
    this.rebootInto(staged);
    return staged ? `reboot into staged ${staged.version}` : 'reboot';
  }

  /** Reboot: stage rebooting → down (Node NotReady) → booting (API answers) → running + ready (Node Ready). */
  rebootInto(target: { version: string; schematic: string } | undefined): void {
    this.bootEpoch++; // a boot still in progress (reboot while booting) must not finish into this reboot
    this.phase = 'rebooting';
    this.changed('rebooting');
    this.afterHeld('rebooting', this.timings().shutdownMs, async () => {
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

  private pendingBoot: { version: string; schematic: string } | undefined;
  private bootEpoch = 0;

  private boot(target: { version: string; schematic: string } | undefined): void {
    const oldPartition = this.faults.bootsOldPartition === true;
    if (target && !oldPartition) {
      this.version = target.version;
      this.schematic = target.schematic;
      this.bootsIntoNewVersion++;
    }
    this.bootId = randomUUID();
    this.versions.clear(); // resources live in memory: versions restart after a boot
    this.phase = 'booting';
    this.changed(oldPartition && target ? `booted old partition ${this.version}` : `booting ${this.version}`);
    const epoch = this.bootEpoch;
    this.afterHeld('booting', this.timings().bootMs, async () => {
      if (epoch !== this.bootEpoch) return;
      this.phase = 'running';
      await this.fleet.bringUp(this.name, { talosVersion: this.version, schematic: this.schematic, bootId: this.bootId });
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

function res(
  namespace: string,
  type: string,
  id: string,
  spec: unknown,
  proto: Uint8Array,
  extra: Partial<Pick<SimResource, 'sensitive' | 'annotations' | 'yaml'>> = {},
): SimResource {
  return { namespace, type, id, yaml: extra.yaml ?? toYaml(spec), proto, sensitive: extra.sensitive ?? false, annotations: extra.annotations ?? {} };
}

function configImages(config: string): ComponentImages {
  const doc = parseDocument(config).toJS() as {
    machine?: { kubelet?: { image?: string } };
    cluster?: { apiServer?: { image?: string }; controllerManager?: { image?: string }; scheduler?: { image?: string } };
  } | null;
  return {
    kubelet: doc?.machine?.kubelet?.image,
    apiServer: doc?.cluster?.apiServer?.image,
    controllerManager: doc?.cluster?.controllerManager?.image,
    scheduler: doc?.cluster?.scheduler?.image,
  };
}

function buildResources(n: SimNode): SimResource[] {
  const out: SimResource[] = [];
  const unmet = n.ready ? [] : [{ name: 'nodeReady', reason: 'node not ready' }];
  out.push(
    res(
      'runtime',
      'MachineStatuses.runtime.talos.dev',
      'machine',
      { stage: n.stage, status: { ready: n.ready, unmetConditions: unmet } },
      MachineStatusSpec.encode({
        stage: STAGE_ENUM[n.stage] ?? RuntimeMachineStage.MACHINE_STAGE_UNKNOWN,
        status: { ready: n.ready, unmetConditions: unmet },
      }).finish(),
    ),
  );
  if (versionAtLeast(n.version, 10)) {
    out.push(res('runtime', 'Versions.runtime.talos.dev', 'version', { version: n.version, name: 'Talos' }, VersionSpec.encode({ version: n.version, name: 'Talos' }).finish()));
  }
  const layers = [
    ...n.extensions,
    { name: 'schematic', version: n.schematic, image: '', author: 'Image Factory (https://factory.talos.dev)' },
  ];
  layers.forEach((e, i) => {
    const metadata = { name: e.name, version: e.version, author: e.author, description: '', compatibility: { talos: { version: '' } }, extraInfo: '' };
    out.push(
      res(
        'runtime',
        'ExtensionStatuses.runtime.talos.dev',
        String(i),
        { image: e.image, metadata: { name: e.name, version: e.version, author: e.author } },
        Layer.encode({ image: e.image, metadata }).finish(),
      ),
    );
  });
  if (versionAtLeast(n.version, 14, 'alpha.2')) {
    out.push(res('runtime', 'BootIDs.runtime.talos.dev', 'boot-id', { bootId: n.bootId }, BootIDSpec.encode({ bootId: n.bootId }).finish()));
    const s = { schematicId: n.schematic, flavor: 'metal', apiUrl: 'https://factory.talos.dev' };
    out.push(
      res(
        'runtime',
        'ImageFactorySchematics.runtime.talos.dev',
        'image-factory-schematic',
        s,
        ImageFactorySchematicSpec.encode({ schematicId: s.schematicId, flavor: s.flavor, apiurl: s.apiUrl }).finish(),
      ),
    );
  }
  // yaml_spec of the machine config is a YAML *string scalar* holding the whole config.
  out.push(
    res('config', 'MachineConfigs.config.talos.dev', 'v1alpha1', null, MachineConfigSpec.encode({ yamlMarshalled: Buffer.from(n.config) }).finish(), {
      yaml: toYaml(n.config),
      sensitive: true,
      annotations: { 'talos.dev/yaml-spec': '1' },
    }),
  );
  const images = configImages(n.config);
  // Specs below have no .proto of ours: yaml_spec only (proto_spec empty).
  out.push(res('k8s', 'KubeletSpecs.kubernetes.talos.dev', 'kubelet', { image: images.kubelet ?? '', args: [] }, new Uint8Array()));
  out.push(res('runtime', 'Services.v1alpha1.talos.dev', 'kubelet', { running: n.ready, healthy: n.ready, unknown: false }, new Uint8Array()));
  if (n.role === 'controlplane') {
    out.push(res('controlplane', 'APIServerConfigs.kubernetes.talos.dev', 'kube-apiserver', { image: images.apiServer ?? '' }, new Uint8Array()));
    out.push(res('controlplane', 'ControllerManagerConfigs.kubernetes.talos.dev', 'kube-controller-manager', { image: images.controllerManager ?? '' }, new Uint8Array()));
    out.push(res('controlplane', 'SchedulerConfigs.kubernetes.talos.dev', 'kube-scheduler', { image: images.scheduler ?? '' }, new Uint8Array()));
  }
  return out;
}

/** Types the simulated nodes know (anything else is "not supported", as Talos answers). */
export const KNOWN_TYPES: Record<string, string> = {
  'MachineStatuses.runtime.talos.dev': 'runtime',
  'Versions.runtime.talos.dev': 'runtime',
  'ExtensionStatuses.runtime.talos.dev': 'runtime',
  'BootIDs.runtime.talos.dev': 'runtime',
  'ImageFactorySchematics.runtime.talos.dev': 'runtime',
  'Services.v1alpha1.talos.dev': 'runtime',
  'MachineConfigs.config.talos.dev': 'config',
  'KubeletSpecs.kubernetes.talos.dev': 'k8s',
  'APIServerConfigs.kubernetes.talos.dev': 'controlplane',
  'ControllerManagerConfigs.kubernetes.talos.dev': 'controlplane',
  'SchedulerConfigs.kubernetes.talos.dev': 'controlplane',
};
