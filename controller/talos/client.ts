// The product's Talos API client: the only code that speaks gRPC to Talos.
//
// - mTLS verified against the Secret's CA (never skipped); client cert + key from the same Secret.
// - One set of channels per (endpoint set, credentials) (channels.ts), shared by every client built from the
//   same talosConfig, closed after `idleCloseMs` once the last user released it.
// - A node is targeted with the `node` metadata key (its InternalIP or name), through any endpoint.
// - One method per step (port.ts); each takes an OpContext that cancels and bounds it. Which calls
//   are retried, and when a call may move to another endpoint, is decided in transport.ts.
// - Every error is a TalosApiError naming method, node and endpoint.
import { ContainerDriver, ContainerdNamespace } from '../../proto/gen/common/common.js';
import { Empty } from '../../proto/gen/google/protobuf/empty.js';
import { ImageServicePullLayerProgress_Status, ImageServiceService } from '../../proto/gen/machine/image.js';
import { LifecycleServiceService } from '../../proto/gen/machine/lifecycle.js';
import {
  ApplyConfigurationRequest_Mode,
  EtcdMemberAlarm_AlarmType,
  MachineServiceService,
  RebootRequest_Mode,
  UpgradeRequest_RebootMode,
} from '../../proto/gen/machine/machine.js';
import type { Resource } from '../../proto/gen/v1alpha1/resource.js';
import { StateService } from '../../proto/gen/v1alpha1/state.js';
import { type BackoffPolicy, hasBootIdResource } from '../core/talos-flow.js';
import type { OpContext } from '../runtime/context.js';
import { type SecretData, type TalosCredentials, loadCredentials } from './credentials.js';
import { type ChannelSet, acquireChannelSet, normaliseEndpoint, releaseChannelSet } from './channels.js';
import { decodeBootId, decodeExtension, decodeMachineConfig, decodeMachineStatus, decodeSecureBoot } from './cosi.js';
import { TalosApiError, TalosErrorKind } from './errors.js';
import { type CallSpec, Transport } from './transport.js';
import type {
  ApplyConfigResult,
  InstallResult,
  LegacyUpgradeOptions,
  ImageNamespace,
  LegacyUpgradeResult,
  PullOptions,
  RebootMode,
  TalosEtcdAlarm,
  TalosEtcdMember,
  TalosEtcdStatus,
  TalosMachineStatus,
  TalosNodeIdentity,
  TalosNodeVersion,
  TalosPort,
  TalosSchematicInfo,
} from './port.js';

export type TalosConfigInput = {
  /** Hosts or IPs, `:50000` appended when no port is given. */
  endpoints: readonly string[];
} & (
  | {
      /** The talosConfig Secret's data: `ca.crt`, `tls.crt`, `tls.key`. */
      secret: SecretData;
    }
  | {
      /** Credentials already loaded from that Secret (loadCredentials), for many clients of one Secret. */
      credentials: TalosCredentials;
    }
);

export interface TalosClientOptions {
  /** Deadline of one attempt of a unary call (or a short stream: Read, List). */
  callTimeoutMs?: number;
  /** Deadline of one attempt of a long streaming call (image pull, install). */
  streamTimeoutMs?: number;
  /** A long streaming call that sends no message for this long is ended (a node stuck without a word). */
  streamIdleMs?: number;
  /** Attempts of one call over all endpoints (see transport.ts for which failures are retried). */
  maxAttempts?: number;
  backoff?: BackoffPolicy;
  /** Close a channel set this long after its last user released it. */
  idleCloseMs?: number;
  /** Told once per finished call (after retries): method (e.g. `MachineService.Version`) and `OK` or the failure's code. */
  onCallEnd?: (method: string, code: string) => void;
  /** Deadline of one etcd call: a down or starting member's call hangs upstream until it. */
  etcdCallTimeoutMs?: number;
}

const DEFAULTS = {
  callTimeoutMs: 15_000,
  streamTimeoutMs: 10 * 60_000,
  // Half the stream deadline: an installer may write a large image without a line for minutes, but
  // a stream silent this long is stuck; ending it sooner than the deadline says so in the error.
  streamIdleMs: 5 * 60_000,
  maxAttempts: 4,
  backoff: { initialMs: 200, maxMs: 5_000, factor: 2 },
  idleCloseMs: 60_000,
  etcdCallTimeoutMs: 5_000,
} as const;

/** talosctl's default containerd instance for installer images: the system namespace. */
const CONTAINERD: Record<ImageNamespace, { driver: ContainerDriver; namespace: ContainerdNamespace }> = {
  system: { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_SYSTEM },
  cri: { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_CRI },
};

/** A call as a method asks for it; the attempt timeout is the client's callTimeoutMs unless given. */
interface SpecRequest {
  method: string;
  node: string;
  retry: CallSpec['retry'];
  timeoutMs?: number;
  idleMs?: number;
}

/** A COSI resource to read with State.Get. */
interface ResourceKey {
  namespace: string;
  type: string;
  id: string;
}

export class TalosClient implements TalosPort {
  private readonly set: ChannelSet;
  private readonly transport: Transport;
  private readonly opts: Required<Omit<TalosClientOptions, 'onCallEnd'>>;
  private closed = false;

  constructor(config: TalosConfigInput, options: TalosClientOptions = {}) {
    if (config.endpoints.length === 0) {
      throw new TalosApiError({ kind: TalosErrorKind.BadCredentials, message: 'talosConfig has no endpoints' });
    }
    this.opts = { ...DEFAULTS, ...options };
    const credentials = 'credentials' in config ? config.credentials : loadCredentials(config.secret);
    this.set = acquireChannelSet(config.endpoints.map(normaliseEndpoint), credentials);
    this.transport = new Transport(this.set, {
      maxAttempts: this.opts.maxAttempts,
      backoff: this.opts.backoff,
      onCallEnd: options.onCallEnd,
    });
  }

  get endpoints(): readonly string[] {
    return this.set.endpoints;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    releaseChannelSet(this.set, this.opts.idleCloseMs);
  }

  // -- reads (retried on transient errors) ---------------------------------------------------

  async version(ctx: OpContext, node: string): Promise<TalosNodeVersion> {
    const spec = this.spec(ctx, { method: 'MachineService.Version', node, retry: 'idempotent' });
    const res = await this.transport.unary(ctx, MachineServiceService.version, Empty.create(), spec);
    const v = this.single(res.messages, spec);
    const tag = v.version?.tag;
    if (!tag) throw this.malformed(spec, 'answered without version.tag');
    return {
      node,
      tag,
      arch: v.version?.arch ?? '',
      platform: v.platform?.name || undefined,
      platformMode: v.platform?.mode || undefined,
      configLoaded: v.features !== undefined,
    };
  }

  /** The node's boot ID: COSI `BootIDs` on 1.14+, else `/proc/sys/kernel/random/boot_id` via Read. */
  async bootId(ctx: OpContext, node: string, runningVersion: string): Promise<string> {
    if (hasBootIdResource(runningVersion)) {
      const id = decodeBootId(
        await this.getResource(ctx, node, { namespace: 'runtime', type: 'BootIDs.runtime.talos.dev', id: 'boot-id' }),
      );
      if (id) return id;
    }
    const spec = this.spec(ctx, { method: 'MachineService.Read', node, retry: 'idempotent' });
    const chunks = await this.transport.stream(
      ctx,
      MachineServiceService.read,
      { path: '/proc/sys/kernel/random/boot_id' },
      spec,
    );
    const id = Buffer.concat(chunks.map((c) => Buffer.from(c.bytes)))
      .toString('utf8')
      .trim();
    // An empty boot ID would read as "rebooted" to every guard that compares boot IDs.
    if (!id) throw this.malformed(spec, 'answered an empty boot ID');
    return id;
  }

  async identity(ctx: OpContext, node: string): Promise<TalosNodeIdentity> {
    const v = await this.version(ctx, node);
    return { ...v, bootId: await this.bootId(ctx, node, v.tag) };
  }

  async schematic(ctx: OpContext, node: string): Promise<TalosSchematicInfo> {
    const v = await this.version(ctx, node);
    const items = await this.transport.stream(
      ctx,
      StateService.list,
      { namespace: 'runtime', type: 'ExtensionStatuses.runtime.talos.dev', options: undefined },
      this.spec(ctx, { method: 'State.List', node, retry: 'idempotent' }),
    );
    const extensions = items.flatMap((i) => (i.resource ? [decodeExtension(i.resource)] : []));
    const schematic = extensions.find((e) => e.name === 'schematic')?.version;
    return {
      schematic: schematic || undefined,
      platform: v.platform,
      extensions: extensions.filter((e) => e.name !== 'schematic'),
    };
  }

  async secureBoot(ctx: OpContext, node: string): Promise<boolean> {
    const secureBoot = decodeSecureBoot(
      await this.getResource(ctx, node, {
        namespace: 'runtime',
        type: 'SecurityStates.talos.dev',
        id: 'securitystate',
      }),
    );
    if (secureBoot === undefined)
      throw this.malformed({ method: 'State.Get', node }, 'answered a SecurityState without secureBoot');
    return secureBoot;
  }

  async machineStatus(ctx: OpContext, node: string): Promise<TalosMachineStatus> {
    const status = decodeMachineStatus(
      await this.getResource(ctx, node, {
        namespace: 'runtime',
        type: 'MachineStatuses.runtime.talos.dev',
        id: 'machine',
      }),
    );
    if ('malformed' in status)
      throw this.malformed({ method: 'State.Get', node }, `answered a MachineStatus that ${status.malformed}`);
    return status;
  }

  async readConfig(ctx: OpContext, node: string): Promise<string> {
    const yaml = decodeMachineConfig(
      await this.getResource(ctx, node, {
        namespace: 'config',
        type: 'MachineConfigs.config.talos.dev',
        id: 'v1alpha1',
      }),
    );
    if (yaml === undefined) {
      throw new TalosApiError({
        kind: TalosErrorKind.Unknown,
        message: `machine config of node ${node} has no YAML`,
        node,
      });
    }
    return yaml;
  }

  // -- upgrade steps -------------------------------------------------------------------------

  /** Idempotent (pulling a present image is a no-op), so retried like a read. */
  async pullImage(ctx: OpContext, node: string, image: string, opts: PullOptions = {}): Promise<string> {
    const { onProgress } = opts;
    let name = '';
    await this.transport.stream(
      ctx,
      ImageServiceService.pull,
      { containerd: CONTAINERD[opts.namespace ?? 'system'], imageRef: image },
      {
        ...this.spec(ctx, {
          method: 'ImageService.Pull',
          node,
          retry: 'idempotent',
          timeoutMs: this.opts.streamTimeoutMs,
          idleMs: this.opts.streamIdleMs,
        }),
        onMessage: (msg) => {
          if (msg.name !== undefined) name = msg.name;
          const p = msg.pullProgress;
          if (p && onProgress) {
            onProgress({
              layerId: p.layerId,
              status: pullStatusName(p.progress?.status ?? 0),
              offset: p.progress?.offset ?? 0,
              total: p.progress?.total ?? 0,
            });
          }
        },
      },
    );
    if (!name) {
      throw new TalosApiError({
        kind: TalosErrorKind.OperationFailed,
        message: `Talos ImageService.Pull of ${image} on node ${node} ended without naming the pulled image`,
        method: 'ImageService.Pull',
        node,
      });
    }
    return name;
  }

  async installImage(
    ctx: OpContext,
    node: string,
    image: string,
    onMessage?: (line: string) => void,
  ): Promise<InstallResult> {
    const messages: string[] = [];
    let exitCode: number | undefined;
    await this.transport.stream(
      ctx,
      LifecycleServiceService.upgrade,
      { containerd: CONTAINERD.system, source: { imageName: image } },
      {
        ...this.spec(ctx, {
          method: 'LifecycleService.Upgrade',
          node,
          retry: 'unsent-only',
          timeoutMs: this.opts.streamTimeoutMs,
          idleMs: this.opts.streamIdleMs,
        }),
        onMessage: (msg) => {
          if (msg.progress?.message !== undefined) {
            messages.push(msg.progress.message);
            onMessage?.(msg.progress.message);
          }
          if (msg.progress?.exitCode !== undefined) exitCode = msg.progress.exitCode;
        },
      },
    );
    if (exitCode === undefined) {
      throw new TalosApiError({
        kind: TalosErrorKind.OperationFailed,
        message: `Talos LifecycleService.Upgrade on node ${node} ended without an exit code`,
        method: 'LifecycleService.Upgrade',
        node,
      });
    }
    return { messages, exitCode };
  }

  async legacyUpgrade(
    ctx: OpContext,
    node: string,
    image: string,
    opts: LegacyUpgradeOptions = {},
  ): Promise<LegacyUpgradeResult> {
    const spec = this.spec(ctx, { method: 'MachineService.Upgrade', node, retry: 'unsent-only' });
    const res = await this.transport.unary(
      ctx,
      MachineServiceService.upgrade,
      {
        image,
        preserve: opts.preserve ?? false,
        stage: opts.stage ?? false,
        force: opts.force ?? false,
        rebootMode:
          opts.rebootMode === 'powercycle' ? UpgradeRequest_RebootMode.POWERCYCLE : UpgradeRequest_RebootMode.DEFAULT,
      },
      spec,
    );
    const u = this.single(res.messages, spec);
    return { ack: u.ack, actorId: u.actorId };
  }

  async reboot(ctx: OpContext, node: string, mode: RebootMode = 'default'): Promise<{ actorId: string }> {
    const m = {
      default: RebootRequest_Mode.DEFAULT,
      powercycle: RebootRequest_Mode.POWERCYCLE,
      force: RebootRequest_Mode.FORCE,
    }[mode];
    const spec = this.spec(ctx, { method: 'MachineService.Reboot', node, retry: 'unsent-only' });
    const res = await this.transport.unary(ctx, MachineServiceService.reboot, { mode: m }, spec);
    return { actorId: this.single(res.messages, spec).actorId };
  }

  async rollback(ctx: OpContext, node: string): Promise<void> {
    // Not idempotent (a second call toggles back): never retried once it may have been sent.
    const spec = this.spec(ctx, { method: 'MachineService.Rollback', node, retry: 'unsent-only' });
    const res = await this.transport.unary(ctx, MachineServiceService.rollback, {}, spec);
    this.single(res.messages, spec);
  }

  async applyConfig(
    ctx: OpContext,
    node: string,
    yaml: string,
    opts: { dryRun?: boolean } = {},
  ): Promise<ApplyConfigResult> {
    const spec = this.spec(ctx, { method: 'MachineService.ApplyConfiguration', node, retry: 'unsent-only' });
    const res = await this.transport.unary(
      ctx,
      MachineServiceService.applyConfiguration,
      {
        data: Buffer.from(yaml, 'utf8'),
        mode: ApplyConfigurationRequest_Mode.NO_REBOOT,
        dryRun: opts.dryRun ?? false,
        tryModeTimeout: undefined,
      },
      spec,
    );
    const a = this.single(res.messages, spec);
    return {
      mode: ApplyConfigurationRequest_Mode[a.mode] ?? String(a.mode),
      warnings: a.warnings,
      modeDetails: a.modeDetails,
    };
  }

  // -- etcd (control-plane nodes) --------------------------------------------------------------
  // One attempt each with a short deadline: a call to a member that is down or still starting hangs
  // upstream until the caller's deadline, and the gate asks again on its next pass.

  async etcdMembers(ctx: OpContext, node: string): Promise<TalosEtcdMember[]> {
    const spec = this.spec(ctx, {
      method: 'MachineService.EtcdMemberList',
      node,
      retry: 'unsent-only',
      timeoutMs: this.opts.etcdCallTimeoutMs,
    });
    const res = await this.transport.unary(ctx, MachineServiceService.etcdMemberList, { queryLocal: false }, spec);
    return this.single(res.messages, spec).members.map((m) => ({
      id: m.id,
      name: m.hostname,
      peerUrls: m.peerUrls,
      clientUrls: m.clientUrls,
      isLearner: m.isLearner,
    }));
  }

  async etcdStatus(ctx: OpContext, node: string): Promise<TalosEtcdStatus> {
    const spec = this.spec(ctx, {
      method: 'MachineService.EtcdStatus',
      node,
      retry: 'unsent-only',
      timeoutMs: this.opts.etcdCallTimeoutMs,
    });
    const res = await this.transport.unary(ctx, MachineServiceService.etcdStatus, Empty.create(), spec);
    const s = this.single(res.messages, spec).memberStatus;
    if (!s) throw this.malformed(spec, 'answered an EtcdStatus without member_status');
    return {
      memberId: s.memberId,
      leader: s.leader,
      raftIndex: s.raftIndex,
      raftAppliedIndex: s.raftAppliedIndex,
      raftTerm: s.raftTerm,
      dbSize: s.dbSize,
      dbSizeInUse: s.dbSizeInUse,
      isLearner: s.isLearner,
      errors: s.errors,
      protocolVersion: s.protocolVersion,
      storageVersion: s.storageVersion,
    };
  }

  async etcdAlarms(ctx: OpContext, node: string): Promise<TalosEtcdAlarm[]> {
    const spec = this.spec(ctx, {
      method: 'MachineService.EtcdAlarmList',
      node,
      retry: 'unsent-only',
      timeoutMs: this.opts.etcdCallTimeoutMs,
    });
    const res = await this.transport.unary(ctx, MachineServiceService.etcdAlarmList, Empty.create(), spec);
    return this.single(res.messages, spec)
      .memberAlarms.filter((a) => a.alarm !== EtcdMemberAlarm_AlarmType.NONE)
      .map((a) => ({ memberId: a.memberId, alarm: EtcdMemberAlarm_AlarmType[a.alarm] ?? `UNKNOWN(${a.alarm})` }));
  }

  /** Not idempotent in effect (moves leadership): sent once; upstream waits up to 3 min for a healthy local member, bounded here by the etcd deadline. */
  async etcdForfeitLeadership(ctx: OpContext, node: string): Promise<{ member: string }> {
    const spec = this.spec(ctx, {
      method: 'MachineService.EtcdForfeitLeadership',
      node,
      retry: 'unsent-only',
      timeoutMs: this.opts.etcdCallTimeoutMs * 2,
    });
    const res = await this.transport.unary(ctx, MachineServiceService.etcdForfeitLeadership, {}, spec);
    return { member: this.single(res.messages, spec).member };
  }

  // -- helpers --------------------------------------------------------------------------------

  private async getResource(ctx: OpContext, node: string, { namespace, type, id }: ResourceKey): Promise<Resource> {
    const res = await this.transport.unary(
      ctx,
      StateService.get,
      { namespace, type, id, options: {} },
      this.spec(ctx, { method: 'State.Get', node, retry: 'idempotent' }),
    );
    if (!res.resource) {
      throw new TalosApiError({
        kind: TalosErrorKind.NotFound,
        message: `${type} ${id} not returned by node ${node}`,
        node,
      });
    }
    return res.resource;
  }

  /** The call's spec, after checking that the client and its certificate can still be used. */
  private spec(ctx: OpContext, call: SpecRequest): CallSpec {
    const { method, node, retry, timeoutMs = this.opts.callTimeoutMs, idleMs } = call;
    if (this.closed) throw new Error('TalosClient used after close()');
    const c = this.set.credentials;
    if (c.notAfter.getTime() <= ctx.clock.now()) {
      const endpoint = this.set.endpoints.join(', ');
      throw new TalosApiError({
        kind: TalosErrorKind.BadCredentials,
        message:
          `client certificate (tls.crt) for Talos endpoint ${endpoint} expired at ` +
          `${c.notAfter.toISOString()}; issue a new talosconfig (Talos client certificates last 1 year by default)`,
        method,
        node,
        endpoint,
      });
    }
    return { method, node, retry, timeoutMs, ...(idleMs === undefined ? {} : { idleMs }) };
  }

  /** An answer nothing may be decided on: transient, so the job waits (until its deadline) and asks again. */
  private malformed(spec: Pick<CallSpec, 'method' | 'node'>, what: string): TalosApiError {
    const endpoint = this.set.endpoints[this.set.preferred];
    return new TalosApiError({
      kind: TalosErrorKind.Malformed,
      transient: true,
      message:
        `Talos ${spec.method} on node ${spec.node ?? '?'} via endpoint ${endpoint ?? '?'} ${what}; nothing was decided on it and it will be asked again — ` +
        `check that the node runs a Talos version this controller supports and that nothing between them rewrites the API`,
      method: spec.method,
      node: spec.node,
      endpoint,
    });
  }

  /** The one entry of a single-node response; an entry with `metadata.error` is that node's failure. */
  private single<T extends { metadata?: { error: string; hostname: string } | undefined }>(
    messages: T[],
    spec: CallSpec,
  ): T {
    const { method, node } = spec;
    const first = messages[0];
    if (!first) {
      throw new TalosApiError({
        kind: TalosErrorKind.Unknown,
        message: `Talos ${method} on node ${node}: empty response`,
        method,
        node,
      });
    }
    if (first.metadata?.error) {
      throw new TalosApiError({
        kind: TalosErrorKind.OperationFailed,
        message: `Talos ${method} on node ${node}: ${first.metadata.error}`,
        method,
        node,
      });
    }
    return first;
  }
}

/** A pull progress status by name; a number this controller does not know is shown as such, not guessed. */
function pullStatusName(status: number): string {
  return ImageServicePullLayerProgress_Status[status] ?? `UNKNOWN(${status})`;
}

/** Builds a client from a plan's talosConfig; call close() when done (the channels are shared). */
export function createTalosClient(config: TalosConfigInput, options?: TalosClientOptions): TalosClient {
  return new TalosClient(config, options);
}
