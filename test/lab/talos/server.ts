// The gRPC side of the Talos simulator: acts as apid (routes `node` / legacy `nodes` metadata to
// simulated nodes, checks roles from the client certificate's O= entries) and implements the
// machine, lifecycle, image and COSI State services on each node.
import { setTimeout as delay } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { parseAllDocuments } from 'yaml';
import { ContainerdNamespace, type Data } from '../../../proto/gen/common/common.js';
import {
  type ImageServicePullProgress,
  type ImageServicePullRequest,
  type ImageServicePullResponse,
  ImageServicePullLayerProgress_Status,
  ImageServiceService,
} from '../../../proto/gen/machine/image.js';
import {
  type LifecycleServiceInstallRequest,
  type LifecycleServiceInstallResponse,
  type LifecycleServiceUpgradeRequest,
  type LifecycleServiceUpgradeResponse,
  LifecycleServiceService,
} from '../../../proto/gen/machine/lifecycle.js';
import {
  ApplyConfiguration,
  ApplyConfigurationRequest_Mode,
  EtcdAlarm,
  EtcdAlarmDisarm,
  EtcdForfeitLeadership,
  type EtcdMemberListRequest,
  EtcdMemberAlarm_AlarmType,
  EtcdMembers,
  EtcdStatus,
  type Event as MachineEvent,
  type EventsRequest,
  MachineServiceService,
  type ReadRequest,
  Reboot,
  RebootRequest_Mode,
  Rollback,
  type RebootRequest,
  ServiceList,
  Upgrade,
  type UpgradeRequest,
  UpgradeRequest_RebootMode,
  Version,
} from '../../../proto/gen/machine/machine.js';
import type { Resource } from '../../../proto/gen/v1alpha1/resource.js';
import {
  EventType,
  type Event as CosiEvent,
  type GetRequest,
  type ListRequest,
  type ListResponse,
  StateService,
  type WatchRequest,
  type WatchResponse,
} from '../../../proto/gen/v1alpha1/state.js';
import { imageChanges } from './machine-config.js';
import {
  containerdStore,
  type ImageRef,
  type ImageSource,
  notFoundMessage,
  parseImageRef,
  type PublishedImage,
  pulledNames,
  type StoreKey,
  type StoredImage,
} from './images.js';
import {
  type BootTarget,
  callSeq,
  extensionsOf,
  KNOWN_TYPES,
  RpcError,
  sensitiveType,
  talosNamespaces,
  typeRegistered,
  resourceDefinition,
  type SimCall,
  type SimCallMethod,
  type SimNode,
  type SimResource,
  type TalosSimTimings,
} from './node.js';
import { parseInstallerRef, talosTag, versionAtLeast } from './versions.js';
import type { EtcdCluster } from './etcd.js';
import type { CosiWrite } from './cosi-writes.js';
import { helloEvent, toMachineEvent } from './events.js';
import { CollectionLog, type LoggedEvent } from './collection-log.js';

export type Role = 'os:admin' | 'os:operator' | 'os:reader';
const RANK: Record<string, number> = { 'os:reader': 1, 'os:operator': 2, 'os:admin': 3 };

export interface Router {
  /** Node by IP or name; undefined when apid could not reach such a target. */
  lookup(target: string): SimNode | undefined;
  /** The node serving this listener (the endpoint node). */
  defaultNode: SimNode;
  timings(): TalosSimTimings;
  /** Where images are pulled from (the lab registry, or every reference resolves). */
  images(): ImageSource;
  onConfigApplied?: ((node: SimNode) => Promise<void> | void) | undefined;
  /** The etcd cluster of the control-plane nodes. */
  etcd: EtcdCluster;
}

/** One layer's pull progress; the `malformed.pullStatus` fault replaces its status with that number. */
function pullProgress(
  n: SimNode,
  layerId: string,
  status: ImageServicePullLayerProgress_Status,
): ImageServicePullProgress {
  return {
    layerId,
    progress: {
      status: n.faults.malformed?.pullStatus ?? status,
      elapsed: { seconds: 0, nanos: 1e6 },
      offset: 1024,
      total: 1024,
    },
  };
}

/** A stream that sends nothing until the caller cancels it (a hung peer): resolves on cancellation. */
function silentUntilCancelled(call: grpc.ServerWritableStream<unknown, unknown>): Promise<void> {
  if (call.cancelled) return Promise.resolve();
  return new Promise((resolve) => call.once('cancelled', () => resolve()));
}

/**
 * preserve=true skips a legacy Upgrade's etcd pre-checks from v1.12.9, v1.13.4 and v1.14.0-alpha.2
 * ("fix: etcd client leak in the (legacy) Upgrade API"); before, only force did.
 */
function preserveSkipsEtcdChecks(version: string): boolean {
  const v = talosTag(version);
  if (!v || v.major !== 1) return false;
  return (v.minor === 12 && v.patch >= 9) || (v.minor === 13 && v.patch >= 4) || versionAtLeast(version, 14, 'alpha.2');
}

/**
 * A COSI tombstone as a watch sends it: what upstream marshals for resource.NewTombstone
 * (cosi-project/runtime pkg/resource/protobuf/resource.go FromResource, Marshal): the metadata of a
 * resource that is not there (version `undefined`, phase `running`, zero times) and an empty spec.
 * The spec is present, though empty: the Go client refuses a resource without one ("spec is missing").
 */
function tombstone(namespace: string, type: string, id: string): Resource {
  const zero = new Date('0001-01-01T00:00:00Z'); // Go's zero time.Time, as timestamppb.New encodes it
  return {
    metadata: {
      namespace,
      type,
      id,
      version: 'undefined',
      owner: '',
      phase: 'running',
      created: zero,
      updated: zero,
      finalizers: [],
      labels: {},
      annotations: {},
    },
    spec: { protoSpec: Buffer.alloc(0), yamlSpec: '' },
  };
}

/**
 * Whether the containerd instance of `key` holds this content already, under another name or in
 * another namespace: containerd resolves the reference but finds every layer in its content store
 * (one per containerd instance, shared by its namespaces) and unpacks them for this namespace: no download.
 */
function contentPresent(n: SimNode, key: StoreKey, digest: string): boolean {
  const driver = key.split('/')[0] ?? '';
  return [...n.containerd].some(
    ([k, held]) => k.startsWith(`${driver}/`) && [...held.values()].some((i) => i.digest === digest),
  );
}

/**
 * Stores a pulled image in its namespace (`images`, the namespace's store as the pull found it) under
 * the names a pull leaves (pulledNames) and returns the name Pull answers.
 */
function storePulled(
  n: SimNode,
  { key, images }: { key: StoreKey; images: Map<string, StoredImage> | undefined },
  ref: ImageRef,
  image: PublishedImage,
): string {
  const { answer, names } = pulledNames(ref, image.digest, n.faults.imageVerification === true);
  let store = images;
  if (!store) n.containerd.set(key, (store = new Map<string, StoredImage>()));
  for (const name of names) store.set(name, { digest: image.digest, origin: image.origin });
  return answer;
}

/** A single resource's watch takes no bootstrap contents and no label query (server.go Watch): UNIMPLEMENTED. */
function checkWatchRequest(req: WatchRequest): void {
  if (req.id !== undefined && req.options?.bootstrapContents)
    throw rpcError(grpc.status.UNIMPLEMENTED, 'bootstrap contents is not implemented for resource watch');
  if (req.id !== undefined && (req.options?.labelQuery.length ?? 0) > 0)
    throw rpcError(grpc.status.UNIMPLEMENTED, 'label query is not implemented for resource watch');
}

/** The ERRORED event of a watch whose next events left the stream (inmem collection.go: buffer overrun). */
function overrun(req: WatchRequest, log: CollectionLog, pos: number): CosiEvent {
  return {
    resource: undefined,
    eventType: EventType.ERRORED,
    old: undefined,
    error: `buffer overrun: namespace "${req.namespace}" type "${req.type}", write pos ${log.position}, pos ${pos}`,
  };
}

function rpcError(code: grpc.status, details: string): RpcError {
  return new RpcError(code, details);
}

function toServiceError(err: unknown): Partial<grpc.ServiceError> {
  if (err instanceof RpcError) return { code: err.code, details: err.details };
  return { code: grpc.status.INTERNAL, details: (err as Error).message };
}

interface CallLike {
  metadata: grpc.Metadata;
  getAuthContext(): { sslPeerCertificate?: { subject?: Record<string, string | string[] | undefined> } };
  getPeer(): string;
}

/** How a recorded method is recorded: its name, the request's key fields, and (if not all) which requests. */
interface Recorded<Req> {
  method: SimCallMethod;
  fields: (req: Req) => Pick<SimCall, 'image' | 'rebootMode' | 'applyMode' | 'dryRun' | 'resource'>;
  when?: (req: Req) => boolean;
}

const MACHINE_CONFIGS = 'MachineConfigs.config.talos.dev';
const RESOURCE_DEFINITIONS = 'ResourceDefinitions.meta.cosi.dev';

/** COSI reads are recorded for the machine config only: the read that starts every config patch. */
function configRead<Req extends { namespace: string; type: string; id?: string | undefined }>(
  method: SimCallMethod,
): Recorded<Req> {
  return {
    method,
    when: (req) => req.type === MACHINE_CONFIGS,
    fields: (req) => ({ resource: `${req.namespace}/${req.type}/${req.id ?? ''}` }),
  };
}

function firstValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

function startRecord<Req>(
  node: SimNode,
  call: CallLike,
  spec: Recorded<Req> | undefined,
  req: Req,
): SimCall | undefined {
  if (!spec || (spec.when && !spec.when(req))) return undefined;
  const rec: SimCall = {
    seq: callSeq(),
    method: spec.method,
    node: node.name,
    at: Date.now(),
    endedAt: undefined,
    peer: call.getPeer(),
    identity: firstValue(call.getAuthContext().sslPeerCertificate?.subject?.CN),
    phase: node.phase,
    ...spec.fields(req),
    result: 'pending',
  };
  node.calls.push(rec);
  return rec;
}

function finishRecord(rec: SimCall | undefined, err?: unknown): void {
  if (!rec) return;
  rec.endedAt = Date.now();
  if (err === undefined) {
    rec.result = 'ok';
    return;
  }
  const e = err instanceof RpcError ? err : rpcError(grpc.status.INTERNAL, (err as Error).message);
  rec.result = { code: e.code, codeName: grpc.status[e.code] ?? String(e.code), message: e.details };
}

function rolesOf(call: CallLike): string[] {
  const o = call.getAuthContext().sslPeerCertificate?.subject?.O;
  if (o === undefined) return [];
  return Array.isArray(o) ? o : [o];
}

function metadataValues(md: grpc.Metadata, key: string): string[] {
  return md
    .get(key)
    .flatMap((v) => (typeof v === 'string' ? v : v.toString('utf8')).split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

/**
 * apid proxies to a target given without a port (it dials <target>:50000): one with a port is refused
 * before any call, INTERNAL `invalid target "…"` (internal/app/apid/pkg/backend/apid.go NewAPID, with
 * siderolabs/net AddressContainsPort: whatever net.SplitHostPort takes, unless its host has colons and
 * is not an IP; internal/app/apid/pkg/director/director.go wraps it as codes.Internal).
 */
function assertTarget(target: string): void {
  const m = /^\[([^\]]*)\]:[^:]*$/.exec(target) ?? /^([^:[\]]*):[^:]*$/.exec(target);
  const host = m?.[1];
  if (host !== undefined && (!host.includes(':') || isIP(host) !== 0))
    throw rpcError(grpc.status.INTERNAL, `invalid target "${target}"`);
}

function unknownTarget(target: string): RpcError {
  const dial = /^\d+\.\d+\.\d+\.\d+$/.test(target)
    ? `dial tcp ${target}:50000: connect: no route to host`
    : `dial tcp: lookup ${target}: no such host`;
  return rpcError(grpc.status.UNAVAILABLE, `connection error: desc = "transport: Error while dialing: ${dial}"`);
}

type ErrMeta = { hostname: string; error: string; status: { code: number; message: string; details: [] } };
const errMeta = (hostname: string, e: RpcError): ErrMeta => ({
  hostname,
  error: e.details,
  status: { code: e.code, message: e.details, details: [] },
});

/** The config an ApplyConfiguration sends, once it parses and has a v1alpha1 document (INVALID_ARGUMENT otherwise). */
function validConfig(data: Uint8Array): string {
  const text = Buffer.from(data).toString('utf8');
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs) || docs.some((d) => d.errors.length > 0)) {
    throw rpcError(grpc.status.INVALID_ARGUMENT, 'failed to parse config: invalid YAML');
  }
  const v1 = docs
    .map((d) => d.toJS() as { version?: string; machine?: unknown } | null)
    .find((d) => d?.version === 'v1alpha1');
  // v1alpha1_server.go ApplyConfiguration: a config without the v1alpha1 document is refused before validation.
  if (!v1)
    throw rpcError(
      grpc.status.INVALID_ARGUMENT,
      "the applied machine configuration doesn't contain v1alpha1 config, did you mean to patch the machine config instead?",
    );
  if (typeof v1.machine !== 'object') {
    throw rpcError(grpc.status.INVALID_ARGUMENT, 'failed to validate config: v1alpha1 config document is required');
  }
  return text;
}

/**
 * The mode an ApplyConfiguration runs in: AUTO applies without a reboot (every config the simulator
 * applies can be); REBOOT is refused UNIMPLEMENTED from v1.14 (outside maintenance mode).
 */
function applyMode(n: SimNode, mode: ApplyConfigurationRequest_Mode): ApplyConfigurationRequest_Mode {
  if (mode === ApplyConfigurationRequest_Mode.REBOOT && versionAtLeast(n.version, 14, 'alpha.0')) {
    throw rpcError(
      grpc.status.UNIMPLEMENTED,
      'apply configuration in REBOOT mode is not supported, use AUTO or NO_REBOOT',
    );
  }
  return mode === ApplyConfigurationRequest_Mode.AUTO ? ApplyConfigurationRequest_Mode.NO_REBOOT : mode;
}

export class TalosApi {
  /** The event stream of each watched kind per node (see collectionLog). */
  private readonly collectionLogs = new Map<string, CollectionLog>();

  constructor(private readonly router: Router) {}

  /** The single node a call is for (apid one-to-one proxying); routing errors are apid's. */
  private route(call: CallLike, path: string, allowNodes: boolean): SimNode {
    const node = metadataValues(call.metadata, 'node');
    const nodes = metadataValues(call.metadata, 'nodes');
    if (node.length > 1) throw rpcError(grpc.status.INVALID_ARGUMENT, 'node metadata must be single-valued');
    if (nodes.length > 0 && node.length === 0 && !allowNodes) {
      throw rpcError(grpc.status.INVALID_ARGUMENT, `one-2-many proxying is not supported for method ${path}`);
    }
    const name = node[0] ?? nodes[0];
    if (name !== undefined) assertTarget(name);
    const sim = name === undefined ? this.router.defaultNode : this.router.lookup(name);
    if (!sim) throw unknownTarget(name ?? '');
    return sim;
  }

  private async enter(sim: SimNode, call: CallLike, minRole: Role, path: string): Promise<SimNode> {
    sim.assertReachable();
    if (sim.faults.slowResponseMs) await delay(sim.faults.slowResponseMs);
    if (sim.answerGate) await sim.answerGate(path);
    sim.assertReachable();
    const rank = Math.max(0, ...rolesOf(call).map((r) => RANK[r] ?? 0));
    if (sim.faults.tlsRejected === 'role' || rank < (RANK[minRole] ?? 99)) {
      throw rpcError(grpc.status.PERMISSION_DENIED, 'not authorized');
    }
    return sim;
  }

  /** MachineService unary: `node` (one-to-one) or legacy `nodes` (one-to-many, metadata per entry). */
  private unary<Req, M extends { metadata?: unknown }>(
    { path, minRole }: { path: string; minRole: Role },
    errorEntry: (hostname: string, err: RpcError) => M,
    impl: (
      node: SimNode,
      req: Req,
      rec: SimCall | undefined,
      cancelled: Promise<void>,
    ) => Promise<{ messages: M[] }> | { messages: M[] },
    recorded?: Recorded<Req>,
  ): grpc.handleUnaryCall<Req, { messages: M[] }> {
    return (call, callback) => {
      /** Resolves when the caller gives up (its deadline, a cancel): a hung handler ends then. */
      const cancelled = new Promise<void>((resolve) => call.once('cancelled', () => resolve()));
      /** One node's part of the call, recorded with what that node answered. */
      const onNode = async (sim: SimNode): Promise<{ messages: M[] }> => {
        const rec = startRecord(sim, call, recorded, call.request);
        try {
          const res = await impl(await this.enter(sim, call, minRole, path), call.request, rec, cancelled);
          finishRecord(rec);
          return res;
        } catch (err) {
          finishRecord(rec, err);
          throw err;
        }
      };
      const run = async (): Promise<{ messages: M[] }> => {
        const nodes = metadataValues(call.metadata, 'nodes');
        if (nodes.length > 0 && metadataValues(call.metadata, 'node').length === 0) {
          nodes.forEach(assertTarget); // apid builds every backend before it calls any (director.go aggregateDirector)
          const out: M[] = [];
          for (const target of nodes) {
            try {
              const sim = this.router.lookup(target);
              if (!sim) throw unknownTarget(target);
              const res = await onNode(sim);
              for (const m of res.messages)
                out.push({ ...m, metadata: { hostname: target, error: '', status: undefined } });
            } catch (err) {
              out.push(
                errorEntry(
                  target,
                  err instanceof RpcError ? err : rpcError(grpc.status.INTERNAL, (err as Error).message),
                ),
              );
            }
          }
          return { messages: out };
        }
        return onNode(this.route(call, path, true));
      };
      run().then(
        (res) => callback(null, res),
        (err: unknown) => callback(toServiceError(err), null),
      );
    };
  }

  private serverStream<Req, Res>(
    path: string,
    minRole: Role,
    impl: (
      node: SimNode,
      req: Req,
      call: grpc.ServerWritableStream<Req, Res>,
      rec: SimCall | undefined,
    ) => Promise<void>,
    recorded?: Recorded<Req>,
  ): grpc.handleServerStreamingCall<Req, Res> {
    return (call) => {
      let rec: SimCall | undefined;
      const run = async (): Promise<void> => {
        const routed = this.route(call, path, false);
        rec = startRecord(routed, call, recorded, call.request);
        const node = await this.enter(routed, call, minRole, path);
        if (recorded !== undefined && node.faults.silentStream === recorded.method) return silentUntilCancelled(call);
        await impl(node, call.request, call, rec);
      };
      run().then(
        () => {
          finishRecord(rec, call.cancelled ? rpcError(grpc.status.CANCELLED, 'cancelled by the client') : undefined);
          call.end();
        },
        (err: unknown) => {
          finishRecord(rec, call.cancelled ? rpcError(grpc.status.CANCELLED, 'cancelled by the client') : err);
          call.emit('error', toServiceError(err));
        },
      );
    };
  }

  // -- MachineService -------------------------------------------------------------------------

  machineService(): grpc.UntypedServiceImplementation {
    return {
      version: this.unary(
        { path: MachineServiceService.version.path, minRole: 'os:reader' },
        (h, e) => Version.fromPartial({ metadata: errMeta(h, e) }),
        (n) => ({
          messages: [
            Version.fromPartial({
              version: {
                tag: n.faults.malformed?.versionWithoutTag ? '' : n.version,
                sha: 'a1b2c3d4',
                built: '',
                goVersion: 'go1.24.6',
                os: 'linux',
                arch: n.arch,
              },
              platform: { name: n.platform, mode: 'metal' },
              features: { rbac: true },
            }),
          ],
        }),
      ),
      upgrade: this.unary(
        { path: MachineServiceService.upgrade.path, minRole: 'os:admin' },
        (h, e) => Upgrade.fromPartial({ metadata: errMeta(h, e) }),
        (n, req: UpgradeRequest, rec, cancelled) => this.legacyUpgrade(n, req, rec, cancelled),
        {
          method: 'MachineService.Upgrade',
          fields: (req) => ({
            image: req.image,
            rebootMode: UpgradeRequest_RebootMode[req.rebootMode] ?? String(req.rebootMode),
          }),
        },
      ),
      reboot: this.unary(
        { path: MachineServiceService.reboot.path, minRole: 'os:operator' },
        (h, e) => Reboot.fromPartial({ metadata: errMeta(h, e) }),
        (n, req: RebootRequest, rec) => this.reboot(n, req, rec),
        {
          method: 'MachineService.Reboot',
          fields: (req) => ({ rebootMode: RebootRequest_Mode[req.mode] ?? String(req.mode) }),
        },
      ),
      rollback: this.unary(
        { path: MachineServiceService.rollback.path, minRole: 'os:admin' },
        (h, e) => Rollback.fromPartial({ metadata: errMeta(h, e) }),
        (n, _req: unknown, rec, cancelled) => this.rollback(n, rec, cancelled),
        { method: 'MachineService.Rollback', fields: () => ({}) },
      ),
      applyConfiguration: this.unary(
        { path: MachineServiceService.applyConfiguration.path, minRole: 'os:admin' },
        (h, e) => ApplyConfiguration.fromPartial({ metadata: errMeta(h, e) }),
        (n, req: { data: Uint8Array; mode: ApplyConfigurationRequest_Mode; dryRun: boolean }, rec) =>
          this.applyConfiguration(n, req, rec),
        {
          method: 'MachineService.ApplyConfiguration',
          fields: (req) => ({
            applyMode: ApplyConfigurationRequest_Mode[req.mode] ?? String(req.mode),
            dryRun: req.dryRun,
          }),
        },
      ),
      etcdMemberList: this.unary(
        { path: MachineServiceService.etcdMemberList.path, minRole: 'os:reader' },
        (h, e) => EtcdMembers.fromPartial({ metadata: errMeta(h, e) }),
        (n, req: EtcdMemberListRequest, _rec, cancelled) => this.etcdMemberList(n, req, cancelled),
      ),
      etcdStatus: this.unary(
        { path: MachineServiceService.etcdStatus.path, minRole: 'os:reader' },
        (h, e) => EtcdStatus.fromPartial({ metadata: errMeta(h, e) }),
        (n, _req: unknown, _rec, cancelled) => this.etcdStatus(n, cancelled),
      ),
      etcdAlarmList: this.unary(
        { path: MachineServiceService.etcdAlarmList.path, minRole: 'os:reader' },
        (h, e) => EtcdAlarm.fromPartial({ metadata: errMeta(h, e) }),
        async (n, _req: unknown, _rec, cancelled) => ({
          messages: [
            EtcdAlarm.fromPartial({ memberAlarms: await this.etcdAlarms(n, 'etcd alarm list', false, cancelled) }),
          ],
        }),
      ),
      etcdAlarmDisarm: this.unary(
        { path: MachineServiceService.etcdAlarmDisarm.path, minRole: 'os:operator' },
        (h, e) => EtcdAlarmDisarm.fromPartial({ metadata: errMeta(h, e) }),
        async (n, _req: unknown, rec, cancelled) => {
          const memberAlarms = await this.etcdAlarms(n, 'etcd alarm disarm', true, cancelled);
          if (rec) rec.effect = `disarmed ${memberAlarms.length} alarm(s)`;
          return { messages: [EtcdAlarmDisarm.fromPartial({ memberAlarms })] };
        },
        { method: 'MachineService.EtcdAlarmDisarm', fields: () => ({}) },
      ),
      etcdForfeitLeadership: this.unary(
        { path: MachineServiceService.etcdForfeitLeadership.path, minRole: 'os:admin' },
        (h, e) => EtcdForfeitLeadership.fromPartial({ metadata: errMeta(h, e) }),
        (n, _req: unknown, rec, cancelled) => this.etcdForfeit(n, rec, cancelled),
        { method: 'MachineService.EtcdForfeitLeadership', fields: () => ({}) },
      ),
      serviceList: this.unary(
        { path: MachineServiceService.serviceList.path, minRole: 'os:reader' },
        (h, e) => ServiceList.fromPartial({ metadata: errMeta(h, e) }),
        (n) => ({ messages: [ServiceList.fromPartial({ services: n.machined.serviceInfos() })] }),
      ),
      events: this.serverStream<EventsRequest, MachineEvent>(
        MachineServiceService.events.path,
        'os:reader',
        (n, req, call) => this.events(n, req, call),
      ),
      read: this.serverStream<ReadRequest, Data>(MachineServiceService.read.path, 'os:admin', (n, req, call) => {
        if (req.path !== '/proc/sys/kernel/random/boot_id') {
          throw rpcError(grpc.status.NOT_FOUND, `stat ${req.path}: no such file or directory`);
        }
        call.write({ metadata: undefined, bytes: Buffer.from(`${n.bootId}\n`) });
        return Promise.resolve();
      }),
    };
  }

  /**
   * What an installer image installs, read from the tagged reference it was published as: the Talos
   * version (its tag) and, for an Image Factory installer, the schematic and its extensions; a plain
   * installer leaves no schematic and no extensions. Undefined when the image is not a Talos installer.
   */
  private installerTarget(n: SimNode, origin: string | undefined): BootTarget | undefined {
    const ref = origin === undefined ? undefined : parseInstallerRef(origin);
    if (!ref) return undefined;
    const extensions =
      ref.schematic !== undefined && ref.schematic === n.schematic
        ? n.extensions.map((e) => ({ ...e }))
        : extensionsOf(ref.schematic);
    return { version: ref.version, schematic: ref.schematic, extensions };
  }

  /** The image a reference names where the node pulls from; RpcError as containerd's failures reach the caller. */
  private async resolveImage(n: SimNode, ref: ImageRef): Promise<PublishedImage> {
    if (
      n.faults.missingImages?.includes(ref.normalized) ||
      n.faults.missingImages?.includes(ref.name + (ref.tag ? `:${ref.tag}` : ''))
    ) {
      throw rpcError(grpc.status.NOT_FOUND, `error pulling image: ${notFoundMessage(ref)}`);
    }
    let found: PublishedImage | undefined;
    try {
      found = await this.router.images().resolve(ref);
    } catch (err) {
      throw rpcError(
        grpc.status.UNKNOWN,
        `failed to pull image "${ref.normalized}": failed to resolve reference "${ref.normalized}": ${(err as Error).message}`,
      );
    }
    if (!found) throw rpcError(grpc.status.NOT_FOUND, `error pulling image: ${notFoundMessage(ref)}`);
    return found;
  }

  /**
   * The installer LifecycleService.Upgrade runs: the image containerd has under exactly this name,
   * in the instance and namespace the request names (internal/app/lifecycle/container.go), else INTERNAL.
   */
  private storedInstaller(
    n: SimNode,
    image: string,
    containerd: LifecycleServiceUpgradeRequest['containerd'],
  ): BootTarget {
    if (!image) throw rpcError(grpc.status.INVALID_ARGUMENT, 'installer image name is required');
    const store = containerdStore(containerd);
    if ('invalid' in store)
      throw rpcError(grpc.status.INTERNAL, `upgrade failed: rpc error: code = InvalidArgument desc = ${store.invalid}`);
    const stored = n.containerd.get(store.key)?.get(image);
    if (!stored)
      throw rpcError(
        grpc.status.INTERNAL,
        `upgrade failed: installer image "${image}" not found in containerd store: image "${image}": not found`,
      );
    const target = this.installerTarget(n, stored.origin);
    if (!target)
      throw rpcError(grpc.status.INTERNAL, `upgrade failed: image "${image}" is not a Talos installer image`);
    return target;
  }

  /**
   * Legacy Upgrade validates the installer before the ack (install.PullAndValidateInstallerImage in
   * v1alpha1_server.go Upgrade): a reference that does not parse, is not published, or is no Talos
   * installer fails UNKNOWN "error validating installer image".
   */
  private async legacyUpgrade(
    n: SimNode,
    req: UpgradeRequest,
    rec: SimCall | undefined,
    cancelled: Promise<void>,
  ): Promise<{ messages: Upgrade[] }> {
    if (n.faults.upgradeError) throw rpcError(n.faults.upgradeError.code, n.faults.upgradeError.message);
    const target = await this.validatedInstaller(n, req.image);
    // Control plane: the etcd pre-checks, before the ack (see EtcdCluster.upgradeCheck). Nothing else
    // refuses a second Upgrade: the sequence it starts is refused inside (SimNode.requestLegacyUpgrade).
    if (this.etcdChecksUpgrade(n, req)) {
      const refused = await this.router.etcd.upgradeCheck(n, cancelled);
      n.assertReachable();
      if (refused) throw refused;
    }
    const actorId = randomUUID();
    const effect = n.requestLegacyUpgrade(target, actorId);
    if (rec) rec.effect = effect;
    return { messages: [Upgrade.fromPartial({ ack: 'Upgrade request received', actorId })] };
  }

  /** The installer a legacy Upgrade names, validated; UNKNOWN "error validating installer image" otherwise. */
  private async validatedInstaller(n: SimNode, image: string): Promise<BootTarget> {
    const invalid = (why: string): RpcError =>
      rpcError(grpc.status.UNKNOWN, `error validating installer image "${image}": ${why}`);
    const ref = parseImageRef(image);
    if (!ref) throw invalid(`failed to parse image reference "${image}": invalid reference format`);
    let published: PublishedImage;
    try {
      published = await this.resolveImage(n, ref);
    } catch (err) {
      const message =
        err instanceof RpcError ? err.details.replace(/^error pulling image: /, '') : (err as Error).message;
      throw invalid(message);
    }
    const target = this.installerTarget(n, published.origin ?? (ref.tag ? ref.normalized : undefined));
    if (!target) throw invalid(`image "${ref.normalized}" is not a Talos installer image`);
    return target;
  }

  /** Whether a legacy Upgrade runs the etcd pre-checks: on a control-plane member, unless force (or preserve where it skips them). */
  private etcdChecksUpgrade(n: SimNode, req: UpgradeRequest): boolean {
    return (
      n.role === 'controlplane' &&
      this.router.etcd.isMember(n) &&
      !req.force &&
      !(req.preserve && preserveSkipsEtcdChecks(n.version))
    );
  }

  /**
   * MachineService.Rollback as upstream (srv.go Rollback; bootloader/grub/revert.go): the bootloader
   * flip runs before the ack, so a node with no previous entry answers UNKNOWN at once; then the
   * reboot sequence runs in the background with takeover, into the previous entry. Under the
   * rollbackHangs fault it waits first, and a caller that gives up meanwhile changed nothing.
   */
  private async rollback(
    n: SimNode,
    rec: SimCall | undefined,
    cancelled: Promise<void>,
  ): Promise<{ messages: Rollback[] }> {
    if (!(await n.untilFaults(() => n.faults.rollbackHangs !== true, cancelled)))
      throw rpcError(grpc.status.CANCELLED, 'the caller gave up before the rollback began');
    const effect = n.requestRollback();
    if (effect === undefined) throw rpcError(grpc.status.UNKNOWN, 'cannot rollback to "", label does not exist');
    if (rec) rec.effect = effect;
    return { messages: [Rollback.fromPartial({})] };
  }

  private reboot(n: SimNode, req: RebootRequest, rec: SimCall | undefined): { messages: Reboot[] } {
    if (req.mode === RebootRequest_Mode.FORCE && !versionAtLeast(n.version, 12)) {
      // FORCE does not exist before 1.12.
      throw rpcError(grpc.status.INVALID_ARGUMENT, 'unsupported reboot mode');
    }
    const actorId = randomUUID();
    // Acked in every reachable phase, as Talos does; see SimNode.requestReboot for what happens then.
    const effect = n.requestReboot(actorId);
    if (rec) rec.effect = effect;
    return { messages: [Reboot.fromPartial({ actorId })] };
  }

  private async applyConfiguration(
    n: SimNode,
    req: { data: Uint8Array; mode: ApplyConfigurationRequest_Mode; dryRun: boolean },
    rec: SimCall | undefined,
  ): Promise<{ messages: ApplyConfiguration[] }> {
    if (n.applying)
      throw rpcError(grpc.status.FAILED_PRECONDITION, 'another apply configuration is already in progress');
    const text = validConfig(req.data);
    if (rec) rec.imageChanges = imageChanges(n.config, text);
    if (n.faults.applyConfigError) throw rpcError(n.faults.applyConfigError.code, n.faults.applyConfigError.message);

    const mode = applyMode(n, req.mode);
    const changed = text !== n.config;
    if (req.dryRun) {
      if (rec) rec.effect = 'dry run';
      return {
        messages: [
          ApplyConfiguration.fromPartial({
            mode,
            modeDetails: `Dry run summary:\nApplied configuration without a reboot (skipped in dry-run).\nConfig diff:\n\n${changed ? '(changed)' : 'No changes.'}`,
          }),
        ],
      };
    }
    n.applying = true;
    if (rec) rec.effect = changed ? 'config applied (changed)' : 'config applied (unchanged)';
    try {
      n.applyConfig(text);
      await this.router.onConfigApplied?.(n);
    } finally {
      n.applying = false;
    }
    return {
      messages: [
        ApplyConfiguration.fromPartial({ mode, modeDetails: 'Applied configuration without a reboot', warnings: [] }),
      ],
    };
  }

  /**
   * MachineService.Events (v1alpha1_server.go Events): a hello event first (sendEmptyEvent), then the
   * tail the request asks for and every new event of this boot (EventLog.watch), until the caller
   * cancels; the node going down breaks the stream (the caller sees UNAVAILABLE and reconnects, as
   * talosctl's action tracker does).
   */
  private events(
    n: SimNode,
    req: EventsRequest,
    call: grpc.ServerWritableStream<EventsRequest, MachineEvent>,
  ): Promise<void> {
    call.write(helloEvent(req.withActorId));
    const stop = n.machined.log.watch(req, (e) => call.write(toMachineEvent(e)));
    return new Promise<void>((resolve, reject) => {
      const onChange = (): void => {
        try {
          n.assertReachable();
        } catch (err) {
          cleanup();
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      };
      const cleanup = (): void => {
        stop();
        n.events.off('change', onChange);
      };
      n.events.on('change', onChange);
      call.on('cancelled', () => {
        cleanup();
        resolve();
      });
    });
  }

  // -- etcd (control-plane nodes) ------------------------------------------------------------
  //
  // Upstream: v1alpha1_server.go Etcd* handlers; the control-plane gate (machinehelper.go
  // CheckControlplane) answers UNIMPLEMENTED on workers; the etcd client dials without blocking and
  // waits for ready, so a call to a member that is down or still starting hangs until the caller's
  // deadline (the caller then sees DEADLINE_EXCEEDED). Errors from etcd reach the caller as UNKNOWN.

  private controlPlaneOnly(n: SimNode, api: string): void {
    if (n.role !== 'controlplane' || !this.router.etcd.isMember(n)) {
      throw rpcError(grpc.status.UNIMPLEMENTED, `${api} is only available on control plane nodes`);
    }
  }

  /** Waits until the local member answers (or `ok` holds); the caller giving up first ends the call (it sees its own deadline). */
  private async localMember(
    n: SimNode,
    cancelled: Promise<void>,
    ok = (): boolean => this.router.etcd.answers(n),
  ): Promise<void> {
    if (!(await this.router.etcd.waitUntil(ok, cancelled)))
      throw rpcError(grpc.status.DEADLINE_EXCEEDED, 'context deadline exceeded');
  }

  private async etcdMemberList(
    n: SimNode,
    req: EtcdMemberListRequest,
    cancelled: Promise<void>,
  ): Promise<{ messages: EtcdMembers[] }> {
    this.controlPlaneOnly(n, 'member list');
    const etcd = this.router.etcd;
    // query_local: this member, WithRequireLeader; otherwise any control-plane endpoint (answers while a quorum does).
    if (req.queryLocal) {
      await this.localMember(n, cancelled);
      if (n.faults.etcd?.unhealthy || !etcd.hasQuorum()) throw rpcError(grpc.status.UNKNOWN, 'etcdserver: no leader');
    } else if (!etcd.hasQuorum()) {
      throw rpcError(grpc.status.UNKNOWN, 'etcdserver: no leader');
    }
    const members = etcd.memberList(n);
    return {
      messages: [
        EtcdMembers.fromPartial({
          legacyMembers: members.map((m) => m.name),
          members: members.map((m) => ({
            id: m.id,
            hostname: m.name,
            peerUrls: m.peerUrls,
            clientUrls: m.clientUrls,
            isLearner: m.isLearner,
          })),
        }),
      ],
    };
  }

  private async etcdStatus(n: SimNode, cancelled: Promise<void>): Promise<{ messages: EtcdStatus[] }> {
    this.controlPlaneOnly(n, 'etcd status');
    await this.localMember(n, cancelled);
    const s = this.router.etcd.status(n);
    if (!s) throw rpcError(grpc.status.UNIMPLEMENTED, 'etcd status is only available on control plane nodes');
    return { messages: [EtcdStatus.fromPartial({ memberStatus: s })] };
  }

  /** AlarmList / AlarmDisarm: cluster-wide alarms, through the local member (a raft request: no quorum, no answer in etcd's request timeout). */
  private async etcdAlarms(
    n: SimNode,
    api: string,
    disarm: boolean,
    cancelled: Promise<void>,
  ): Promise<{ memberId: string; alarm: EtcdMemberAlarm_AlarmType }[]> {
    this.controlPlaneOnly(n, api);
    await this.localMember(n, cancelled);
    const etcd = this.router.etcd;
    if (n.faults.etcd?.unhealthy || !etcd.hasQuorum())
      throw rpcError(grpc.status.UNKNOWN, 'etcdserver: request timed out');
    const alarms = disarm ? etcd.disarm() : etcd.alarms();
    return alarms.map((a) => ({ memberId: a.memberId, alarm: EtcdMemberAlarm_AlarmType[a.alarm] }));
  }

  /** ForfeitLeadership: waits for the local member to be healthy (EtcdMembers/local), then as etcd.ts forfeit(). */
  private async etcdForfeit(
    n: SimNode,
    rec: SimCall | undefined,
    cancelled: Promise<void>,
  ): Promise<{ messages: EtcdForfeitLeadership[] }> {
    this.controlPlaneOnly(n, 'etcd forfeit leadership');
    const etcd = this.router.etcd;
    try {
      await this.localMember(n, cancelled, () => etcd.answers(n) && !n.faults.etcd?.unhealthy);
    } catch (err) {
      throw rpcError(grpc.status.DEADLINE_EXCEEDED, `failed to get local etcd member ID: ${(err as Error).message}`);
    }
    if (!(await etcd.waitUntil(() => n.faults.etcd?.forfeitHangs !== true, cancelled))) {
      throw rpcError(
        grpc.status.UNKNOWN,
        'failed to forfeit leadership: etcdserver: request timed out, leader transfer took too long',
      );
    }
    let member: string;
    try {
      member = etcd.forfeit(n);
    } catch (err) {
      throw rpcError(grpc.status.UNKNOWN, (err as Error).message);
    }
    if (rec) rec.effect = member === '' ? 'not the leader' : `leadership moved to ${member}`;
    return { messages: [EtcdForfeitLeadership.fromPartial({ member })] };
  }

  // -- ImageService / LifecycleService (1.13+) -----------------------------------------------

  private requireLifecycle(n: SimNode, service: string): void {
    if (!versionAtLeast(n.version, 13, 'alpha.0'))
      throw rpcError(grpc.status.UNIMPLEMENTED, `unknown service machine.${service}`);
  }

  imageService(): grpc.UntypedServiceImplementation {
    return {
      pull: this.serverStream<ImageServicePullRequest, ImageServicePullResponse>(
        ImageServiceService.pull.path,
        'os:operator',
        async (n, req, call, rec) => {
          const { key, ref } = this.pullRequest(n, req);
          const images = n.containerd.get(key);
          if (this.skippedPull(n, { images, ref }, call, rec)) return;
          const image = await this.resolveImage(n, ref);
          const present = contentPresent(n, key, image.digest);
          await this.pullLayers(n, present, call);
          await this.endlessPull(n, call);
          if (call.cancelled) return;
          call.write({ name: storePulled(n, { key, images }, ref, image) });
          if (rec) rec.effect = present ? 'layers already present' : 'pulled';
        },
        {
          method: 'ImageService.Pull',
          fields: (req) => ({
            image: req.imageRef,
            containerdNamespace:
              ContainerdNamespace[req.containerd?.namespace ?? 0] ?? String(req.containerd?.namespace),
          }),
        },
      ),
    };
  }

  /**
   * What a Pull asks for, checked as upstream does before pulling: the service exists (1.13+), a
   * reference, a valid containerd instance (INVALID_ARGUMENT), the pullError fault, a reference that parses (UNKNOWN).
   */
  private pullRequest(n: SimNode, req: ImageServicePullRequest): { key: StoreKey; ref: ImageRef } {
    this.requireLifecycle(n, 'ImageService');
    if (!req.imageRef) throw rpcError(grpc.status.INVALID_ARGUMENT, 'image reference is required');
    const store = containerdStore(req.containerd);
    if ('invalid' in store) throw rpcError(grpc.status.INVALID_ARGUMENT, store.invalid);
    if (n.faults.pullError) throw rpcError(n.faults.pullError.code, n.faults.pullError.message);
    const ref = parseImageRef(req.imageRef);
    if (!ref)
      throw rpcError(
        grpc.status.UNKNOWN,
        `failed to parse image reference "${req.imageRef}": invalid reference format`,
      );
    return { key: store.key, ref };
  }

  /** The endlessPull fault: a stream that never ends, progress and never the image's name, until the caller cancels. */
  private async endlessPull(
    n: SimNode,
    call: { readonly cancelled: boolean; write(m: ImageServicePullResponse): unknown },
  ): Promise<void> {
    while (n.faults.endlessPull && !call.cancelled) {
      await delay(this.router.timings().pullMs / 4);
      call.write({
        pullProgress: pullProgress(n, 'sha256:4f4fb700ef54', ImageServicePullLayerProgress_Status.DOWNLOADING),
      });
    }
  }

  /**
   * The namespace already has an image by this exact name: Talos skips the pull (WithSkipIfAlreadyPulled:
   * containerd GetImage, unpacked; internal/pkg/containers/image/pull.go) and answers only the name,
   * without resolving the reference. Unless the endlessPull fault makes it pull.
   */
  private skippedPull(
    n: SimNode,
    { images, ref }: { images: Map<string, StoredImage> | undefined; ref: ImageRef },
    call: { write(m: ImageServicePullResponse): unknown },
    rec: SimCall | undefined,
  ): boolean {
    if (!images?.has(ref.normalized) || n.faults.endlessPull) return false;
    call.write({ name: ref.normalized });
    if (rec) rec.effect = 'already present';
    return true;
  }

  /**
   * Pull progress per layer (internal/pkg/containers/image/progress/pull_progress.go): downloaded and
   * extracted over pullMs, or, when the containerd's content store holds the layers already,
   * ALREADY_EXISTS (content there before the pull) and EXTRACT_COMPLETE (unpacked for this namespace) at once.
   */
  private async pullLayers(
    n: SimNode,
    present: boolean,
    call: { write(m: ImageServicePullResponse): unknown },
  ): Promise<void> {
    const layers = ['sha256:4f4fb700ef54', 'sha256:9c1b6dd6c1e6'];
    const statuses = present
      ? [ImageServicePullLayerProgress_Status.ALREADY_EXISTS, ImageServicePullLayerProgress_Status.EXTRACT_COMPLETE]
      : [ImageServicePullLayerProgress_Status.DOWNLOADING, ImageServicePullLayerProgress_Status.EXTRACT_COMPLETE];
    const step = present ? 0 : this.router.timings().pullMs / (layers.length * 2);
    for (const layer of layers) {
      for (const status of statuses) {
        if (step > 0) await delay(step);
        n.assertReachable();
        const p = pullProgress(n, layer, status);
        call.write({ pullProgress: present && p.progress ? { ...p, progress: { ...p.progress, offset: 0 } } : p });
      }
    }
  }

  lifecycleService(): grpc.UntypedServiceImplementation {
    return {
      // Every simulated node is installed: upstream takes the lock, then refuses an installed
      // machine before looking at the request (internal/app/lifecycle/lifecycle.go Install).
      install: this.serverStream<LifecycleServiceInstallRequest, LifecycleServiceInstallResponse>(
        LifecycleServiceService.install.path,
        'os:admin',
        (n) => {
          this.requireLifecycle(n, 'LifecycleService');
          if (n.installing)
            throw rpcError(grpc.status.FAILED_PRECONDITION, 'another installation/upgrade is already in progress');
          throw rpcError(grpc.status.ALREADY_EXISTS, 'machine is already installed');
        },
        { method: 'LifecycleService.Install', fields: (req) => ({ image: req.source?.imageName ?? '' }) },
      ),
      upgrade: this.serverStream<LifecycleServiceUpgradeRequest, LifecycleServiceUpgradeResponse>(
        LifecycleServiceService.upgrade.path,
        'os:admin',
        async (n, req, call, rec) => {
          this.requireLifecycle(n, 'LifecycleService');
          const image = req.source?.imageName ?? '';
          if (n.faults.upgradeError) throw rpcError(n.faults.upgradeError.code, n.faults.upgradeError.message);
          if (n.installing || n.phase !== 'running') {
            throw rpcError(grpc.status.FAILED_PRECONDITION, 'another installation/upgrade is already in progress');
          }
          const target = this.storedInstaller(n, image, req.containerd);
          n.installing = true;
          try {
            await this.install(n, { image, target }, call, rec);
          } finally {
            n.installing = false;
          }
        },
        { method: 'LifecycleService.Upgrade', fields: (req) => ({ image: req.source?.imageName ?? '' }) },
      ),
    };
  }

  /**
   * LifecycleService.Upgrade's installer run: progress lines over installMs (forever under the
   * endlessInstall fault, until the caller cancels), then the exit code (installExitCode fault); on
   * success the target is staged for the next Reboot.
   */
  private async install(
    n: SimNode,
    { image, target }: { image: string; target: BootTarget },
    call: { readonly cancelled: boolean; write(m: LifecycleServiceUpgradeResponse): unknown },
    rec: SimCall | undefined,
  ): Promise<void> {
    const lines = [
      `validating installer image ${image}`,
      'running installer',
      `writing boot assets for ${target.version}`,
    ];
    const step = this.router.timings().installMs / (lines.length + 1);
    for (const message of lines) {
      await delay(step);
      n.assertReachable();
      call.write({ progress: { message } });
    }
    // A stream that never ends: progress, never an exit code, until the caller cancels.
    while (n.faults.endlessInstall && !call.cancelled) {
      await delay(step);
      call.write({ progress: { message: `still writing boot assets for ${target.version}` } });
    }
    if (call.cancelled) return;
    await delay(step);
    const exitCode = n.faults.installExitCode ?? 0;
    if (exitCode !== 0) {
      call.write({ progress: { message: `installer failed: exit status ${exitCode}` } });
    } else {
      n.staged = target;
      call.write({ progress: { message: `upgrade to ${target.version} staged; reboot to activate` } });
    }
    call.write({ progress: { exitCode } });
    if (rec) {
      rec.exitCode = exitCode;
      rec.effect = exitCode === 0 ? `staged ${target.version}` : `installer exited ${exitCode}`;
    }
    n.changed(exitCode === 0 ? `image written ${target.version}` : `install failed ${exitCode}`);
  }

  // -- COSI State ------------------------------------------------------------------------------

  private findResources(n: SimNode, namespace: string, type: string, admin: boolean): SimResource[] {
    const ns = KNOWN_TYPES[type];
    if (ns === undefined || !typeRegistered(type, n.version))
      throw rpcError(grpc.status.PERMISSION_DENIED, `resource type "${type}" is not supported`);
    // The access policy checks the type's sensitivity before the namespace (internal/app/resources/access.go).
    if (!admin && sensitiveType(type, n.version)) throw rpcError(grpc.status.PERMISSION_DENIED, 'not authorized');
    if (!talosNamespaces(n.version).has(namespace))
      throw rpcError(grpc.status.PERMISSION_DENIED, `namespace "${namespace}" is not supported`);
    // Another namespace the node has holds no such resource.
    if (ns !== namespace) return [];
    if (type === MACHINE_CONFIGS && n.faults.configReadError)
      throw rpcError(n.faults.configReadError.code, n.faults.configReadError.message);
    if (type === RESOURCE_DEFINITIONS)
      return Object.keys(KNOWN_TYPES)
        .filter((t) => typeRegistered(t, n.version))
        .map((t) => resourceDefinition(t, n.version));
    return n.resources().filter((r) => r.type === type && r.namespace === namespace);
  }

  private encodeResource(n: SimNode, r: SimResource): Resource {
    const rec = n.track(r);
    return {
      metadata: {
        namespace: r.namespace,
        type: r.type,
        id: r.id,
        version: String(rec.version),
        owner: r.owner,
        phase: 'running',
        created: rec.created,
        updated: rec.updated,
        finalizers: [],
        labels: {},
        annotations: r.annotations,
      },
      spec: { protoSpec: Buffer.from(r.proto), yamlSpec: r.yaml },
    };
  }

  private isAdmin(call: CallLike): boolean {
    return rolesOf(call).includes('os:admin');
  }

  stateService(): grpc.UntypedServiceImplementation {
    const getRecorded = configRead<GetRequest>('State.Get');
    const get: grpc.handleUnaryCall<GetRequest, { resource: Resource | undefined }> = (call, callback) => {
      let rec: SimCall | undefined;
      const run = async (): Promise<{ resource: Resource | undefined }> => {
        const routed = this.route(call, StateService.get.path, false);
        rec = startRecord(routed, call, getRecorded, call.request);
        const n = await this.enter(routed, call, 'os:reader', StateService.get.path);
        const { namespace, type, id } = call.request;
        const found = this.findResources(n, namespace, type, this.isAdmin(call)).find((r) => r.id === id);
        if (!found)
          throw rpcError(grpc.status.NOT_FOUND, `resource ${type}(${namespace}/${id}@undefined) doesn't exist`);
        return { resource: this.encodeResource(n, found) };
      };
      run().then(
        (r) => {
          finishRecord(rec);
          callback(null, r);
        },
        (err: unknown) => {
          finishRecord(rec, err);
          callback(toServiceError(err), null);
        },
      );
    };
    return {
      get,
      create: this.cosiWrite(),
      update: this.cosiWrite(),
      destroy: this.cosiWrite(),
      list: this.serverStream<ListRequest, ListResponse>(
        StateService.list.path,
        'os:reader',
        (n, req, call) => {
          for (const r of this.findResources(n, req.namespace, req.type, this.isAdmin(call)))
            call.write({ resource: this.encodeResource(n, r) });
          return Promise.resolve();
        },
        configRead('State.List'),
      ),
      watch: this.serverStream<WatchRequest, WatchResponse>(
        StateService.watch.path,
        'os:reader',
        (n, req, call) => this.watch(n, req, call),
        configRead('State.Watch'),
      ),
    };
  }

  /**
   * COSI Create, Update, Destroy: os:admin only (the method roles, internal/app/machined/pkg/system/services/machined.go);
   * a request whose resource does not unmarshal fails there (UNKNOWN); every other write is refused by
   * the access policy before anything else, PermissionDenied "write access is not allowed"
   * (internal/app/resources/access.go AccessPolicy).
   */
  private cosiWrite(): grpc.handleUnaryCall<CosiWrite, Record<string, never>> {
    return (call, callback) => {
      const run = async (): Promise<never> => {
        const path = call.getPath();
        await this.enter(this.route(call, path, false), call, 'os:admin', path);
        if (call.request.unreadable) throw rpcError(grpc.status.UNKNOWN, call.request.unreadable);
        throw rpcError(grpc.status.PERMISSION_DENIED, 'write access is not allowed');
      };
      run().catch((err: unknown) => callback(toServiceError(err), null));
    };
  }

  private watch(
    n: SimNode,
    req: WatchRequest,
    call: grpc.ServerWritableStream<WatchRequest, WatchResponse>,
  ): Promise<void> {
    checkWatchRequest(req);
    this.findResources(n, req.namespace, req.type, this.isAdmin(call)); // the access policy, as for Get and List
    const log = this.collectionLog(n, req.namespace, req.type);
    const bookmark = req.options?.startFromBookmark;
    let pos = bookmark === undefined ? log.position : log.resumeAfter(bookmark);
    if (pos === undefined) throw rpcError(grpc.status.UNKNOWN, 'invalid watch bookmark');
    call.write({ event: [] }); // the server first sends one empty WatchResponse
    const initial = bookmark === undefined ? this.initialWatchEvents(n, req, log) : [];
    if (initial.length > 0) call.write({ event: initial });
    return new Promise<void>((resolve, reject) => {
      const onChange = (): void => {
        try {
          n.assertReachable();
        } catch (err) {
          cleanup();
          reject(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        this.refreshLog(n, log, req);
        const events = log.since(pos ?? log.position);
        if (events === undefined) {
          call.write({ event: [overrun(req, log, pos ?? 0)] });
          cleanup();
          resolve();
          return;
        }
        pos = log.position;
        const mine = events.filter((e) => req.id === undefined || e.id === req.id);
        if (mine.length > 0) call.write({ event: mine.map((e) => this.streamedEvent(e, log)) });
      };
      const cleanup = (): void => {
        n.events.off('change', onChange);
      };
      n.events.on('change', onChange);
      call.on('cancelled', () => {
        cleanup();
        resolve();
      });
      if (bookmark !== undefined) onChange(); // what happened after the bookmark, at once
    });
  }

  /**
   * The event stream of a kind on a node (collection-log.ts): made at the kind's first watch and kept
   * for the node's boot, so a watch that broke can start again from its last bookmark.
   */
  private collectionLog(n: SimNode, namespace: string, type: string): CollectionLog {
    const key = `${n.name}\0${namespace}\0${type}`;
    const known = this.collectionLogs.get(key);
    if (known?.bootId === n.bootId) return known;
    const log = new CollectionLog(n.bootId, this.kindSnapshot(n, namespace, type) ?? new Map());
    this.collectionLogs.set(key, log);
    const follow = (): void => {
      if (this.collectionLogs.get(key) !== log || n.bootId !== log.bootId) n.events.off('change', follow);
      else this.refreshLog(n, log, { namespace, type });
    };
    n.events.on('change', follow);
    return log;
  }

  private refreshLog(n: SimNode, log: CollectionLog, kind: { namespace: string; type: string }): void {
    if (n.bootId !== log.bootId) return;
    const now = this.kindSnapshot(n, kind.namespace, kind.type);
    if (now) log.refresh(now, (r) => this.encodeResource(n, r));
  }

  /** Every resource of a kind by ID, as the node's state holds it; undefined while it cannot be read. */
  private kindSnapshot(n: SimNode, namespace: string, type: string): Map<string, SimResource> | undefined {
    try {
      return new Map(this.findResources(n, namespace, type, true).map((r) => [r.id, r]));
    } catch {
      return undefined;
    }
  }

  /** A streamed event, with the bookmark of its position. */
  private streamedEvent(e: LoggedEvent, log: CollectionLog): CosiEvent {
    return { resource: e.resource, eventType: e.eventType, old: undefined, bookmark: log.bookmark(e.pos) };
  }

  /**
   * What a watch starts with: for one ID the resource (CREATED) or, when it does not exist (yet), its
   * tombstone (DESTROYED; inmem collection.go Watch); for a whole kind with bootstrap contents every
   * resource (CREATED), then BOOTSTRAPPED with a tombstone and the bookmark before the first event the
   * watch streams, for clients of API version 1; a kind watch asking for a bootstrap bookmark then gets
   * it on a NOOP event (inmem collection.go WatchAll); else nothing.
   */
  private initialWatchEvents(n: SimNode, req: WatchRequest, log: CollectionLog): CosiEvent[] {
    const current = this.kindSnapshot(n, req.namespace, req.type) ?? new Map<string, SimResource>();
    const created = (r: SimResource): CosiEvent => ({
      resource: this.encodeResource(n, r),
      eventType: EventType.CREATED,
      old: undefined,
    });
    if (req.id !== undefined) {
      const r = current.get(req.id);
      return [
        r
          ? created(r)
          : { resource: tombstone(req.namespace, req.type, req.id), eventType: EventType.DESTROYED, old: undefined },
      ];
    }
    const kindMark = (eventType: EventType): CosiEvent => ({
      resource: tombstone(req.namespace, req.type, ''),
      eventType,
      old: undefined,
      bookmark: log.bookmark(log.position - 1),
    });
    const initial = req.options?.bootstrapContents ? [...current.values()].map(created) : [];
    if (req.options?.bootstrapContents && req.apiVersion >= 1) initial.push(kindMark(EventType.BOOTSTRAPPED));
    if (req.options?.bootstrapBookmark) initial.push(kindMark(EventType.NOOP));
    return initial;
  }
}
