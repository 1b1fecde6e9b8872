// The Talos port: what the rollout needs from a Talos node, as plain typed values.
import type { OpContext } from '../runtime/context.js';

export interface TalosNodeVersion {
  /** The node as addressed (its InternalIP or name). */
  node: string;
  /** e.g. `v1.13.9` */
  tag: string;
  arch: string;
  /** `metal`, `aws`, ... (unset when the node does not know its platform). */
  platform: string | undefined;
  platformMode: string | undefined;
  /** False in maintenance mode (no config loaded). */
  configLoaded: boolean;
}

export interface TalosNodeIdentity extends TalosNodeVersion {
  /** Changes on every boot. */
  bootId: string;
}

export interface TalosExtension {
  name: string;
  version: string;
  author: string;
  image: string;
}

export interface TalosSchematicInfo {
  /** Image Factory schematic ID; undefined when the image was not built by the factory. */
  schematic: string | undefined;
  platform: string | undefined;
  extensions: TalosExtension[];
}

export interface TalosMachineStatus {
  /** `booting`, `running`, `rebooting`, `upgrading`, ... */
  stage: string;
  ready: boolean;
  unmetConditions: { name: string; reason: string }[];
}

/** Where ImageService.Pull puts the image, as `talosctl image pull --namespace` names it. */
export type ImageNamespace = 'system' | 'cri';

export interface PullOptions {
  namespace?: ImageNamespace;
  onProgress?: (p: PullProgress) => void;
}

export interface PullProgress {
  layerId: string;
  status: string;
  offset: number;
  total: number;
}

/** Legacy MachineService.Upgrade options (Talos < 1.13: the node drains, installs and reboots itself). */
export interface LegacyUpgradeOptions {
  preserve?: boolean;
  force?: boolean;
  stage?: boolean;
  rebootMode?: 'default' | 'powercycle';
}

export interface LegacyUpgradeResult {
  ack: string;
  actorId: string;
}

/** LifecycleService.Upgrade (Talos >= 1.13): writes the new boot image while the OS keeps running. */
export interface InstallResult {
  messages: string[];
  /** 0 = the new image was written; the node still runs the old one until Reboot. */
  exitCode: number;
}

export type RebootMode = 'default' | 'powercycle' | 'force';

export interface ApplyConfigResult {
  mode: string;
  warnings: string[];
  modeDetails: string;
}

/** One etcd member as EtcdMemberList lists it (IDs are uint64 as exact decimal strings). */
export interface TalosEtcdMember {
  id: string;
  /** The member name (the node's hostname); '' while the member has not started. */
  name: string;
  peerUrls: string[];
  clientUrls: string[];
  isLearner: boolean;
}

/** The node's local etcd member as EtcdStatus reports it. */
export interface TalosEtcdStatus {
  memberId: string;
  /** '0' when the member knows no leader. */
  leader: string;
  raftIndex: number;
  raftAppliedIndex: number;
  raftTerm: number;
  dbSize: number;
  dbSizeInUse: number;
  isLearner: boolean;
  errors: string[];
  protocolVersion: string;
  storageVersion: string;
}

export interface TalosEtcdAlarm {
  memberId: string;
  /** `NOSPACE`, `CORRUPT` (`NONE` is never listed). */
  alarm: string;
}

/**
 * What the rollout needs from Talos nodes, one step per method so a reconcile pass does at most one
 * action. Every call takes an operation context: aborting its signal cancels the call or stream at
 * once; its deadline bounds the call. Errors are TalosApiError.
 *
 * Retries: reads (version, identity, schematic, machineStatus, secureBoot, readConfig) and pullImage are retried
 * on transient errors within the context's deadline. Non-idempotent calls (legacyUpgrade,
 * installImage, reboot, applyConfig) fail over to another endpoint only when the request provably
 * was not sent (the channel never became ready); any later failure is returned to the caller, who
 * decides from recorded state whether to call again.
 */
export interface TalosPort {
  version(ctx: OpContext, node: string): Promise<TalosNodeVersion>;
  /** Version and boot ID together. */
  identity(ctx: OpContext, node: string): Promise<TalosNodeIdentity>;
  schematic(ctx: OpContext, node: string): Promise<TalosSchematicInfo>;
  machineStatus(ctx: OpContext, node: string): Promise<TalosMachineStatus>;
  /** SecurityState: whether the node booted with Secure Boot (its installer is then a `-secureboot` one). */
  secureBoot(ctx: OpContext, node: string): Promise<boolean>;
  /**
   * ImageService.Pull (1.13+) into containerd's `system` namespace (installer, kubelet; the default)
   * or its `cri` namespace (the static pods' images); resolves to the pulled image name.
   */
  pullImage(ctx: OpContext, node: string, image: string, opts?: PullOptions): Promise<string>;
  /** LifecycleService.Upgrade (1.13+); the image must have been pulled. Does not reboot. */
  installImage(ctx: OpContext, node: string, image: string, onMessage?: (line: string) => void): Promise<InstallResult>;
  /** MachineService.Upgrade (before 1.13): acknowledged at once, then the node installs and reboots itself. */
  legacyUpgrade(ctx: OpContext, node: string, image: string, opts?: LegacyUpgradeOptions): Promise<LegacyUpgradeResult>;
  reboot(ctx: OpContext, node: string, mode?: RebootMode): Promise<{ actorId: string }>;
  /** MachineService.Rollback (os:admin): flips the bootloader to the previous entry and reboots into it. Acknowledged before the reboot. */
  rollback(ctx: OpContext, node: string): Promise<void>;
  /** The active machine config (multi-document YAML). Needs os:admin. */
  readConfig(ctx: OpContext, node: string): Promise<string>;
  /** Applies a full config with NO_REBOOT (live + persisted). */
  applyConfig(ctx: OpContext, node: string, yaml: string, opts?: { dryRun?: boolean }): Promise<ApplyConfigResult>;
  /**
   * etcd (control-plane nodes only; a worker answers UNIMPLEMENTED). A call to a member that is down
   * or still starting hangs upstream until the caller's deadline: each of these carries its own short
   * deadline (at most the context's) and is tried once, the caller polls again.
   */
  /** EtcdMemberList with query_local=false: the cluster's members as this node's client sees them (needs a quorum). */
  etcdMembers(ctx: OpContext, node: string): Promise<TalosEtcdMember[]>;
  /** EtcdStatus of the node's local member. */
  etcdStatus(ctx: OpContext, node: string): Promise<TalosEtcdStatus>;
  /** EtcdAlarmList: the alarms of every member of the cluster. */
  etcdAlarms(ctx: OpContext, node: string): Promise<TalosEtcdAlarm[]>;
  /** EtcdForfeitLeadership: the new leader's name, or '' when the node's member did not lead. Needs os:admin. */
  etcdForfeitLeadership(ctx: OpContext, node: string): Promise<{ member: string }>;
  /** Releases this user's hold on the shared channels. */
  close(): void;
}
