// The Talos port: what the rollout needs from a Talos node, as plain typed values.
import type { UpgradeFlow } from '../core/talos-flow.js';

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

export interface PullProgress {
  layerId: string;
  status: string;
  offset: number;
  total: number;
}

export interface UpgradeOptions {
  /** Installer image reference, e.g. `factory.talos.dev/metal-installer/<id>:v1.14.0`. */
  image: string;
  /** The node's running version; fetched with Version when omitted. Decides the flow. */
  runningVersion?: string;
  /** Legacy flow only. */
  preserve?: boolean;
  force?: boolean;
  stage?: boolean;
  rebootMode?: 'default' | 'powercycle';
  onMessage?: (line: string) => void;
}

export type UpgradeResult =
  | { flow: typeof UpgradeFlow.Legacy; ack: string; actorId: string }
  | {
      flow: typeof UpgradeFlow.Lifecycle;
      pulledImage: string;
      messages: string[];
      /** 0 = the new image was written; the node still runs the old one until Reboot. */
      exitCode: number;
    };

export type RebootMode = 'default' | 'powercycle' | 'force';

export interface ApplyConfigResult {
  mode: string;
  warnings: string[];
  modeDetails: string;
}

export interface TalosPort {
  version(node: string): Promise<TalosNodeVersion>;
  bootId(node: string, runningVersion?: string): Promise<string>;
  /** Version and boot ID together. */
  identity(node: string): Promise<TalosNodeIdentity>;
  schematic(node: string): Promise<TalosSchematicInfo>;
  machineStatus(node: string): Promise<TalosMachineStatus>;
  pullImage(node: string, image: string, onProgress?: (p: PullProgress) => void): Promise<string>;
  upgrade(node: string, opts: UpgradeOptions): Promise<UpgradeResult>;
  reboot(node: string, mode?: RebootMode): Promise<{ actorId: string }>;
  /** The active machine config (multi-document YAML). Needs os:admin. */
  readConfig(node: string): Promise<string>;
  /** Applies a full config with NO_REBOOT (live + persisted). */
  applyConfig(node: string, yaml: string, opts?: { dryRun?: boolean }): Promise<ApplyConfigResult>;
  /** Releases this user's hold on the shared channels. */
  close(): void;
}
