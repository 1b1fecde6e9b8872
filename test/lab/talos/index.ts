// Talos API simulator for the lab.
//
//   const sim = await startTalosSimulator({ fleet, dir, timings: TEST_TIMINGS });
//   sim.endpoint          '127.0.0.1:<port>' — apid-style endpoint for every node (gRPC + mTLS)
//   sim.talosconfigPath   talosctl-format talosconfig (context `kangal-lab`, endpoints, nodes,
//                         base64 ca/crt/key) for an os:admin client: `talosctl --talosconfig ...`
//   sim.caPem, sim.adminCert {cert, key, keyTalos}, sim.secretData (ca.crt/tls.crt/tls.key, as a
//                         plan's talosConfig Secret holds them: base64 of PEM, Ed25519 key label)
//   sim.issueClientCert(name, { roles, expired })   more client certs from the lab's OS CA
//   sim.nodeEndpoints     name → '<InternalIP>:50000' where that port was free (like a real node)
//   sim.faults.set(node, {...}) / clear(node?) / unreachable(node, ms) / powerOn(node)
//                         (malformed answers: `malformed` {versionWithoutTag, machineStage, pullStatus},
//                         streams that never end: `endlessPull`, `endlessInstall`, `silentStream`; see NodeFaults)
//   sim.node(nameOrIP)    the simulated node's live state (version, bootId, phase, history, ...)
//   sim.node(x).calls     every mutating call that reached the node (SimCall: method, at, peer,
//                         identity, image / reboot mode, result 'ok' | {code, codeName, message}, effect)
//   sim.node(x).calls     also COSI State.Get/List/Watch of MachineConfigs (`resource`), and for
//                         ApplyConfiguration `imageChanges` [{path: 'cluster.apiServer.image', from, to}]
//                         (`KubeletConfig.image` etc. for a Talos 1.14 component document)
//   opts.multiDocs        Talos 1.14 component documents in the initial configs (all nodes or per node):
//                         the node takes those components' images from the documents
//   sim.node(x).upgradesStarted / bootsIntoNewVersion / reboots   counters for "exactly once" checks
//   sim.node(x).machined  machined of the node's current boot (machined.ts): the services ServiceList answers
//                         (serviceInfos()) and the runtime events MachineService.Events streams (log; events.ts)
//   sim.node(x).history   what the node did: 'kube-apiserver restarted on <image>', 'kube-apiserver ready',
//                         'kubelet stopped', 'kubelet vX.Y.Z starting|running', 'kube-proxy image <image> published', ...
//
// A config applied with ApplyConfiguration is carried out as Talos does (timings staticPodRestartMs,
// staticPodReadyMs, kubeletRestartMs, kubeletReadyMs, kubeProxyPodMs): each changed static pod's
// mirror pod is replaced, then Ready, annotated `talos.dev/config-version` = the version of its
// COSI config resource; a new kubelet image restarts the kubelet (Services/kubelet gone, then
// running, then healthy; the Node's kubeletVersion moves, Ready=False, then Ready); a new proxy
// image in a control-plane config rolls the fleet's kube-proxy DaemonSet (FleetOptions.kubeProxy).
//   sim.callLog({ node?, method?, since? })   the calls of all nodes in arrival order
//   sim.etcd              the control-plane nodes' etcd cluster (etcd.ts): members(), leader(), setLeader(node), disarm(),
//                         record() — every interval with fewer than a quorum of healthy voting members (cause:
//                         members down or the quorumLost fault) and every leader change, for observers.
//                         MachineService.EtcdMemberList/EtcdStatus/EtcdAlarmList/EtcdAlarmDisarm/EtcdForfeitLeadership
//                         answer as upstream (workers UNIMPLEMENTED; a member down or starting: the call hangs to
//                         the caller's deadline); a reboot stops the member, which is healthy etcdHealthyMs after
//                         the boot and caught up etcdCatchUpMs later, same ID. Faults: faults.set(node, { etcd:
//                         { unhealthy, lagBy, alarm, learner, notStarted, staleMemberList } }), faults.etcdQuorumLost(on).
//   sim.setTimings(t)     change timings at run time
//   sim.useRegistry({ url, mirrorOf })   resolve images in the lab registry from now on (or opts.registry)
//   sim.wireFault(path, 'truncated')      a method's responses arrive truncated / oversized / empty
//   await sim.stop()
//
// Images (ImageService.Pull, LifecycleService.Upgrade, legacy Upgrade), see images.ts:
// - Given the lab registry (opts.registry or useRegistry), a node resolves references to the hosts
//   the registry stands in for (`mirrorOf`, default ghcr.io and factory.talos.dev, the hosts the
//   product's --registry-mirror flags send there) and to the registry's own host in that registry:
//   a tag or digest it does not hold fails as Talos answers (Pull NOT_FOUND "error pulling image: …";
//   legacy Upgrade UNKNOWN "error validating installer image …" before the ack). References to any
//   other host (registry.k8s.io, …) and Kubernetes component images (ghcr.io/siderolabs/kubelet, …) are
//   outside the lab registry and resolve as without a registry.
// - Without a registry, every well-formed reference resolves, with the digest the lab registry
//   would give the same repository and tag (the product's e2e tests that start no registry keep working).
// - `faults.missingImages` makes exact references unpublished in both modes.
// - A pull stores the image per node, containerd instance and namespace, under the digest, the
//   normalized `name:tag` and `name@sha256:…` (upstream's aliases); Pull answers the pulled name
//   (the normalized reference; `name@sha256:…` on a node with faults.imageVerification, as Talos
//   pulls by the verified digest when an ImageVerificationConfig rule matches). LifecycleService.Upgrade finds the installer only under one of those
//   names in the instance/namespace it is given, else INTERNAL "installer image … not found in containerd store".
// - A Pull of a name the namespace already holds is skipped, as Talos skips it (WithSkipIfAlreadyPulled):
//   no progress at all, only the name, nothing resolved, effect `already present`. A Pull of content
//   the containerd holds under another name or in another namespace is fast: every layer reports
//   ALREADY_EXISTS, then EXTRACT_COMPLETE, at once, no pullMs, effect `layers already present`.
//   A boot clears the system containerd's stores (driver CONTAINERD: /system is a tmpfs recreated
//   on every boot) and keeps the CRI containerd's (driver CRI, the product's `system` and `cri`
//   namespaces: /var/lib/containerd on EPHEMERAL, which reboots and upgrades keep).
// - What a node boots comes from the installer: its tag is the Talos version; a factory installer
//   sets its schematic (with that schematic's extensions), a plain `siderolabs/installer` leaves the
//   node with no schematic and no extensions (ExtensionStatuses empty), as real images do.
//
// Roles: os:reader reads non-sensitive COSI types; MachineConfigs always, KubeletSpecs and
// APIServerConfigs from Talos v1.12.9 / v1.13.4, need os:admin (PERMISSION_DENIED "not authorized",
// checked before the namespace).
//
// Nodes come from `fleet.nodes()` (FleetControl, test/lab/fleet/types.ts); a node is addressed
// by InternalIP or name with the `node` metadata key (legacy `nodes` for MachineService unary
// calls); unknown targets fail like apid's dial error (UNAVAILABLE). Reboots take the Kubernetes
// Node down and up again ONLY through `fleet.takeDown` / `fleet.bringUp`. The OS CA, server and
// client certs are Ed25519, generated for each lab in `dir`. Listens on loopback only.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { stringify } from 'yaml';
import { ImageServiceService } from '../../../proto/gen/machine/image.js';
import { LifecycleServiceService } from '../../../proto/gen/machine/lifecycle.js';
import { MachineServiceService } from '../../../proto/gen/machine/machine.js';
import { StateService } from '../../../proto/gen/v1alpha1/state.js';
import type { FleetControl, FleetNodeState } from '../fleet/types.js';
import { type CertFiles, createCA, issueCert } from '../pki.js';
import {
  type NodeFaults,
  type SimCall,
  type SimCallMethod,
  SimNode,
  TEST_TIMINGS,
  type TalosSimTimings,
} from './node.js';
import { type Router, TalosApi } from './server.js';
import { withWireFaults, type WireFault } from './wire-faults.js';
import { COSI_WRITES } from './cosi-writes.js';
import type { MultiDocKind } from './machine-config.js';
import { type ImageSource, imageSource, type LabRegistryOptions } from './images.js';
import { EtcdCluster, type EtcdMemberView, type EtcdRecord } from './etcd.js';

export { DEMO_TIMINGS, TEST_TIMINGS, type SimCall, type SimCallMethod, type TalosSimTimings } from './node.js';
export { VANILLA_SCHEMATIC } from '../fleet/describe.js';
export { MULTI_DOC_KINDS } from './machine-config.js';
export { createRecordingFleet, type RecordingFleet } from './recording-fleet.js';
export { memberIdOf } from './etcd.js';

export interface TalosSimulatorOptions {
  fleet: FleetControl;
  /** Where certificates and the talosconfig are written. */
  dir: string;
  timings?: Partial<TalosSimTimings>;
  /** Listen address of the apid-style endpoint (loopback only). */
  host?: string;
  /** 0 = any free port. */
  port?: number;
  /** Also listen on each node's InternalIP:50000 where free (default true). */
  nodeListeners?: boolean;
  clusterName?: string;
  /**
   * Talos 1.14 component documents (`KubeletConfig`, `KubeAPIServerConfig`, ...) in the nodes'
   * initial configs, each naming the component's image (the v1alpha1 fields stay, same value, and
   * are ignored): for every node, or per node name. Only for nodes on Talos v1.14 or later.
   */
  multiDocs?: readonly MultiDocKind[] | Readonly<Record<string, readonly MultiDocKind[]>>;
  /** Called after ApplyConfiguration changed a node's config (Kubernetes-side follow-ups). */
  onConfigApplied?: (node: SimNode) => Promise<void> | void;
  /** The lab registry nodes pull images from (see the header); without it every reference resolves. */
  registry?: LabRegistryOptions;
}

interface ClientCert {
  cert: string;
  /** PKCS#8 PEM labelled `PRIVATE KEY`. */
  key: string;
  /** Same key labelled `ED25519 PRIVATE KEY`, as Talos writes it. */
  keyTalos: string;
}

export interface TalosSimulator {
  endpoint: string;
  port: number;
  talosconfigPath: string;
  caPem: string;
  adminCert: ClientCert;
  /** A talosConfig Secret's data for the admin client (base64 of PEM, talosconfig style). */
  secretData: Record<'ca.crt' | 'tls.crt' | 'tls.key', string>;
  nodeEndpoints: Record<string, string>;
  issueClientCert(name: string, opts?: { roles?: string[]; expired?: boolean }): ClientCert;
  faults: {
    set(node: string, faults: Partial<NodeFaults>): void;
    clear(node?: string): void;
    /** The node's API does not answer for `ms` (calls fail UNAVAILABLE with an i/o timeout). */
    unreachable(node: string, ms: number): void;
    /** Boots a node that was left down by `neverComesBack`. */
    powerOn(node: string): void;
    /** The etcd cluster has no leader (every member sees none; member list and alarms fail `etcdserver: no leader`). */
    etcdQuorumLost(on: boolean): void;
  };
  /** The etcd cluster of the control-plane nodes (see etcd.ts); per-member faults go through `faults.set(node, { etcd })`. */
  etcd: {
    members(): EtcdMemberView[];
    /** The leading member's node name; undefined: no leader. */
    leader(): string | undefined;
    /** Test setup: move leadership to this control-plane node's member. */
    setLeader(node: string): void;
    /** What an operator's `talosctl etcd alarm disarm` does: every raised alarm goes (the faults stay). */
    disarm(): void;
    /** Every interval with fewer than a quorum of healthy voting members, and every leader change. */
    record(): EtcdRecord;
  };
  node(nameOrIP: string): SimNode;
  nodes(): SimNode[];
  /**
   * Every recorded mutating call of every node, in arrival order; filtered by node (name or IP),
   * method, and `since` (a SimCall.seq: only later calls, e.g. the last seq seen before a test step).
   */
  callLog(filter?: { node?: string; method?: SimCallMethod; since?: number }): SimCall[];
  /** The seq of the latest recorded call (0 when none): pass it as `since` to look only at what follows. */
  lastCallSeq(): number;
  setTimings(t: Partial<TalosSimTimings>): void;
  /** From now on nodes resolve images in this registry (as opts.registry); undefined: every reference resolves again. */
  useRegistry(registry: LabRegistryOptions | undefined): void;
  /** Responses of a method (gRPC path, e.g. `/machine.MachineService/Version`) arrive malformed, for every node; undefined: intact again. */
  wireFault(path: string, fault: WireFault | undefined): void;
  stop(): Promise<void>;
}

function isKindList(
  docs: readonly MultiDocKind[] | Readonly<Record<string, readonly MultiDocKind[]>>,
): docs is readonly MultiDocKind[] {
  return Array.isArray(docs);
}

function talosKey(pkcs8: string): string {
  return pkcs8.replace(/-----(BEGIN|END) PRIVATE KEY-----/g, '-----$1 ED25519 PRIVATE KEY-----');
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

function bind(server: grpc.Server, address: string, creds: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync(address, creds, (err, port) => (err ? reject(err) : resolve(port))),
  );
}

function serve(api: TalosApi, wire: ReadonlyMap<string, WireFault>): grpc.Server {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 32 * 1024 * 1024 });
  server.addService(withWireFaults(MachineServiceService, wire), api.machineService());
  server.addService(withWireFaults(LifecycleServiceService, wire), api.lifecycleService());
  server.addService(withWireFaults(ImageServiceService, wire), api.imageService());
  server.addService(withWireFaults({ ...StateService, ...COSI_WRITES }, wire), api.stateService());
  return server;
}

function shutdown(s: grpc.Server): Promise<void> {
  return new Promise<void>((resolve) => {
    const t = setTimeout(() => {
      s.forceShutdown();
      resolve();
    }, 500);
    s.tryShutdown(() => {
      clearTimeout(t);
      resolve();
    });
  });
}

/**
 * The node whose apid the main endpoint stands for (the first control plane, else the first node),
 * after checking that the simulator and every node listen on loopback only.
 */
function endpointNode(host: string, fleetNodes: readonly FleetNodeState[]): FleetNodeState {
  if (!host.startsWith('127.')) throw new Error(`the Talos simulator listens on loopback only, not ${host}`);
  const firstCp = fleetNodes.find((n) => n.role === 'controlplane') ?? fleetNodes[0];
  if (!firstCp) throw new Error('the fleet has no nodes');
  for (const n of fleetNodes) {
    if (!n.internalIP.startsWith('127.')) throw new Error(`node ${n.name} has non-loopback InternalIP ${n.internalIP}`);
  }
  return firstCp;
}

/** A listener on the node's own InternalIP:50000, as a real node's apid; undefined when the port is taken (another lab). */
async function listenAsNode(
  sim: SimNode,
  { router, wireFaults }: { router: Router; wireFaults: ReadonlyMap<string, WireFault> },
  creds: grpc.ServerCredentials,
): Promise<grpc.Server | undefined> {
  const s = serve(new TalosApi({ ...router, defaultNode: sim }), wireFaults);
  try {
    await bind(s, `${sim.ip}:50000`, creds);
    return s;
  } catch {
    s.forceShutdown(); // port taken (another lab): the apid-style endpoint still serves this node
    return undefined;
  }
}

export async function startTalosSimulator(opts: TalosSimulatorOptions): Promise<TalosSimulator> {
  const host = opts.host ?? '127.0.0.1';
  let timings: TalosSimTimings = { ...TEST_TIMINGS, ...opts.timings };
  const clusterName = opts.clusterName ?? 'kangal-lab';
  const fleetNodes = opts.fleet.nodes();
  const firstCp = endpointNode(host, fleetNodes);

  const pkiDir = join(opts.dir, 'talos-pki');
  const ca = createCA(pkiDir, 'os-ca', { commonName: 'talos', keyType: 'ed25519', organizations: ['talos'] });
  const ips = [...new Set([host, ...fleetNodes.map((n) => n.internalIP)])];
  const serverCert = issueCert(pkiDir, 'apid', ca, {
    commonName: 'apid.kangal-lab',
    subjectAltNames: [...ips.map((ip) => `IP:${ip}`), 'DNS:localhost', ...fleetNodes.map((n) => `DNS:${n.name}`)],
    usage: 'server',
    keyType: 'ed25519',
    days: 1,
  });
  const clientCert = (name: string, o: { roles?: string[]; expired?: boolean } = {}): ClientCert => {
    const c: CertFiles = issueCert(pkiDir, name, ca, {
      commonName: name,
      organizations: o.roles ?? ['os:admin'],
      usage: 'client',
      keyType: 'ed25519',
      expired: o.expired,
    });
    return { cert: c.cert, key: c.key, keyTalos: talosKey(c.key) };
  };
  const adminCert = clientCert('admin');

  const controlPlaneEndpoint = `https://${firstCp.internalIP}:6443`;
  const sims = new Map<string, SimNode>();
  const add = (name: string): SimNode | undefined => {
    const state = opts.fleet.node(name);
    if (!state) return undefined;
    const existing = sims.get(state.name);
    if (existing) return existing;
    const docs =
      opts.multiDocs === undefined
        ? []
        : isKindList(opts.multiDocs)
          ? opts.multiDocs
          : (opts.multiDocs[state.name] ?? []);
    const sim = new SimNode(state, opts.fleet, () => timings, clusterName, controlPlaneEndpoint, docs);
    sims.set(state.name, sim);
    return sim;
  };
  for (const n of fleetNodes) add(n.name);
  const lookup = (target: string): SimNode | undefined =>
    sims.get(target) ?? [...sims.values()].find((s) => s.ip === target) ?? add(target);
  const defaultNode = sims.get(firstCp.name);
  if (!defaultNode) throw new Error('endpoint node missing');
  const etcd = new EtcdCluster([...sims.values()], () => timings);

  const creds = grpc.ServerCredentials.createSsl(
    Buffer.from(ca.cert),
    [{ private_key: Buffer.from(serverCert.key), cert_chain: Buffer.from(serverCert.cert) }],
    true,
  );
  let images: ImageSource = imageSource(opts.registry);
  const router = {
    lookup,
    defaultNode,
    timings: () => timings,
    images: () => images,
    onConfigApplied: opts.onConfigApplied,
    etcd,
  };
  const wireFaults = new Map<string, WireFault>();
  const main = serve(new TalosApi(router), wireFaults);
  const port = await bind(main, `${host}:${opts.port ?? 0}`, creds);
  const servers = [main];

  const nodeEndpoints: Record<string, string> = {};
  if (opts.nodeListeners ?? true) {
    for (const sim of sims.values()) {
      const s = await listenAsNode(sim, { router, wireFaults }, creds);
      if (!s) continue;
      servers.push(s);
      nodeEndpoints[sim.name] = `${sim.ip}:50000`;
    }
  }

  const endpoint = `${host}:${port}`;
  const talosconfigPath = join(opts.dir, 'talosconfig');
  writeFileSync(
    talosconfigPath,
    stringify({
      context: clusterName,
      contexts: {
        [clusterName]: {
          endpoints: [endpoint],
          nodes: fleetNodes.map((n) => n.internalIP),
          ca: b64(ca.cert),
          crt: b64(adminCert.cert),
          key: b64(adminCert.keyTalos),
        },
      },
    }),
    { mode: 0o600 },
  );

  const node = (nameOrIP: string): SimNode => {
    const s = lookup(nameOrIP);
    if (!s) throw new Error(`no simulated Talos node ${nameOrIP}`);
    return s;
  };

  return {
    endpoint,
    port,
    talosconfigPath,
    caPem: ca.cert,
    adminCert,
    secretData: { 'ca.crt': b64(ca.cert), 'tls.crt': b64(adminCert.cert), 'tls.key': b64(adminCert.keyTalos) },
    nodeEndpoints,
    issueClientCert: clientCert,
    faults: {
      set: (n, f) => {
        const s = node(n);
        Object.assign(s.faults, f);
        s.faultsChanged();
        etcd.faultsChanged();
      },
      clear: (n) => {
        for (const s of n === undefined ? [...sims.values()] : [node(n)]) {
          s.faults = {};
          s.unreachableUntil = 0;
          s.faultsChanged();
        }
        if (n === undefined) etcd.setQuorumLost(false);
        etcd.clearAlarms(n === undefined ? undefined : node(n));
        etcd.faultsChanged();
      },
      unreachable: (n, ms) => {
        node(n).unreachableUntil = Date.now() + ms;
      },
      powerOn: (n) => node(n).powerOn(),
      etcdQuorumLost: (on) => etcd.setQuorumLost(on),
    },
    etcd: {
      members: () => etcd.view(),
      leader: () => etcd.leader(),
      disarm: () => {
        etcd.disarm();
      },
      setLeader: (n) => etcd.setLeaderNode(node(n)),
      record: () => etcd.record(),
    },
    node,
    nodes: () => [...sims.values()],
    callLog: (filter = {}) => {
      const from = filter.node === undefined ? [...sims.values()] : [node(filter.node)];
      return from
        .flatMap((s) => s.calls)
        .filter((c) => (filter.method === undefined || c.method === filter.method) && c.seq > (filter.since ?? 0))
        .sort((a, b) => a.seq - b.seq);
    },
    lastCallSeq: () => Math.max(0, ...[...sims.values()].flatMap((s) => s.calls.map((c) => c.seq))),
    setTimings: (t) => {
      timings = { ...timings, ...t };
    },
    useRegistry: (r) => {
      images = imageSource(r);
    },
    wireFault: (path, fault) => {
      if (fault) wireFaults.set(path, fault);
      else wireFaults.delete(path);
    },
    stop: async () => {
      etcd.stop();
      for (const s of sims.values()) s.stop();
      await Promise.all(servers.map(shutdown));
    },
  };
}
