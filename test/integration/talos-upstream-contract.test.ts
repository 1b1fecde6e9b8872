// Contract test against Siderolabs' own client: test/lab/gobuild/talos-contract (a Go program on
// github.com/siderolabs/talos/pkg/machinery v1.13.9 and its COSI client) drives the Talos simulator
// through every behaviour the product depends on and prints what it observed; every observation is
// compared with what upstream Talos answers, written below with the upstream file whose behaviour it
// follows (siderolabs/talos at v1.13.9 unless another version is named; cosi-project/runtime v1.14.1,
// the COSI runtime Talos v1.13.9 is built with). One assertion lists every difference: a simulator
// change that drifts from real Talos fails here.
//
// A few answers differ from upstream on purpose, harmlessly (DOCUMENTED_DIFFERENCES, each also in
// test/lab/talos/README.md with why): for those the simulator's own answer is asserted, so they cannot
// drift either; one that starts to answer as upstream fails too, to be moved to the expected answers.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { stringify } from 'yaml';
import type { FleetNodeSpec } from '../lab/fleet/types.js';
import { type LabDir, makeLabDir } from '../lab/process.js';
import { type ContractObservation, runTalosContract, talosContractBinary } from '../lab/talos-contract.js';
import {
  createRecordingFleet,
  startTalosSimulator,
  type TalosSimulator,
  VANILLA_SCHEMATIC,
} from '../lab/talos/index.js';

const SCHEMATIC = randomBytes(32).toString('hex');
const FACTORY = `factory.talos.dev/metal-installer/${SCHEMATIC}`;
const LEGACY_IMAGE = `${FACTORY}:v1.13.9`;
const LIFECYCLE_IMAGE = `${FACTORY}:v1.14.1`;
const PULL_IMAGE = `factory.talos.dev/metal-installer/${VANILLA_SCHEMATIC}:v1.13.9`;

/** The lab: the client addresses nodes by these keys (test/lab/gobuild/talos-contract/main.go `required`). */
const NODES: Record<string, Omit<FleetNodeSpec, 'kubernetesVersion' | 'schematic'> & { schematic?: string }> = {
  cp1: { name: 'tc-cp1', role: 'controlplane', talosVersion: 'v1.13.9', internalIP: '127.0.93.1' },
  cp2: { name: 'tc-cp2', role: 'controlplane', talosVersion: 'v1.14.0', internalIP: '127.0.93.2' },
  cp3: { name: 'tc-cp3', role: 'controlplane', talosVersion: 'v1.12.9', internalIP: '127.0.93.3' },
  w112: { name: 'tc-w112', role: 'worker', talosVersion: 'v1.12.6', internalIP: '127.0.93.11' },
  w112busy: { name: 'tc-w112-busy', role: 'worker', talosVersion: 'v1.12.6', internalIP: '127.0.93.12' },
  w113: {
    name: 'tc-w113',
    role: 'worker',
    talosVersion: 'v1.13.9',
    internalIP: '127.0.93.13',
    schematic: VANILLA_SCHEMATIC,
  },
  w113cfg: { name: 'tc-w113-cfg', role: 'worker', talosVersion: 'v1.13.9', internalIP: '127.0.93.14' },
  w113force: { name: 'tc-w113-force', role: 'worker', talosVersion: 'v1.13.9', internalIP: '127.0.93.15' },
  w114: { name: 'tc-w114', role: 'worker', talosVersion: 'v1.14.0', internalIP: '127.0.93.16' },
  w114pc: { name: 'tc-w114-pc', role: 'worker', talosVersion: 'v1.14.0', internalIP: '127.0.93.17' },
};

const ip = (key: string): string => NODES[key]?.internalIP ?? '';
const tag = (key: string): string => NODES[key]?.talosVersion ?? '';

/** What upstream answers for one case on one node. */
interface Expectation {
  case: string;
  node: string;
  code: string;
  /** Exact, or a pattern; omitted: not compared. */
  message?: string | RegExp;
  /** Compared deeply (omitted: not compared), or judged by a function that says what is wrong. */
  value?: unknown;
  check?: (value: unknown) => string | undefined;
  /** The upstream source whose behaviour this is. */
  upstream: string;
  /** For DOCUMENTED_DIFFERENCES: what differs and why it is harmless (as test/lab/talos/README.md says). */
  note?: string;
  /** For DOCUMENTED_DIFFERENCES: the simulator's own answer (code, message, value as above). */
  lab?: Pick<Expectation, 'code' | 'message' | 'value'>;
}

const SRV = 'internal/app/machined/internal/server/v1alpha1/v1alpha1_server.go';
const ACCESS = 'internal/app/resources/access.go';
const DIRECTOR = 'internal/app/apid/pkg/director/director.go';
const INMEM = 'cosi-project/runtime pkg/state/impl/inmem/collection.go';
const RUNNING = { stage: 'running', ready: true };
const runningStatus = { id: 'machine', owner: 'runtime.MachineStatusController', phase: 'running', ...RUNNING };

function versionValue(key: string): Record<string, unknown> {
  return {
    tag: tag(key),
    os: 'linux',
    arch: 'amd64',
    platform: 'metal',
    platformMode: 'metal',
    features: true,
    rbac: true,
  };
}

const notSupported = (type: string): string => `resource type "${type}" is not supported`;
const onlyControlPlane = (api: string): string => `${api} is only available on control plane nodes`;
const booted = (t: string) => ({ tag: t, ...RUNNING, newBootId: true });

/** Version, apid routing and Read (machined's API as apid proxies it). */
function machineExpectations(): Expectation[] {
  const versions = Object.keys(NODES).map((node) => ({
    case: 'version',
    node,
    code: 'OK',
    value: versionValue(node),
    upstream: `${SRV} Version; apid proxies one-to-one (${DIRECTOR} singleDirector, grpc-proxy) verbatim: no metadata`,
  }));
  const portTarget = `invalid target "${ip('w113')}:50000"`;
  return [
    ...versions,
    {
      case: 'version-nodes-metadata',
      node: 'w113',
      code: 'OK',
      value: { ...versionValue('w113'), metadata: { hostname: ip('w113'), error: '' } },
      upstream: 'internal/app/apid/pkg/backend/apid.go AppendInfo: one-to-many sets metadata.hostname to the target',
    },
    {
      case: 'version-endpoint-node',
      node: 'endpoint',
      code: 'OK',
      value: versionValue('cp1'),
      upstream: `${DIRECTOR} Director: no node metadata, the endpoint node answers (the lab's endpoint is cp1)`,
    },
    { case: 'version-raw-messages', node: 'w113', code: 'OK', value: { messages: 1 }, upstream: `${SRV} Version` },
    {
      case: 'target-with-port',
      node: 'w113',
      code: 'INTERNAL',
      message: portTarget,
      upstream: `internal/app/apid/pkg/backend/apid.go NewAPID; ${DIRECTOR} singleDirector codes.Internal`,
    },
    {
      case: 'target-with-port-nodes',
      node: 'w113',
      code: 'INTERNAL',
      message: portTarget,
      upstream: `internal/app/apid/pkg/backend/apid.go NewAPID; ${DIRECTOR} aggregateDirector codes.Internal`,
    },
    {
      case: 'target-two-node-values',
      node: 'w113',
      code: 'INVALID_ARGUMENT',
      message: 'node metadata must be single-valued',
      upstream: `${DIRECTOR} Director`,
    },
    {
      case: 'target-unknown-node',
      node: 'none',
      code: 'UNAVAILABLE',
      message: /^connection error: desc = "transport: Error while dialing: dial tcp 127\.0\.93\.250:50000: /,
      upstream: 'internal/app/apid/pkg/backend/apid.go GetConnection dials <target>:50000',
    },
    ...['w112', 'w113', 'w114'].map((node) => ({
      case: 'read-boot-id',
      node,
      code: 'OK',
      value: { uuid: true, trailingNewline: true },
      upstream: `${SRV} Read streams /proc/sys/kernel/random/boot_id as is`,
    })),
  ];
}

/** The COSI resources the product reads, through machinery's own types. */
function cosiExpectations(): Expectation[] {
  const machineStatus = ['cp1', 'w112', 'w113', 'w114'].map((node) => ({
    case: 'machinestatus',
    node,
    code: 'OK',
    value: { ...runningStatus, unmetConditions: [] },
    upstream:
      'pkg/machinery/resources/runtime/machine_status.go; internal/app/machined/pkg/controllers/runtime/machine_status.go',
  }));
  return [
    ...machineStatus,
    {
      case: 'machinestatus-list',
      node: 'w113',
      code: 'OK',
      value: { ids: ['machine'] },
      upstream: 'pkg/machinery/resources/runtime/machine_status.go MachineStatusID',
    },
    ...['w112', 'w113'].map((node) => ({
      case: 'version-resource',
      node,
      code: 'OK',
      value: { id: 'version', name: 'Talos', version: tag(node) },
      upstream: 'internal/app/machined/pkg/controllers/runtime/version.go (v1.10+)',
    })),
    {
      case: 'extension-statuses',
      node: 'w113',
      code: 'OK',
      value: { items: [{ id: '0', image: '0.sqsh', name: 'schematic', version: VANILLA_SCHEMATIC }] },
      upstream:
        'internal/app/machined/pkg/controllers/runtime/extension_status.go (ID: the image without .sqsh); image-factory adds the `schematic` extension to every image it builds',
    },
    {
      case: 'extension-statuses',
      node: 'w114',
      code: 'OK',
      check: extensionsCheck,
      upstream: 'internal/app/machined/pkg/controllers/runtime/extension_status.go',
    },
    ...['w113', 'cp1'].map((node) => ({
      case: 'machineconfig',
      node,
      code: 'OK',
      value: {
        id: 'v1alpha1',
        owner: '',
        machineType: node === 'cp1' ? 'controlplane' : 'worker',
        clusterName: 'kangal-lab',
        validates: true,
      },
      upstream:
        'internal/app/machined/pkg/runtime/v1alpha2/v1alpha2_state.go SetConfig (no owner); pkg/machinery/resources/config/machine_config.go (configloader decodes it)',
    })),
    {
      case: 'machineconfig-reader',
      node: 'w113',
      code: 'PERMISSION_DENIED',
      message: 'not authorized',
      upstream: `${ACCESS}: MachineConfigs are Sensitive, os:admin only`,
    },
    {
      case: 'bootid',
      node: 'w113',
      code: 'PERMISSION_DENIED',
      message: notSupported('BootIDs.runtime.talos.dev'),
      upstream: `${ACCESS}: no such ResourceDefinition before v1.14.0-alpha.2`,
    },
    {
      case: 'bootid',
      node: 'w114',
      code: 'OK',
      value: { uuid: true, sameAsRead: true },
      upstream: 'internal/app/machined/pkg/controllers/runtime/boot_id.go (v1.14)',
    },
    {
      case: 'imagefactoryschematic',
      node: 'w113',
      code: 'PERMISSION_DENIED',
      message: notSupported('ImageFactorySchematics.runtime.talos.dev'),
      upstream: `${ACCESS}: no such ResourceDefinition before v1.14.0-alpha.2`,
    },
    {
      case: 'imagefactoryschematic',
      node: 'w114',
      code: 'OK',
      value: { schematicId: SCHEMATIC, flavor: 'Image Factory', apiUrl: 'https://factory.talos.dev' },
      upstream: 'internal/app/machined/pkg/controllers/runtime/image_factory_schematic.go parseAuthor (v1.14)',
    },
    {
      case: 'kubeletspec',
      node: 'w113',
      code: 'OK',
      value: {
        owner: 'k8s.KubeletSpecController',
        image: 'ghcr.io/siderolabs/kubelet:v1.35.4',
        expectedNodename: 'tc-w113',
      },
      upstream: 'internal/app/machined/pkg/controllers/k8s/kubelet_spec.go',
    },
    {
      case: 'apiserverconfig',
      node: 'cp1',
      code: 'OK',
      value: {
        owner: 'k8s.ControlPlaneAPIServerController',
        image: 'registry.k8s.io/kube-apiserver:v1.35.4',
        localPort: 6443,
      },
      upstream: 'internal/app/machined/pkg/controllers/k8s/control_plane.go NewControlPlaneAPIServerController',
    },
    {
      case: 'kubeletspec-reader',
      node: 'w112',
      code: 'OK',
      value: {},
      upstream: 'pkg/machinery/resources/k8s/kubelet_spec.go: not sensitive before v1.12.9',
    },
    {
      case: 'kubeletspec-reader',
      node: 'w113',
      code: 'PERMISSION_DENIED',
      message: 'not authorized',
      upstream: `pkg/machinery/resources/k8s/kubelet_spec.go Sensitivity (v1.12.9, v1.13.4: "fix: mark more resources as sensitive"); ${ACCESS}`,
    },
    {
      case: 'machinestatus-reader',
      node: 'w113',
      code: 'OK',
      value: { ...runningStatus, unmetConditions: [] },
      upstream: `${ACCESS}: non-sensitive types are readable by os:reader`,
    },
    {
      case: 'securitystate',
      node: 'w113',
      code: 'OK',
      value: { id: 'securitystate', secureBoot: false },
      upstream: 'pkg/machinery/resources/runtime/security_status.go (SecurityStates.talos.dev, ID securitystate)',
    },
    {
      case: 'securitystate-runtime-named',
      node: 'w113',
      code: 'PERMISSION_DENIED',
      message: notSupported('SecurityStates.runtime.talos.dev'),
      upstream: `${ACCESS}: no ResourceDefinition of that name (the type is SecurityStates.talos.dev)`,
    },
    {
      case: 'services-include-kubelet',
      node: 'w113',
      code: 'OK',
      value: { kubelet: true },
      upstream: 'internal/app/machined/pkg/controllers/v1alpha1/service.go',
    },
  ];
}

/** ExtensionStatuses of a factory image: IDs are the layer images without `.sqsh`; `schematic` names the image's schematic. */
function extensionsCheck(value: unknown): string | undefined {
  const items = (value as { items?: { id: string; image: string; name: string; version: string }[] }).items ?? [];
  const badId = items.find((i) => `${i.id}.sqsh` !== i.image);
  if (badId) return `ID ${badId.id} is not its image ${badId.image} without .sqsh`;
  const schematic = items.find((i) => i.name === 'schematic');
  return schematic?.version === SCHEMATIC ? undefined : `the schematic extension names ${schematic?.version}`;
}

/** How the COSI API refuses and what a watch sends. */
function cosiErrorExpectations(): Expectation[] {
  const machineStatuses = 'MachineStatuses.runtime.talos.dev';
  return [
    {
      case: 'cosi-get-missing',
      node: 'w113',
      code: 'NOT_FOUND',
      message: `resource ${machineStatuses}(runtime/kangal-missing@undefined) doesn't exist`,
      upstream: `${INMEM} Get (ErrNotFound); pkg/state/protobuf/server codes.NotFound`,
    },
    {
      case: 'cosi-get-missing-is-not-found',
      node: 'w113',
      code: 'OK',
      value: { isNotFoundError: true },
      upstream: 'cosi-project/runtime pkg/state/protobuf/client Get: codes.NotFound becomes its not-found error',
    },
    {
      case: 'cosi-create',
      node: 'w113',
      code: 'PERMISSION_DENIED',
      message: 'write access is not allowed',
      upstream: `${ACCESS}: every write is refused first`,
    },
    {
      case: 'cosi-unknown-type',
      node: 'w113',
      code: 'PERMISSION_DENIED',
      message: notSupported('KangalContracts.example.dev'),
      upstream: ACCESS,
    },
    {
      case: 'cosi-unknown-namespace',
      node: 'w113',
      code: 'PERMISSION_DENIED',
      message: 'namespace "kangal-missing" is not supported',
      upstream: ACCESS,
    },
    {
      case: 'cosi-other-namespace',
      node: 'w113',
      code: 'OK',
      value: { items: 0 },
      upstream: 'cosi-project/runtime pkg/state/impl/namespaced: a registered namespace without the type lists nothing',
    },
    {
      case: 'watch-existing',
      node: 'w113',
      code: 'OK',
      value: { events: [{ type: 'Created', id: 'machine', bookmark: false }] },
      upstream: `${INMEM} Watch: the current resource first, without a bookmark`,
    },
    {
      case: 'watch-missing',
      node: 'w113',
      code: 'OK',
      value: { events: [{ type: 'Destroyed', id: 'kangal-missing', version: 'undefined', bookmark: false }] },
      upstream: `${INMEM} Watch: resource.NewTombstone of the ID, DESTROYED`,
    },
  ];
}

/** The upgrade flows, reboots and rollback. */
function upgradeExpectations(): Expectation[] {
  const ack = { ack: 'Upgrade request received', actorIdIsUUID: true, metadata: false };
  const notPulled = `${FACTORY}:v1.14.99`;
  const reboot = (c: string, node: string, t: string): Expectation[] => [
    { case: c, node, code: 'OK', value: { actorIdIsUUID: true }, upstream: `${SRV} Reboot (any mode, acked at once)` },
    { case: `${c}-result`, node, code: 'OK', value: booted(t), upstream: 'seq.go Reboot' },
  ];
  return [
    {
      case: 'pull-before-v1.13',
      node: 'w112',
      code: 'UNIMPLEMENTED',
      message: 'unknown service machine.ImageService',
      upstream: 'ImageService exists from v1.13 (api/machine/image.proto); grpc-go answers an unknown service',
    },
    { case: 'legacy-upgrade', node: 'w112', code: 'OK', value: ack, upstream: `${SRV} Upgrade` },
    {
      case: 'legacy-upgrade-result',
      node: 'w112',
      code: 'OK',
      value: booted('v1.13.9'),
      upstream: 'internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_sequencer.go Upgrade',
    },
    { case: 'rollback', node: 'w112', code: 'OK', value: {}, upstream: `${SRV} Rollback` },
    {
      case: 'rollback-result',
      node: 'w112',
      code: 'OK',
      value: booted('v1.12.6'),
      upstream: `${SRV} Rollback (bootloader revert, then reboot)`,
    },
    { case: 'legacy-upgrade-first', node: 'w112busy', code: 'OK', value: ack, upstream: `${SRV} Upgrade` },
    {
      case: 'legacy-upgrade-stage',
      node: 'w112busy',
      code: 'OK',
      value: { stage: 'upgrading' },
      upstream: 'internal/app/machined/pkg/controllers/runtime/machine_status.go',
    },
    {
      case: 'legacy-upgrade-second',
      node: 'w112busy',
      code: 'OK',
      value: ack,
      upstream: `${SRV} Upgrade: no lock before the ack; the sequence is refused inside (runtime ErrLocked, logged)`,
    },
    {
      case: 'lifecycle-upgrade',
      node: 'w114',
      code: 'OK',
      value: { exitCode: 0, progressLines: true },
      upstream: 'internal/app/lifecycle/lifecycle.go Upgrade',
    },
    {
      case: 'lifecycle-upgrade-concurrent',
      node: 'w114',
      code: 'FAILED_PRECONDITION',
      message: 'another installation/upgrade is already in progress',
      upstream: 'internal/app/lifecycle/lifecycle.go Upgrade (TryLock)',
    },
    {
      case: 'lifecycle-upgrade-keeps-running',
      node: 'w114',
      code: 'OK',
      value: { tag: 'v1.14.0', ...RUNNING, sameBootId: true },
      upstream: 'internal/app/lifecycle/lifecycle.go: the installer runs beside the OS, no reboot',
    },
    {
      case: 'lifecycle-upgrade-not-pulled',
      node: 'w114',
      code: 'INTERNAL',
      message: `upgrade failed: installer image "${notPulled}" not found in containerd store: image "${notPulled}": not found`,
      upstream: 'internal/app/lifecycle/container.go runInstallerContainer GetImage; lifecycle.go codes.Internal',
    },
    ...reboot('reboot-default', 'w114', 'v1.14.1'),
    ...reboot('reboot-powercycle', 'w114pc', 'v1.14.0'),
    ...reboot('reboot-force', 'w113force', 'v1.13.9'),
    {
      case: 'rollback-without-previous',
      node: 'w113force',
      code: 'UNKNOWN',
      message: 'cannot rollback to "", label does not exist',
      upstream: `${SRV} Rollback; internal/app/machined/pkg/runtime/v1alpha1/bootloader/grub/revert.go`,
    },
    {
      case: 'pull-invalid-reference',
      node: 'w113',
      code: 'UNKNOWN',
      message: 'failed to parse image reference "Not A Reference": invalid reference format',
      upstream: 'internal/pkg/containers/image/image.go Pull (reference.ParseDockerRef)',
    },
  ];
}

/** ApplyConfiguration as the product sends it (full config, NO_REBOOT). */
function applyExpectations(): Expectation[] {
  const applied = { mode: 'NO_REBOOT', modeDetails: 'Applied configuration without a reboot' };
  return [
    { case: 'apply-no-reboot', node: 'w113cfg', code: 'OK', value: applied, upstream: `${SRV} ApplyConfiguration` },
    {
      case: 'apply-auto',
      node: 'w113cfg',
      code: 'OK',
      value: applied,
      upstream: `${SRV} ApplyConfiguration: AUTO answers the mode it chose`,
    },
  ];
}

/** The etcd RPCs the product calls. */
function etcdExpectations(): Expectation[] {
  const member = (n: string) => ({
    hostname: `tc-${n}`,
    peerUrls: [`https://<${n}>:2380`],
    clientUrls: [`https://<${n}>:2379`],
    isLearner: false,
  });
  const lists = ['cp1', 'cp2', 'cp3'].map((node) => ({
    case: 'etcd-member-list',
    node,
    code: 'OK',
    value: { members: ['cp1', 'cp2', 'cp3'].map(member) },
    upstream: `${SRV} EtcdMemberList; internal/app/machined/pkg/system/services/etcd.go (--name, advertised URLs)`,
  }));
  const worker = (c: string, api: string): Expectation => ({
    case: c,
    node: 'w113',
    code: 'UNIMPLEMENTED',
    message: onlyControlPlane(api),
    upstream: 'internal/app/internal/machinehelper/machinehelper.go CheckControlplane',
  });
  return [
    ...lists,
    worker('etcd-member-list', 'member list'),
    worker('etcd-status', 'etcd status'),
    worker('etcd-alarm-list', 'etcd alarm list'),
    worker('etcd-forfeit-leader', 'etcd forfeit leadership'),
    {
      case: 'etcd-status',
      node: 'cp1',
      code: 'OK',
      value: {
        member: 'tc-cp1',
        leaderIsMember: true,
        isLearner: false,
        errors: [],
        protocolVersion: true,
        raftIndex: true,
      },
      upstream: `${SRV} EtcdStatus (the local member)`,
    },
    { case: 'etcd-alarm-list', node: 'cp1', code: 'OK', value: { alarms: [] }, upstream: `${SRV} EtcdAlarmList` },
    {
      case: 'etcd-forfeit-not-leader',
      node: 'cp2',
      code: 'OK',
      value: { member: '' },
      upstream: 'internal/pkg/etcd/etcd.go ForfeitLeadership: not the leader, nothing moves',
    },
    {
      case: 'etcd-forfeit-leader',
      node: 'cp1',
      code: 'OK',
      value: { moved: true, firstOtherInList: true },
      upstream: 'internal/pkg/etcd/etcd.go ForfeitLeadership: MoveLeader to the first other member of MemberList',
    },
  ];
}

/** Issue 49 items 8 and 9: ResourceDefinitions, services, events, 1.14 namespaces. */
function item8And9Expectations(): Expectation[] {
  return [...resourceDefinitionExpectations(), ...serviceExpectations()];
}

interface Definition {
  type: string;
  displayType: string;
  defaultNamespace: string;
  aliases: string[];
  printColumns: string[];
  sensitivity: '' | 'sensitive';
}

/** As meta.NewResourceDefinition fills machinery v1.13.9's ResourceDefinition() of each type. */
const DEFINITIONS: Definition[] = [
  {
    type: 'MachineStatuses.runtime.talos.dev',
    displayType: 'MachineStatus',
    defaultNamespace: 'runtime',
    aliases: ['machinestatus', 'ms'],
    printColumns: ['Stage={.stage}', 'Ready={.status.ready}'],
    sensitivity: '',
  },
  {
    type: 'Versions.runtime.talos.dev',
    displayType: 'Version',
    defaultNamespace: 'runtime',
    aliases: ['version'],
    printColumns: ['Name={.name}', 'Version={.version}'],
    sensitivity: '',
  },
  {
    type: 'ExtensionStatuses.runtime.talos.dev',
    displayType: 'ExtensionStatus',
    defaultNamespace: 'runtime',
    aliases: ['extensions', 'extensionstatus', 'es'],
    printColumns: ['Name={.metadata.name}', 'Version={.metadata.version}'],
    sensitivity: '',
  },
  {
    type: 'SecurityStates.talos.dev',
    displayType: 'SecurityState',
    defaultNamespace: 'runtime',
    aliases: ['securitystate', 'ss'],
    printColumns: [
      'SecureBoot={.secureBoot}',
      'UKISigningKeyFingerprint={.ukiSigningKeyFingerprint}',
      'PCRSigningKeyFingerprint={.pcrSigningKeyFingerprint}',
      'SELinuxState={.selinuxState}',
      'ModuleSignatureEnforced={.moduleSignatureEnforced}',
    ],
    sensitivity: '',
  },
  {
    type: 'Services.v1alpha1.talos.dev',
    displayType: 'Service',
    defaultNamespace: 'runtime',
    aliases: ['svc', 'service'],
    printColumns: ['Running={.running}', 'Healthy={.healthy}', 'Health Unknown={.unknown}'],
    sensitivity: '',
  },
  {
    type: 'MachineConfigs.config.talos.dev',
    displayType: 'MachineConfig',
    defaultNamespace: 'config',
    aliases: ['machineconfig', 'mc', 'mcs'],
    printColumns: [],
    sensitivity: 'sensitive',
  },
  {
    type: 'KubeletSpecs.kubernetes.talos.dev',
    displayType: 'KubeletSpec',
    defaultNamespace: 'k8s',
    aliases: ['kubeletspec', 'ks'],
    printColumns: [],
    sensitivity: 'sensitive',
  },
  {
    type: 'APIServerConfigs.kubernetes.talos.dev',
    displayType: 'APIServerConfig',
    defaultNamespace: 'controlplane',
    aliases: ['apiserverconfig', 'apisc', 'apiscs'],
    printColumns: [],
    sensitivity: 'sensitive',
  },
];

/** cosi-project/runtime pkg/resource/meta/spec/resource_definition.go Fill: the plural, its suffix prefixes, then the aliases. */
function allAliases(d: Definition): string[] {
  const [name = '', ...suffix] = d.type.split('.');
  const plural = name.toLowerCase();
  return [plural, ...suffix.slice(0, -1).map((_, i) => [plural, ...suffix.slice(0, i + 1)].join('.')), ...d.aliases];
}

function resourceDefinitionExpectations(): Expectation[] {
  const defs = DEFINITIONS.map((d) => ({
    case: `resource-definition ${d.type}`,
    node: 'w113',
    code: 'OK',
    value: { id: d.type.toLowerCase(), ...d, allAliases: allAliases(d) },
    upstream: `pkg/machinery/resources/… ResourceDefinition() of ${d.displayType}; cosi-project/runtime resource_definition.go Fill`,
  }));
  const aliases = [
    ['machinestatus', 'MachineStatuses.runtime.talos.dev', 'runtime'],
    ['machineconfig', 'MachineConfigs.config.talos.dev', 'config'],
    ['extensions', 'ExtensionStatuses.runtime.talos.dev', 'runtime'],
    ['securitystate', 'SecurityStates.talos.dev', 'runtime'],
  ].map(([alias = '', type, namespace]) => ({
    case: `resource-alias ${alias}`,
    node: 'w113',
    code: 'OK',
    value: { type, namespace },
    upstream: 'pkg/machinery/client/resources.go ResolveResourceKind (talosctl get <alias>)',
  }));
  return [...defs, ...aliases];
}

const WORKER_SERVICES = ['apid', 'auditd', 'containerd', 'cri', 'dashboard', 'kubelet', 'machined', 'syslogd', 'udevd'];

/** Every service Running; health checked, except the dashboard's (it has no health check). */
function services(ids: string[], running: string): Record<string, string> {
  return Object.fromEntries(ids.map((id) => [id, `${running}, ${id === 'dashboard' ? 'health unknown' : 'healthy'}`]));
}

function serviceExpectations(): Expectation[] {
  const controlPlane = [...WORKER_SERVICES, 'etcd', 'trustd'].sort();
  const started =
    'internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_sequencer.go Initialize (udevd, machined, apid, auditd, syslogd, containerd, dashboard), v1alpha1_sequencer_tasks.go StartAllServices (cri, kubelet; trustd, etcd on a control plane)';
  const perNode = (node: string, ids: string[]): Expectation[] => [
    {
      case: 'service-list',
      node,
      code: 'OK',
      value: { services: services(ids, 'Running') },
      upstream: `${SRV} ServiceList; ${started}; internal/app/machined/pkg/system/system.go List; dashboard.go has no HealthFunc`,
    },
    {
      case: 'services-resources',
      node,
      code: 'OK',
      value: { services: services(ids, 'running') },
      upstream:
        'internal/app/machined/pkg/controllers/v1alpha1/service.go (Running, Healthy, Unknown of each ServiceStateEvent)',
    },
  ];
  const namespaces = ['storage', 'containers'].flatMap((ns) => [
    {
      case: `namespace-${ns}`,
      node: 'w113',
      code: 'PERMISSION_DENIED',
      message: `namespace "${ns}" is not supported`,
      upstream: `${ACCESS}; internal/app/machined/pkg/runtime/v1alpha2/v1alpha2_state.go (v1.13.9 has no such namespace)`,
    },
    {
      case: `namespace-${ns}`,
      node: 'w114',
      code: 'OK',
      value: { items: 0 },
      upstream: 'v1alpha2_state.go of v1.14 registers it (issue 49 item 9; no v1.14 source was at hand to check)',
    },
  ]);
  return [
    ...perNode('w113', WORKER_SERVICES),
    ...perNode('cp1', controlPlane),
    ...namespaces,
    {
      case: 'events',
      node: 'w113',
      code: 'OK',
      check: eventsCheck,
      upstream: `${SRV} Events (a hello event, then the buffer from tail_events=-1); pkg/machinery/client/events.go EventsWatchV2`,
    },
  ];
}

/** The event buffer of a running node: the machine status, the sequences, phases, tasks and services of its boot. */
function eventsCheck(value: unknown): string | undefined {
  const v = value as {
    types?: string[];
    lastMachineStatus?: string;
    lastMachineReady?: boolean;
    servicesRunning?: string[];
  };
  const wanted = ['MachineStatusEvent', 'SequenceEvent', 'PhaseEvent', 'TaskEvent', 'ServiceStateEvent'];
  const missing = wanted.filter((t) => !(v.types ?? []).includes(`machine.${t}`));
  if (missing.length > 0) return `no ${missing.join(', ')} in the buffer`;
  if (v.lastMachineStatus !== 'RUNNING' || v.lastMachineReady !== true)
    return 'the last machine status is not RUNNING, ready';
  return isDeepStrictEqual(v.servicesRunning, WORKER_SERVICES) ? undefined : 'not every service reached Running';
}

/** Every expectation that must hold. */
function expected(): Expectation[] {
  return [
    ...machineExpectations(),
    ...cosiExpectations(),
    ...cosiErrorExpectations(),
    ...upgradeExpectations(),
    ...applyExpectations(),
    ...etcdExpectations(),
    ...item8And9Expectations(),
    ...messageExpectations(),
    ...bookmarkExpectations(),
  ];
}

/** Where the simulator answers otherwise on purpose (test/lab/talos/README.md says why each is harmless). */
function documentedDifferences(): Expectation[] {
  return [
    {
      case: 'resource-alias ms',
      node: 'w113',
      code: 'INVALID_ARGUMENT',
      message:
        'resource type "ms" is ambiguous: [machinestatuses.runtime.talos.dev manifeststatuses.kubernetes.talos.dev mountstatuses.block.talos.dev]',
      upstream:
        'pkg/machinery/client/resources.go ResolveResourceKind over every registered definition (k8s/manifest_status.go and block/mount_status.go also generate `ms`)',
      note: 'the simulator defines only the types it serves, so `ms` names one of them; a real node also defines ManifestStatus and MountStatus',
      lab: { code: 'OK', value: { namespace: 'runtime', type: 'MachineStatuses.runtime.talos.dev' } },
    },
    ...pullDivergences(),
    {
      case: 'etcd-member-list-order',
      node: 'cp1',
      code: 'OK',
      value: { sortedById: true },
      upstream: 'etcd server/etcdserver/api/membership/cluster.go RaftCluster.Members sorts by ID (v3rpc MemberList)',
      note: 'the simulator lists members in node order (the product looks members up by ID, never by position)',
      lab: { code: 'OK', value: { sortedById: false } },
    },
    ...['cp2', 'cp3'].map((node) => ({
      case: 'etcd-member-list-order',
      node,
      code: 'OK',
      value: { sortedById: true },
      upstream: 'etcd server/etcdserver/api/membership/cluster.go RaftCluster.Members',
      note: 'as on cp1',
      lab: { code: 'OK', value: { sortedById: false } },
    })),
  ];
}

/**
 * The name a Pull answers: a digest-pinned name on nodes whose images.go pins every tag pull; the
 * sources at hand differ between releases (others send img.Name(), the reference as pulled).
 */
function pullDivergences(): Expectation[] {
  const pinned =
    'internal/app/images/images.go Pull: pulledRef = img.Name(); not reference.Canonical ⇒ parsedRef.Name() + "@" + digest';
  const lab = (progress: boolean): Expectation['lab'] => ({ code: 'OK', value: { form: 'tag', progress } });
  return [
    {
      case: 'pull',
      node: 'w113',
      code: 'OK',
      value: { form: 'digest', progress: true },
      upstream: pinned,
      note: 'the simulator answers the reference as pulled (`name:tag`); the product reads no name from a Pull (a pre-pulled installer is told by the absence of progress)',
      lab: lab(true),
    },
    {
      case: 'pull-already-present',
      node: 'w113',
      code: 'OK',
      value: { form: 'digest', progress: false },
      upstream: `${pinned}; internal/pkg/containers/image/image.go WithSkipIfAlreadyPulled (no progress)`,
      note: 'no progress: as upstream; the name: as above',
      lab: lab(false),
    },
    {
      case: 'lifecycle-pull',
      node: 'w114',
      code: 'OK',
      value: { form: 'digest', progress: true },
      upstream: `${pinned} (v1.13.9; the v1.14 source was not at hand)`,
      note: 'as above',
      lab: lab(true),
    },
  ];
}

/**
 * cosi-project/runtime inmem collection.go: every event from the stream carries a bookmark, and so does
 * BOOTSTRAPPED; a watch started from a bookmark gets the events after it, and a bookmark the node did not
 * give is refused with state's ErrInvalidWatchBookmark, which protobuf/server/server.go Watch returns as is.
 */
function bookmarkExpectations(): Expectation[] {
  return [
    {
      case: 'watchkind-bootstrap',
      node: 'w113',
      code: 'OK',
      value: {
        events: [
          { type: 'Created', id: 'machine', bookmark: false },
          { type: 'Bootstrapped', id: '', version: 'undefined', bookmark: true },
        ],
      },
      upstream: `${INMEM} WatchAll: Bootstrapped carries encodeBookmark(pos - 1)`,
    },
    {
      case: 'config-watch',
      node: 'w113cfg',
      code: 'OK',
      value: {
        events: [
          { type: 'Created', id: 'v1alpha1', bookmark: false },
          { type: 'Updated', id: 'v1alpha1', bookmark: true },
        ],
        versionDelta: 1,
      },
      upstream: `${INMEM} publish (event.Bookmark = encodeBookmark(writePos)); v1alpha2_state.go SetConfig`,
    },
    {
      case: 'watch-resume',
      node: 'w113cfg',
      code: 'OK',
      value: { events: [{ type: 'Updated', id: 'v1alpha1', bookmark: true }] },
      upstream: `${INMEM} Watch: StartFromBookmark streams from the event after it, without an initial event`,
    },
    {
      case: 'watch-resume-invalid',
      node: 'w113cfg',
      code: 'UNKNOWN',
      message: 'invalid watch bookmark',
      upstream: `${INMEM} decodeBookmark → ErrInvalidWatchBookmark; protobuf/server/server.go Watch returns it as is`,
    },
  ];
}

function messageExpectations(): Expectation[] {
  const dryRun = {
    mode: 'NO_REBOOT',
    modeDetails:
      'Dry run summary:\nApplied configuration without a reboot (skipped in dry-run).\nConfig diff:\n\nNo changes.',
  };
  return [
    ...[
      ['apply-dry-run-same-config', 'w113'],
      ['apply-dry-run-unchanged', 'w113cfg'],
    ].map(([c = '', node = '']) => ({
      case: c,
      node,
      code: 'OK',
      value: dryRun,
      upstream: `${SRV} ApplyConfiguration dry run; generateDiff`,
    })),
    {
      case: 'apply-without-v1alpha1',
      node: 'w113cfg',
      code: 'INVALID_ARGUMENT',
      message:
        "the applied machine configuration doesn't contain v1alpha1 config, did you mean to patch the machine config instead?",
      upstream: `${SRV} ApplyConfiguration`,
    },
    {
      case: 'read-missing-file',
      node: 'w113',
      code: 'NOT_FOUND',
      message: 'stat /var/lib/kangal-contract-missing: no such file or directory',
      upstream: `${SRV} Read: os.Stat first`,
    },
    {
      case: 'cosi-with-nodes',
      node: 'w113',
      code: 'INVALID_ARGUMENT',
      message: 'one-2-many proxying is not supported for method /cosi.resource.State/Get',
      upstream: `${DIRECTOR} Director`,
    },
  ];
}

// -- comparison --------------------------------------------------------------------------------

const keyOf = (x: { case: string; node: string }): string => `${x.case} @ ${x.node}`;
const show = (x: unknown): string => (x instanceof RegExp ? String(x) : JSON.stringify(x));

/** What is wrong with an observation for an expectation; undefined when it is upstream's answer. */
function mismatch(e: Expectation, o: ContractObservation | undefined): string | undefined {
  if (!o) return 'no observation (the client did not run this case)';
  const got = `observed ${o.code}${o.message ? ` "${o.message}"` : ''}${o.value === undefined ? '' : ` ${show(o.value)}`}`;
  if (o.code !== e.code) return `expected ${e.code}, ${got}`;
  const m = e.message;
  const messageOk = m === undefined || (m instanceof RegExp ? m.test(o.message) : m === o.message);
  if (!messageOk) return `expected message ${show(m)}, ${got}`;
  if (e.value !== undefined && !isDeepStrictEqual(o.value, e.value)) return `expected ${show(e.value)}, ${got}`;
  const why = e.check?.(o.value);
  return why === undefined ? undefined : `${why}; ${got}`;
}

interface Report {
  failures: string[];
  documented: string[];
}

/** A documented difference: the simulator's documented answer passes (and is listed); any other fails. */
function documentedOutcome(e: Expectation, o: ContractObservation | undefined, failures: string[]): string[] {
  const at = `${keyOf(e)}  [upstream: ${e.upstream}]`;
  if (mismatch(e, o) === undefined) {
    failures.push(`${at}: now answers as upstream; move it to the expected answers and drop its README line`);
    return [];
  }
  const why =
    e.lab === undefined
      ? 'no lab answer is documented'
      : mismatch({ case: e.case, node: e.node, upstream: e.upstream, ...e.lab }, o);
  if (why !== undefined) {
    failures.push(`${at}: neither upstream's answer nor the documented difference: ${why}`);
    return [];
  }
  return [`${at}\n      ${e.note ?? ''}`];
}

function compare(observations: ContractObservation[], must: Expectation[], divergences: Expectation[]): Report {
  const byKey = new Map<string, ContractObservation>();
  const report: Report = { failures: [], documented: [] };
  for (const o of observations) {
    if (byKey.has(keyOf(o))) report.failures.push(`${keyOf(o)}: observed twice`);
    byKey.set(keyOf(o), o);
  }
  const line = (e: Expectation, why: string): string => `${keyOf(e)}: ${why}  [upstream: ${e.upstream}]`;
  for (const e of must) {
    const why = mismatch(e, byKey.get(keyOf(e)));
    if (why !== undefined) report.failures.push(line(e, why));
  }
  for (const e of divergences) report.documented.push(...documentedOutcome(e, byKey.get(keyOf(e)), report.failures));
  const known = new Set([...must, ...divergences].map(keyOf));
  for (const o of observations)
    if (!known.has(keyOf(o))) report.failures.push(`${keyOf(o)}: no expectation is written for ${show(o)}`);
  return report;
}

function print(title: string, lines: string[]): void {
  if (lines.length > 0) console.log(`    ${title} (${lines.length}):\n${lines.map((l) => `      - ${l}`).join('\n')}`);
}

// -- the lab -------------------------------------------------------------------------------------

function readerTalosconfig(sim: TalosSimulator, dir: string): string {
  const reader = sim.issueClientCert('contract-reader', { roles: ['os:reader'] });
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const path = join(dir, 'reader-talosconfig');
  const context = { endpoints: [sim.endpoint], ca: b64(sim.caPem), crt: b64(reader.cert), key: b64(reader.keyTalos) };
  writeFileSync(path, stringify({ context: 'reader', contexts: { reader: context } }), { mode: 0o600 });
  return path;
}

function clientArgs(sim: TalosSimulator, readerConfig: string): string[] {
  return [
    ...['-talosconfig', sim.talosconfigPath, '-reader-talosconfig', readerConfig],
    ...Object.keys(NODES).flatMap((key) => ['-node', `${key}=${ip(key)}`]),
    ...['-schematic', SCHEMATIC, '-legacy-image', LEGACY_IMAGE],
    ...['-lifecycle-image', LIFECYCLE_IMAGE, '-pull-image', PULL_IMAGE],
  ];
}

describe("Talos simulator ↔ Siderolabs' Go client (upstream contract)", function () {
  this.timeout(60_000);
  let dir: LabDir;
  let sim: TalosSimulator;

  before(async function () {
    await talosContractBinary(); // fails at once, naming prepare.sh, when the client is not built
    dir = makeLabDir('talos-upstream-contract');
    const specs = Object.values(NODES).map((n) => ({ schematic: SCHEMATIC, ...n, kubernetesVersion: 'v1.35.4' }));
    sim = await startTalosSimulator({ fleet: createRecordingFleet(specs), dir: dir.path, nodeListeners: false });
    sim.etcd.setLeader('tc-cp1');
    sim.faults.set('tc-w112-busy', { holdPhase: 'upgrading' });
  });

  after(async function () {
    await sim?.stop();
    dir?.remove();
  });

  it('answers every case as upstream Talos does', async function () {
    const run = await runTalosContract(clientArgs(sim, readerTalosconfig(sim, dir.path)));
    assert.equal(run.code, 0, `talos-contract exited ${String(run.code)}: ${run.stderr}`);
    const report = compare(run.observations, expected(), documentedDifferences());
    print('documented differences from upstream (test/lab/talos/README.md), answered as documented', report.documented);
    assert.deepEqual(report.failures, [], `differences from upstream:\n${report.failures.join('\n')}`);
  });
});
