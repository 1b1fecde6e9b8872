// The product's Talos API client: the only code that speaks gRPC to Talos.
//
// - mTLS verified against the Secret's CA (never skipped); client cert + key from the same Secret.
// - One set of channels per (endpoint set, credentials) (channels.ts), shared by every client built from the
//   same talosConfig, closed after `idleCloseMs` once the last user released it.
// - A node is targeted with the `node` metadata key (its InternalIP or name), through any endpoint;
//   transient failures move to the next endpoint and are retried with backoff.
// - Every call has a deadline; every error is a TalosApiError naming method, node and endpoint.
import { setTimeout as delay } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { parse as parseYaml } from 'yaml';
import { ContainerDriver, ContainerdNamespace } from '../../proto/gen/common/common.js';
import { Empty } from '../../proto/gen/google/protobuf/empty.js';
import { ImageServicePullLayerProgress_Status, ImageServiceService } from '../../proto/gen/machine/image.js';
import { LifecycleServiceService } from '../../proto/gen/machine/lifecycle.js';
import {
  ApplyConfigurationRequest_Mode,
  MachineServiceService,
  RebootRequest_Mode,
  UpgradeRequest_RebootMode,
} from '../../proto/gen/machine/machine.js';
import { MachineConfigSpec } from '../../proto/gen/resource/config/config.js';
import { Layer } from '../../proto/gen/resource/definitions/extensions/extensions.js';
import { BootIDSpec, MachineStatusSpec } from '../../proto/gen/resource/definitions/runtime/runtime.js';
import type { Resource } from '../../proto/gen/v1alpha1/resource.js';
import { StateService } from '../../proto/gen/v1alpha1/state.js';
import {
  type BackoffPolicy,
  UpgradeFlow,
  backoffDelay,
  classifyGrpcError,
  hasBootIdResource,
  upgradeFlowFor,
} from '../core/talos-flow.js';
import { type SecretData, loadCredentials } from './credentials.js';
import { type ChannelSet, acquireChannelSet, normaliseEndpoint, releaseChannelSet } from './channels.js';
import { diagnoseTls } from './tls-diagnosis.js';
import { TalosApiError, TalosErrorKind } from './errors.js';
import type {
  ApplyConfigResult,
  PullProgress,
  RebootMode,
  TalosExtension,
  TalosMachineStatus,
  TalosNodeIdentity,
  TalosNodeVersion,
  TalosPort,
  TalosSchematicInfo,
  UpgradeOptions,
  UpgradeResult,
} from './port.js';


export interface TalosConfigInput {
  /** Hosts or IPs, `:50000` appended when no port is given. */
  endpoints: readonly string[];
  /** The talosConfig Secret's data: `ca.crt`, `tls.crt`, `tls.key`. */
  secret: SecretData;
}

export interface TalosClientOptions {
  /** Deadline of one attempt of a unary call. */
  callTimeoutMs?: number;
  /** Deadline of one attempt of a streaming call (image pull, install). */
  streamTimeoutMs?: number;
  maxAttempts?: number;
  backoff?: BackoffPolicy;
  /** Close a channel set this long after its last user released it. */
  idleCloseMs?: number;
  /** Current time, for the certificate expiry check. */
  now?: () => Date;
}

const DEFAULTS = {
  callTimeoutMs: 15_000,
  streamTimeoutMs: 10 * 60_000,
  maxAttempts: 4,
  backoff: { initialMs: 200, maxMs: 5_000, factor: 2 },
  idleCloseMs: 60_000,
} as const;

// ---------------------------------------------------------------------------------------------
// Calls

interface UnaryDef<Req, Res> {
  path: string;
  requestSerialize: (value: Req) => Buffer;
  responseDeserialize: (value: Buffer) => Res;
}

interface CallSpec {
  /** Short method name for messages, e.g. `MachineService.Version`. */
  method: string;
  node: string | undefined;
  /** Safe to repeat after a deadline passed (reads). UNAVAILABLE is retried for every call. */
  idempotent: boolean;
  timeoutMs: number;
}

function methodName(path: string): string {
  const m = /^\/(?:[a-z.]+\.)?([A-Za-z]+)\/([A-Za-z]+)$/.exec(path);
  return m ? `${m[1]}.${m[2]}` : path;
}

function isServiceError(err: unknown): err is grpc.ServiceError {
  return err instanceof Error && typeof (err as Partial<grpc.ServiceError>).code === 'number';
}


export class TalosClient implements TalosPort {
  private readonly set: ChannelSet;
  private readonly opts: Required<Omit<TalosClientOptions, 'now'>> & { now: () => Date };
  private closed = false;

  constructor(config: TalosConfigInput, options: TalosClientOptions = {}) {
    if (config.endpoints.length === 0) {
      throw new TalosApiError({ kind: TalosErrorKind.BadCredentials, message: 'talosConfig has no endpoints' });
    }
    this.opts = { ...DEFAULTS, now: () => new Date(), ...options };
    const credentials = loadCredentials(config.secret);
    this.set = acquireChannelSet(config.endpoints.map(normaliseEndpoint), credentials);
  }

  get endpoints(): readonly string[] {
    return this.set.endpoints;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    releaseChannelSet(this.set, this.opts.idleCloseMs);
  }

  // -- port operations ------------------------------------------------------------------------

  async version(node: string): Promise<TalosNodeVersion> {
    const res = await this.unary(MachineServiceService.version, Empty.create(), this.spec('Version', node, true));
    const v = this.single(res.messages, 'MachineService.Version', node);
    return {
      node,
      tag: v.version?.tag ?? '',
      arch: v.version?.arch ?? '',
      platform: v.platform?.name || undefined,
      platformMode: v.platform?.mode || undefined,
      configLoaded: v.features !== undefined,
    };
  }

  async bootId(node: string, runningVersion?: string): Promise<string> {
    const tag = runningVersion ?? (await this.version(node)).tag;
    if (hasBootIdResource(tag)) {
      const r = await this.getResource(node, 'runtime', 'BootIDs.runtime.talos.dev', 'boot-id');
      const spec = r.spec?.protoSpec?.length ? BootIDSpec.decode(r.spec.protoSpec).bootId : this.yamlField(r, 'bootId');
      if (spec) return spec;
    }
    const chunks = await this.stream(
      MachineServiceService.read,
      { path: '/proc/sys/kernel/random/boot_id' },
      this.spec('Read', node, true, this.opts.callTimeoutMs),
    );
    return Buffer.concat(chunks.map((c) => Buffer.from(c.bytes))).toString('utf8').trim();
  }

  async identity(node: string): Promise<TalosNodeIdentity> {
    const v = await this.version(node);
    return { ...v, bootId: await this.bootId(node, v.tag) };
  }

  async schematic(node: string): Promise<TalosSchematicInfo> {
    const v = await this.version(node);
    const resources = await this.listResources(node, 'runtime', 'ExtensionStatuses.runtime.talos.dev');
    const extensions: TalosExtension[] = resources.map((r) => {
      if (r.spec?.protoSpec?.length) {
        const layer = Layer.decode(r.spec.protoSpec);
        return {
          name: layer.metadata?.name ?? '',
          version: layer.metadata?.version ?? '',
          author: layer.metadata?.author ?? '',
          image: layer.image,
        };
      }
      const y = this.yamlSpec(r);
      const meta = (y.metadata ?? {}) as Record<string, unknown>;
      return { name: str(meta.name), version: str(meta.version), author: str(meta.author), image: str(y.image) };
    });
    const schematic = extensions.find((e) => e.name === 'schematic')?.version;
    return { schematic: schematic || undefined, platform: v.platform, extensions: extensions.filter((e) => e.name !== 'schematic') };
  }

  async machineStatus(node: string): Promise<TalosMachineStatus> {
    const r = await this.getResource(node, 'runtime', 'MachineStatuses.runtime.talos.dev', 'machine');
    if (r.spec?.protoSpec?.length) {
      const s = MachineStatusSpec.decode(r.spec.protoSpec);
      return {
        stage: STAGES[s.stage] ?? 'unknown',
        ready: s.status?.ready ?? false,
        unmetConditions: (s.status?.unmetConditions ?? []).map((c) => ({ name: c.name, reason: c.reason })),
      };
    }
    const y = this.yamlSpec(r);
    const status = (y.status ?? {}) as { ready?: boolean; unmetConditions?: { name: string; reason: string }[] };
    return { stage: str(y.stage) || 'unknown', ready: status.ready === true, unmetConditions: status.unmetConditions ?? [] };
  }

  async pullImage(node: string, image: string, onProgress?: (p: PullProgress) => void): Promise<string> {
    let name = '';
    await this.stream(
      ImageServiceService.pull,
      { containerd: { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_SYSTEM }, imageRef: image },
      this.spec('Pull', node, true, this.opts.streamTimeoutMs, 'ImageService'),
      (msg) => {
        if (msg.name !== undefined) name = msg.name;
        const p = msg.pullProgress;
        if (p && onProgress) {
          onProgress({
            layerId: p.layerId,
            status: ImageServicePullLayerProgress_Status[p.progress?.status ?? 0] ?? 'UNKNOWN',
            offset: p.progress?.offset ?? 0,
            total: p.progress?.total ?? 0,
          });
        }
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

  async upgrade(node: string, opts: UpgradeOptions): Promise<UpgradeResult> {
    const running = opts.runningVersion ?? (await this.version(node)).tag;
    if (upgradeFlowFor(running) === UpgradeFlow.Legacy) {
      const res = await this.unary(
        MachineServiceService.upgrade,
        {
          image: opts.image,
          preserve: opts.preserve ?? false,
          stage: opts.stage ?? false,
          force: opts.force ?? false,
          rebootMode: opts.rebootMode === 'powercycle' ? UpgradeRequest_RebootMode.POWERCYCLE : UpgradeRequest_RebootMode.DEFAULT,
        },
        this.spec('Upgrade', node, false),
      );
      const u = this.single(res.messages, 'MachineService.Upgrade', node);
      return { flow: UpgradeFlow.Legacy, ack: u.ack, actorId: u.actorId };
    }
    const pulledImage = await this.pullImage(node, opts.image);
    const messages: string[] = [];
    let exitCode: number | undefined;
    await this.stream(
      LifecycleServiceService.upgrade,
      {
        containerd: { driver: ContainerDriver.CRI, namespace: ContainerdNamespace.NS_SYSTEM },
        source: { imageName: opts.image },
      },
      this.spec('Upgrade', node, false, this.opts.streamTimeoutMs, 'LifecycleService'),
      (msg) => {
        if (msg.progress?.message !== undefined) {
          messages.push(msg.progress.message);
          opts.onMessage?.(msg.progress.message);
        }
        if (msg.progress?.exitCode !== undefined) exitCode = msg.progress.exitCode;
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
    return { flow: UpgradeFlow.Lifecycle, pulledImage, messages, exitCode };
  }

  async reboot(node: string, mode: RebootMode = 'default'): Promise<{ actorId: string }> {
    const m = { default: RebootRequest_Mode.DEFAULT, powercycle: RebootRequest_Mode.POWERCYCLE, force: RebootRequest_Mode.FORCE }[mode];
    const res = await this.unary(MachineServiceService.reboot, { mode: m }, this.spec('Reboot', node, false));
    return { actorId: this.single(res.messages, 'MachineService.Reboot', node).actorId };
  }

  async readConfig(node: string): Promise<string> {
    const r = await this.getResource(node, 'config', 'MachineConfigs.config.talos.dev', 'v1alpha1');
    if (r.spec?.protoSpec?.length) {
      return Buffer.from(MachineConfigSpec.decode(r.spec.protoSpec).yamlMarshalled).toString('utf8');
    }
    // yaml_spec is a YAML string scalar holding the whole config: decode twice.
    const inner: unknown = parseYaml(r.spec?.yamlSpec ?? '');
    if (typeof inner !== 'string') {
      throw new TalosApiError({ kind: TalosErrorKind.Unknown, message: `machine config of node ${node} has no YAML`, node });
    }
    return inner;
  }

  async applyConfig(node: string, yaml: string, opts: { dryRun?: boolean } = {}): Promise<ApplyConfigResult> {
    const res = await this.unary(
      MachineServiceService.applyConfiguration,
      { data: Buffer.from(yaml, 'utf8'), mode: ApplyConfigurationRequest_Mode.NO_REBOOT, dryRun: opts.dryRun ?? false, tryModeTimeout: undefined },
      this.spec('ApplyConfiguration', node, false),
    );
    const a = this.single(res.messages, 'MachineService.ApplyConfiguration', node);
    return { mode: ApplyConfigurationRequest_Mode[a.mode] ?? String(a.mode), warnings: a.warnings, modeDetails: a.modeDetails };
  }

  // -- COSI helpers -----------------------------------------------------------------------------

  private async getResource(node: string, namespace: string, type: string, id: string): Promise<Resource> {
    const res = await this.unary(StateService.get, { namespace, type, id, options: {} }, this.spec('Get', node, true, undefined, 'State'));
    if (!res.resource) {
      throw new TalosApiError({ kind: TalosErrorKind.NotFound, message: `${type} ${id} not returned by node ${node}`, node });
    }
    return res.resource;
  }

  private async listResources(node: string, namespace: string, type: string): Promise<Resource[]> {
    const items = await this.stream(
      StateService.list,
      { namespace, type, options: undefined },
      this.spec('List', node, true, this.opts.callTimeoutMs, 'State'),
    );
    return items.flatMap((i) => (i.resource ? [i.resource] : []));
  }

  private yamlSpec(r: Resource): Record<string, unknown> {
    const y: unknown = parseYaml(r.spec?.yamlSpec ?? '');
    return y !== null && typeof y === 'object' ? (y as Record<string, unknown>) : {};
  }

  private yamlField(r: Resource, key: string): string {
    const v = this.yamlSpec(r)[key];
    return typeof v === 'string' ? v : '';
  }

  // -- transport ----------------------------------------------------------------------------

  private spec(rpc: string, node: string | undefined, idempotent: boolean, timeoutMs?: number, service = 'MachineService'): CallSpec {
    return { method: `${service}.${rpc}`, node, idempotent, timeoutMs: timeoutMs ?? this.opts.callTimeoutMs };
  }

  private single<T extends { metadata?: { error: string; hostname: string } | undefined }>(
    messages: T[],
    method: string,
    node: string,
  ): T {
    const first = messages[0];
    if (!first) {
      throw new TalosApiError({ kind: TalosErrorKind.Unknown, message: `Talos ${method} on node ${node}: empty response`, method, node });
    }
    if (first.metadata?.error) {
      throw new TalosApiError({ kind: TalosErrorKind.OperationFailed, message: `Talos ${method} on node ${node}: ${first.metadata.error}`, method, node });
    }
    return first;
  }

  private checkUsable(spec: CallSpec): void {
    if (this.closed) throw new Error('TalosClient used after close()');
    const c = this.set.credentials;
    if (c.notAfter.getTime() <= this.opts.now().getTime()) {
      throw new TalosApiError({
        kind: TalosErrorKind.BadCredentials,
        message:
          `client certificate (tls.crt) for Talos endpoint ${this.set.endpoints.join(', ')} expired at ` +
          `${c.notAfter.toISOString()}; issue a new talosconfig (Talos client certificates last 1 year by default)`,
        method: spec.method,
        node: spec.node,
        endpoint: this.set.endpoints.join(', '),
      });
    }
  }

  private metadata(node: string | undefined): grpc.Metadata {
    const md = new grpc.Metadata();
    if (node !== undefined) md.set('node', node);
    return md;
  }

  private toError(err: unknown, spec: CallSpec, endpoint: string): TalosApiError {
    if (err instanceof TalosApiError) return err;
    if (!isServiceError(err)) {
      return new TalosApiError({ kind: TalosErrorKind.Unknown, message: String(err), method: spec.method, node: spec.node, endpoint, cause: err });
    }
    const details = err.details || err.message;
    const { kind, transient } = classifyGrpcError(err.code, details);
    const nodePart = spec.node !== undefined ? ` for node ${spec.node}` : '';
    let message: string;
    switch (kind) {
      case TalosErrorKind.TlsRejected:
        message =
          `TLS handshake with Talos endpoint ${endpoint} failed (${spec.method}${nodePart}): ${details} — ` +
          `check that ca.crt is the cluster's OS CA and tls.crt/tls.key are a valid client certificate it issued`;
        break;
      case TalosErrorKind.PermissionDenied:
        message =
          `Talos endpoint ${endpoint} refused ${spec.method}${nodePart}: ${details} ` +
          `(client certificate roles: ${this.set.credentials.roles.join(', ') || 'none'}; upgrades need os:admin)`;
        break;
      case TalosErrorKind.Unavailable:
        message = `Talos ${spec.method}${nodePart} via endpoint ${endpoint}: unavailable: ${details}`;
        break;
      default:
        message = `Talos ${spec.method}${nodePart} via endpoint ${endpoint}: ${grpc.status[err.code] ?? err.code}: ${details}`;
    }
    return new TalosApiError({ kind, transient, message, method: spec.method, node: spec.node, endpoint, grpcCode: err.code, cause: err });
  }

  private async withRetry<T>(spec: CallSpec, attempt: (client: grpc.Client, endpoint: string) => Promise<T>): Promise<T> {
    this.checkUsable(spec);
    const n = this.set.endpoints.length;
    const start = this.set.preferred;
    let last: TalosApiError | undefined;
    for (let i = 0; i < this.opts.maxAttempts; i++) {
      const index = (start + i) % n;
      const endpoint = this.set.endpoints[index] ?? '';
      try {
        const result = await attempt(this.set.client(index), endpoint);
        this.set.preferred = index;
        return result;
      } catch (err) {
        last = this.toError(err, spec, endpoint);
        if (last.kind === TalosErrorKind.Unavailable && /No connection established|Failed to connect/.test(last.message)) {
          const why = await diagnoseTls(endpoint, this.set.credentials);
          if (why !== undefined) {
            throw this.toError(
              Object.assign(new Error(why), { code: grpc.status.UNAVAILABLE, details: `TLS handshake rejected: ${why}`, metadata: new grpc.Metadata() }),
              spec,
              endpoint,
            );
          }
        }
        const retryable = last.transient && (spec.idempotent || last.kind !== TalosErrorKind.DeadlineExceeded);
        if (!retryable || i === this.opts.maxAttempts - 1) throw last;
        await delay(backoffDelay(this.opts.backoff, i + 1, Math.random()));
      }
    }
    throw last ?? new Error('unreachable');
  }

  private unary<Req, Res>(def: UnaryDef<Req, Res>, req: Req, spec: CallSpec): Promise<Res> {
    return this.withRetry(spec, (client) =>
      new Promise<Res>((resolve, reject) => {
        client.makeUnaryRequest(
          def.path,
          def.requestSerialize,
          def.responseDeserialize,
          req,
          this.metadata(spec.node),
          { deadline: Date.now() + spec.timeoutMs },
          (err, value) => {
            if (err) reject(err);
            else if (value === undefined) reject(new Error(`${methodName(def.path)}: no response`));
            else resolve(value);
          },
        );
      }),
    );
  }

  /** Server-streaming call; collects every message. Retried only when nothing was received yet. */
  private stream<Req, Res>(def: UnaryDef<Req, Res>, req: Req, spec: CallSpec, onMessage?: (m: Res) => void): Promise<Res[]> {
    let received = false;
    return this.withRetry(spec, (client) =>
      new Promise<Res[]>((resolve, reject) => {
        const out: Res[] = [];
        const call = client.makeServerStreamRequest(
          def.path,
          def.requestSerialize,
          def.responseDeserialize,
          req,
          this.metadata(spec.node),
          { deadline: Date.now() + spec.timeoutMs },
        );
        call.on('data', (m: Res) => {
          received = true;
          out.push(m);
          onMessage?.(m);
        });
        call.on('error', (err: Error) => {
          if (received) {
            const e = this.toError(err, spec, '(stream)');
            reject(new TalosApiError({ kind: e.kind, transient: false, message: `${e.message} (stream broke after data)`, method: spec.method, node: spec.node, grpcCode: e.grpcCode, cause: err }));
          } else reject(err);
        });
        call.on('end', () => resolve(out));
      }),
    );
  }
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

const STAGES: Record<number, string> = {
  0: 'unknown',
  1: 'booting',
  2: 'installing',
  3: 'maintenance',
  4: 'running',
  5: 'rebooting',
  6: 'shutting down',
  7: 'resetting',
  8: 'upgrading',
};

/** Builds a client from a plan's talosConfig; call close() when done (the channels are shared). */
export function createTalosClient(config: TalosConfigInput, options?: TalosClientOptions): TalosClient {
  return new TalosClient(config, options);
}
