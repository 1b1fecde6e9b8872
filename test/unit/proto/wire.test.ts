// Wire compatibility of proto/ independently of our generated code: a second description of the
// same messages, built by hand with protobufjs reflection from the field numbers in the Talos
// API reference (not from our .proto files), encodes what ours decodes and the reverse.
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import { ImageServicePullRequest, ImageServicePullResponse } from '../../../proto/gen/machine/image.js';
import {
  LifecycleServiceUpgradeRequest,
  LifecycleServiceUpgradeResponse,
} from '../../../proto/gen/machine/lifecycle.js';
import {
  ApplyConfigurationRequest,
  ApplyConfigurationResponse,
  ReadRequest,
  RebootRequest,
  RebootResponse,
  UpgradeRequest,
  UpgradeResponse,
  VersionResponse,
  EtcdAlarmListResponse,
  EtcdForfeitLeadershipResponse,
  EtcdMemberListRequest,
  EtcdMemberListResponse,
  EtcdStatusResponse,
} from '../../../proto/gen/machine/machine.js';
import { Data } from '../../../proto/gen/common/common.js';
import { GetRequest, GetResponse, WatchRequest, WatchResponse } from '../../../proto/gen/v1alpha1/state.js';

const { Enum, Field, MapField, OneOf, Root, Type } = protobuf;

function type(
  name: string,
  fields: [string, number, string, ('repeated' | 'optional')?][],
  oneofs: Record<string, string[]> = {},
): protobuf.Type {
  const t = new Type(name);
  for (const [fname, id, ftype, rule] of fields) t.add(new Field(fname, id, ftype, rule));
  for (const [oname, members] of Object.entries(oneofs)) t.add(new OneOf(oname, members));
  return t;
}

// The independent description (names are protobufjs-local; only numbers and wire types matter).
const root = new Root();
root.add(
  type('Timestamp', [
    ['seconds', 1, 'int64'],
    ['nanos', 2, 'int32'],
  ]),
);
root.add(
  type('Duration', [
    ['seconds', 1, 'int64'],
    ['nanos', 2, 'int32'],
  ]),
);
root.add(
  type('Status', [
    ['code', 1, 'int32'],
    ['message', 2, 'string'],
  ]),
);
root.add(
  type('Metadata', [
    ['hostname', 1, 'string'],
    ['error', 2, 'string'],
    ['status', 3, 'Status'],
  ]),
);
root.add(
  type('VersionInfo', [
    ['tag', 1, 'string'],
    ['sha', 2, 'string'],
    ['built', 3, 'string'],
    ['go_version', 4, 'string'],
    ['os', 5, 'string'],
    ['arch', 6, 'string'],
  ]),
);
root.add(
  type('PlatformInfo', [
    ['name', 1, 'string'],
    ['mode', 2, 'string'],
  ]),
);
root.add(type('FeaturesInfo', [['rbac', 1, 'bool']]));
root.add(
  type('Version', [
    ['metadata', 1, 'Metadata'],
    ['version', 2, 'VersionInfo'],
    ['platform', 3, 'PlatformInfo'],
    ['features', 4, 'FeaturesInfo'],
  ]),
);
root.add(type('VersionResponse', [['messages', 1, 'Version', 'repeated']]));
root.add(new Enum('UpgradeRebootMode', { DEFAULT: 0, POWERCYCLE: 1 }));
root.add(
  type('UpgradeRequest', [
    ['image', 1, 'string'],
    ['preserve', 2, 'bool'],
    ['stage', 3, 'bool'],
    ['force', 4, 'bool'],
    ['reboot_mode', 5, 'UpgradeRebootMode'],
  ]),
);
root.add(
  type('Upgrade', [
    ['metadata', 1, 'Metadata'],
    ['ack', 2, 'string'],
    ['actor_id', 3, 'string'],
  ]),
);
root.add(type('UpgradeResponse', [['messages', 1, 'Upgrade', 'repeated']]));
root.add(new Enum('RebootMode', { DEFAULT: 0, POWERCYCLE: 1, FORCE: 2 }));
root.add(type('RebootRequest', [['mode', 1, 'RebootMode']]));
root.add(
  type('Reboot', [
    ['metadata', 1, 'Metadata'],
    ['actor_id', 2, 'string'],
  ]),
);
root.add(type('RebootResponse', [['messages', 1, 'Reboot', 'repeated']]));
root.add(new Enum('ApplyMode', { REBOOT: 0, AUTO: 1, NO_REBOOT: 2, STAGED: 3, TRY: 4 }));
root.add(
  type('ApplyConfigurationRequest', [
    ['data', 1, 'bytes'],
    ['mode', 4, 'ApplyMode'],
    ['dry_run', 5, 'bool'],
    ['try_mode_timeout', 6, 'Duration'],
  ]),
);
root.add(
  type('ApplyConfiguration', [
    ['metadata', 1, 'Metadata'],
    ['warnings', 2, 'string', 'repeated'],
    ['mode', 3, 'ApplyMode'],
    ['mode_details', 4, 'string'],
  ]),
);
root.add(type('ApplyConfigurationResponse', [['messages', 1, 'ApplyConfiguration', 'repeated']]));
root.add(type('ReadRequest', [['path', 1, 'string']]));
root.add(
  type('Data', [
    ['metadata', 1, 'Metadata'],
    ['bytes', 2, 'bytes'],
  ]),
);
root.add(
  type('ContainerdInstance', [
    ['driver', 1, 'int32'],
    ['namespace', 2, 'int32'],
  ]),
);
root.add(type('InstallArtifactsSource', [['image_name', 1, 'string']]));
root.add(
  type('LifecycleServiceUpgradeRequest', [
    ['containerd', 1, 'ContainerdInstance'],
    ['source', 2, 'InstallArtifactsSource'],
  ]),
);
root.add(
  type(
    'InstallProgress',
    [
      ['message', 1, 'string', 'optional'],
      ['exit_code', 2, 'int32', 'optional'],
    ],
    { response: ['message', 'exit_code'] },
  ),
);
root.add(type('LifecycleServiceUpgradeResponse', [['progress', 1, 'InstallProgress']]));
root.add(
  type('ImageServicePullRequest', [
    ['containerd', 1, 'ContainerdInstance'],
    ['image_ref', 3, 'string'],
  ]),
);
root.add(
  type('LayerProgress', [
    ['status', 1, 'int32'],
    ['elapsed', 2, 'Duration'],
    ['offset', 3, 'int64'],
    ['total', 4, 'int64'],
  ]),
);
root.add(
  type('PullProgress', [
    ['layer_id', 1, 'string'],
    ['progress', 2, 'LayerProgress'],
  ]),
);
root.add(
  type(
    'ImageServicePullResponse',
    [
      ['name', 1, 'string', 'optional'],
      ['pull_progress', 2, 'PullProgress', 'optional'],
    ],
    { response: ['name', 'pull_progress'] },
  ),
);
const cosiMeta = type('CosiMetadata', [
  ['namespace', 1, 'string'],
  ['type', 2, 'string'],
  ['id', 3, 'string'],
  ['version', 4, 'string'],
  ['owner', 5, 'string'],
  ['phase', 6, 'string'],
  ['created', 7, 'Timestamp'],
  ['updated', 8, 'Timestamp'],
  ['finalizers', 9, 'string', 'repeated'],
]);
cosiMeta.add(new MapField('labels', 10, 'string', 'string'));
cosiMeta.add(new MapField('annotations', 11, 'string', 'string'));
root.add(cosiMeta);
root.add(
  type('Spec', [
    ['proto_spec', 1, 'bytes'],
    ['yaml_spec', 2, 'string'],
  ]),
);
root.add(
  type('Resource', [
    ['metadata', 1, 'CosiMetadata'],
    ['spec', 2, 'Spec'],
  ]),
);
root.add(
  type('GetRequest', [
    ['namespace', 1, 'string'],
    ['type', 2, 'string'],
    ['id', 3, 'string'],
  ]),
);
root.add(type('GetResponse', [['resource', 1, 'Resource']]));
root.add(
  type('WatchOptions', [
    ['bootstrap_contents', 1, 'bool'],
    ['tail_events', 2, 'int32'],
    ['aggregated', 5, 'bool'],
  ]),
);
root.add(
  type('WatchRequest', [
    ['namespace', 1, 'string'],
    ['type', 2, 'string'],
    ['id', 3, 'string', 'optional'],
    ['options', 4, 'WatchOptions'],
    ['api_version', 5, 'int32'],
  ]),
);
root.add(
  type('CosiEvent', [
    ['resource', 1, 'Resource'],
    ['event_type', 2, 'int32'],
    ['old', 3, 'Resource'],
    ['error', 4, 'string', 'optional'],
    ['bookmark', 5, 'bytes', 'optional'],
  ]),
);
root.add(type('WatchResponse', [['event', 1, 'CosiEvent', 'repeated']]));
root.add(type('EtcdMemberListRequest', [['query_local', 1, 'bool']]));
root.add(
  type('EtcdMember', [
    ['id', 2, 'uint64'],
    ['hostname', 3, 'string'],
    ['peer_urls', 4, 'string', 'repeated'],
    ['client_urls', 5, 'string', 'repeated'],
    ['is_learner', 6, 'bool'],
  ]),
);
root.add(
  type('EtcdMembers', [
    ['metadata', 1, 'Metadata'],
    ['legacy_members', 2, 'string', 'repeated'],
    ['members', 3, 'EtcdMember', 'repeated'],
  ]),
);
root.add(type('EtcdMemberListResponse', [['messages', 1, 'EtcdMembers', 'repeated']]));
root.add(
  type('EtcdMemberStatus', [
    ['protocol_version', 1, 'string'],
    ['db_size', 2, 'int64'],
    ['db_size_in_use', 3, 'int64'],
    ['leader', 4, 'uint64'],
    ['raft_index', 5, 'uint64'],
    ['raft_term', 6, 'uint64'],
    ['raft_applied_index', 7, 'uint64'],
    ['errors', 8, 'string', 'repeated'],
    ['is_learner', 9, 'bool'],
    ['member_id', 10, 'uint64'],
    ['storage_version', 11, 'string'],
  ]),
);
root.add(
  type('EtcdStatus', [
    ['metadata', 1, 'Metadata'],
    ['member_status', 2, 'EtcdMemberStatus'],
  ]),
);
root.add(type('EtcdStatusResponse', [['messages', 1, 'EtcdStatus', 'repeated']]));
root.add(new Enum('AlarmType', { NONE: 0, NOSPACE: 1, CORRUPT: 2 }));
root.add(
  type('EtcdMemberAlarm', [
    ['member_id', 1, 'uint64'],
    ['alarm', 2, 'AlarmType'],
  ]),
);
root.add(
  type('EtcdAlarm', [
    ['metadata', 1, 'Metadata'],
    ['member_alarms', 2, 'EtcdMemberAlarm', 'repeated'],
  ]),
);
root.add(type('EtcdAlarmListResponse', [['messages', 1, 'EtcdAlarm', 'repeated']]));
root.add(
  type('EtcdForfeitLeadership', [
    ['metadata', 1, 'Metadata'],
    ['member', 2, 'string'],
  ]),
);
root.add(type('EtcdForfeitLeadershipResponse', [['messages', 1, 'EtcdForfeitLeadership', 'repeated']]));
root.resolveAll();

const T = (name: string): protobuf.Type => root.lookupType(name);
const decodeIndependent = (name: string, bytes: Uint8Array): Record<string, unknown> =>
  // bytes come back as base64 strings
  T(name).toObject(T(name).decode(bytes), {
    longs: Number,
    enums: Number,
    bytes: String,
    defaults: false,
    oneofs: true,
  });
const b64 = (s: string | number[]): string =>
  Buffer.from(typeof s === 'string' ? s : Uint8Array.from(s)).toString('base64');
const encodeIndependent = (name: string, obj: Record<string, unknown>): Uint8Array => {
  const t = T(name);
  const err = t.verify(obj);
  assert.equal(err, null, `independent ${name}: ${err}`);
  return t.encode(t.fromObject(obj)).finish();
};

// uint64 given as decimal strings (verify() accepts only numbers and Longs; fromObject parses strings with `long`).
const encodeLong = (name: string, obj: Record<string, unknown>): Uint8Array =>
  T(name).encode(T(name).fromObject(obj)).finish();

describe('Talos proto wire compatibility (independent protobufjs description)', function () {
  describe('ours → independent', function () {
    it('machine.VersionResponse with per-node metadata and google.rpc.Status', function () {
      const bytes = VersionResponse.encode(
        VersionResponse.fromPartial({
          messages: [
            {
              metadata: { hostname: '10.5.0.2', error: 'boom', status: { code: 14, message: 'down', details: [] } },
              version: { tag: 'v1.14.0', sha: 'abc', built: 'b', goVersion: 'go1.24', os: 'linux', arch: 'arm64' },
              platform: { name: 'aws', mode: 'cloud' },
              features: { rbac: true },
            },
          ],
        }),
      ).finish();
      assert.deepEqual(decodeIndependent('VersionResponse', bytes), {
        messages: [
          {
            metadata: { hostname: '10.5.0.2', error: 'boom', status: { code: 14, message: 'down' } },
            version: { tag: 'v1.14.0', sha: 'abc', built: 'b', go_version: 'go1.24', os: 'linux', arch: 'arm64' },
            platform: { name: 'aws', mode: 'cloud' },
            features: { rbac: true },
          },
        ],
      });
    });

    it('machine.UpgradeRequest (reboot_mode = 5), RebootRequest FORCE = 2, ReadRequest', function () {
      const up = UpgradeRequest.encode({
        image: 'ghcr.io/siderolabs/installer:v1.12.6',
        preserve: true,
        stage: true,
        force: true,
        rebootMode: 1,
      }).finish();
      assert.deepEqual(decodeIndependent('UpgradeRequest', up), {
        image: 'ghcr.io/siderolabs/installer:v1.12.6',
        preserve: true,
        stage: true,
        force: true,
        reboot_mode: 1,
      });
      assert.deepEqual(decodeIndependent('RebootRequest', RebootRequest.encode({ mode: 2 }).finish()), { mode: 2 });
      assert.deepEqual(
        decodeIndependent('ReadRequest', ReadRequest.encode({ path: '/proc/sys/kernel/random/boot_id' }).finish()),
        { path: '/proc/sys/kernel/random/boot_id' },
      );
    });

    it('machine.ApplyConfigurationRequest (data = 1, mode = 4, dry_run = 5, try_mode_timeout = 6)', function () {
      const bytes = ApplyConfigurationRequest.encode({
        data: Buffer.from('version: v1alpha1\n'),
        mode: 2,
        dryRun: true,
        tryModeTimeout: { seconds: 60, nanos: 0 },
      }).finish();
      assert.deepEqual(decodeIndependent('ApplyConfigurationRequest', bytes), {
        data: b64('version: v1alpha1\n'),
        mode: 2,
        dry_run: true,
        try_mode_timeout: { seconds: 60 },
      });
    });

    it('machine.LifecycleServiceUpgradeRequest and ImageServicePullRequest (image_ref = 3)', function () {
      const lc = LifecycleServiceUpgradeRequest.encode({
        containerd: { driver: 1, namespace: 1 },
        source: { imageName: 'factory.talos.dev/metal-installer/x:v1.14.0' },
      }).finish();
      assert.deepEqual(decodeIndependent('LifecycleServiceUpgradeRequest', lc), {
        containerd: { driver: 1, namespace: 1 },
        source: { image_name: 'factory.talos.dev/metal-installer/x:v1.14.0' },
      });
      const pull = ImageServicePullRequest.encode({
        containerd: { driver: 1, namespace: 1 },
        imageRef: 'ghcr.io/a:b',
      }).finish();
      assert.deepEqual(decodeIndependent('ImageServicePullRequest', pull), {
        containerd: { driver: 1, namespace: 1 },
        image_ref: 'ghcr.io/a:b',
      });
    });

    it('cosi.resource.GetResponse (labels = 10, annotations = 11, timestamps) and WatchRequest (optional id)', function () {
      const created = new Date('2026-08-01T10:00:00.250Z');
      const bytes = GetResponse.encode({
        resource: {
          metadata: {
            namespace: 'runtime',
            type: 'MachineStatuses.runtime.talos.dev',
            id: 'machine',
            version: '3',
            owner: 'o',
            phase: 'running',
            created,
            updated: created,
            finalizers: ['f'],
            labels: { l: 'v' },
            annotations: { 'talos.dev/yaml-spec': '1' },
          },
          spec: { protoSpec: Buffer.from([8, 4]), yamlSpec: 'stage: running\n' },
        },
      }).finish();
      assert.deepEqual(decodeIndependent('GetResponse', bytes), {
        resource: {
          metadata: {
            namespace: 'runtime',
            type: 'MachineStatuses.runtime.talos.dev',
            id: 'machine',
            version: '3',
            owner: 'o',
            phase: 'running',
            created: { seconds: 1785578400, nanos: 250_000_000 },
            updated: { seconds: 1785578400, nanos: 250_000_000 },
            finalizers: ['f'],
            labels: { l: 'v' },
            annotations: { 'talos.dev/yaml-spec': '1' },
          },
          spec: { proto_spec: b64([8, 4]), yaml_spec: 'stage: running\n' },
        },
      });
      const w = WatchRequest.encode({
        namespace: 'runtime',
        type: 'BootIDs.runtime.talos.dev',
        id: '',
        options: {
          bootstrapContents: true,
          tailEvents: 0,
          labelQuery: [],
          idQuery: undefined,
          aggregated: false,
          bootstrapBookmark: false,
        },
        apiVersion: 1,
      }).finish();
      // An explicitly set optional empty string is still on the wire (presence), unlike plain proto3 fields.
      assert.deepEqual(decodeIndependent('WatchRequest', w), {
        namespace: 'runtime',
        type: 'BootIDs.runtime.talos.dev',
        id: '',
        options: { bootstrap_contents: true },
        api_version: 1,
      });
      assert.deepEqual(
        GetRequest.decode(
          encodeIndependent('GetRequest', {
            namespace: 'config',
            type: 'MachineConfigs.config.talos.dev',
            id: 'v1alpha1',
          }),
        ),
        {
          namespace: 'config',
          type: 'MachineConfigs.config.talos.dev',
          id: 'v1alpha1',
          options: undefined,
        },
      );
    });
  });

  describe('independent → ours', function () {
    it('machine.UpgradeResponse (ack = 2, actor_id = 3) and RebootResponse (actor_id = 2)', function () {
      const up = UpgradeResponse.decode(
        encodeIndependent('UpgradeResponse', { messages: [{ ack: 'Upgrade request received', actor_id: 'a-1' }] }),
      );
      assert.equal(up.messages[0]?.ack, 'Upgrade request received');
      assert.equal(up.messages[0]?.actorId, 'a-1');
      assert.equal(up.messages[0]?.metadata, undefined, 'a single node sends no metadata');
      const rb = RebootResponse.decode(
        encodeIndependent('RebootResponse', {
          messages: [{ metadata: { hostname: 'n1', error: 'x' }, actor_id: 'r-1' }],
        }),
      );
      assert.equal(rb.messages[0]?.actorId, 'r-1');
      assert.equal(rb.messages[0]?.metadata?.hostname, 'n1');
      assert.equal(rb.messages[0]?.metadata?.error, 'x');
    });

    it('machine.VersionResponse', function () {
      const v = VersionResponse.decode(
        encodeIndependent('VersionResponse', {
          messages: [
            {
              version: { tag: 'v1.12.6', arch: 'amd64', go_version: 'go1.24' },
              platform: { name: 'metal', mode: 'metal' },
            },
          ],
        }),
      );
      assert.equal(v.messages[0]?.version?.tag, 'v1.12.6');
      assert.equal(v.messages[0]?.version?.goVersion, 'go1.24');
      assert.equal(v.messages[0]?.platform?.name, 'metal');
      assert.equal(v.messages[0]?.features, undefined, 'maintenance mode: features unset');
    });

    it('machine.ApplyConfigurationResponse (mode = 3, mode_details = 4)', function () {
      const a = ApplyConfigurationResponse.decode(
        encodeIndependent('ApplyConfigurationResponse', {
          messages: [{ warnings: ['w'], mode: 2, mode_details: 'Applied' }],
        }),
      );
      assert.deepEqual(a.messages[0]?.warnings, ['w']);
      assert.equal(a.messages[0]?.mode, ApplyConfigurationRequest.fromPartial({ mode: 2 }).mode);
      assert.equal(a.messages[0]?.modeDetails, 'Applied');
    });

    it('LifecycleServiceUpgradeResponse oneof (message = 1 | exit_code = 2), including exit code 0', function () {
      const msg = LifecycleServiceUpgradeResponse.decode(
        encodeIndependent('LifecycleServiceUpgradeResponse', { progress: { message: 'writing' } }),
      );
      assert.deepEqual(msg.progress, { message: 'writing', exitCode: undefined });
      const exit0 = LifecycleServiceUpgradeResponse.decode(
        encodeIndependent('LifecycleServiceUpgradeResponse', { progress: { exit_code: 0 } }),
      );
      assert.equal(exit0.progress?.exitCode, 0, 'a oneof member keeps presence even at its zero value');
      assert.equal(exit0.progress?.message, undefined);
    });

    it('ImageServicePullResponse oneof (name = 1 | pull_progress = 2) with int64 offsets', function () {
      const p = ImageServicePullResponse.decode(
        encodeIndependent('ImageServicePullResponse', {
          pull_progress: {
            layer_id: 'sha256:1',
            progress: { status: 2, offset: 5_000_000_000, total: 6_000_000_000, elapsed: { seconds: 3 } },
          },
        }),
      );
      assert.equal(p.pullProgress?.layerId, 'sha256:1');
      assert.equal(p.pullProgress?.progress?.status, 2);
      assert.equal(p.pullProgress?.progress?.offset, 5_000_000_000);
      assert.equal(p.pullProgress?.progress?.total, 6_000_000_000);
      assert.equal(
        ImageServicePullResponse.decode(encodeIndependent('ImageServicePullResponse', { name: 'ghcr.io/a:b' })).name,
        'ghcr.io/a:b',
      );
    });

    it('common.Data (Read stream chunk) and cosi.resource.WatchResponse events', function () {
      const d = Data.decode(encodeIndependent('Data', { bytes: Buffer.from('7c1b1d4e\n') }));
      assert.equal(Buffer.from(d.bytes).toString(), '7c1b1d4e\n');
      const w = WatchResponse.decode(
        encodeIndependent('WatchResponse', {
          event: [
            {
              event_type: 1,
              resource: {
                metadata: { namespace: 'runtime', type: 'T', id: 'i', version: '7', labels: { a: 'b' } },
                spec: { yaml_spec: 'x: 1\n' },
              },
            },
            { event_type: 3 },
          ],
        }),
      );
      assert.equal(w.event.length, 2);
      assert.equal(w.event[0]?.eventType, 1);
      assert.equal(w.event[0]?.resource?.metadata?.version, '7');
      assert.deepEqual(w.event[0]?.resource?.metadata?.labels, { a: 'b' });
      assert.equal(w.event[0]?.resource?.spec?.yamlSpec, 'x: 1\n');
      assert.equal(w.event[1]?.eventType, 3);
    });

    it('machine.Etcd* (member IDs above 2^53 exact as decimal strings; status = 2, alarms = 2, forfeit member = 2)', function () {
      const big = '17134578135346357761'; // > 2^64/2, as etcd generates
      const ml = EtcdMemberListResponse.decode(
        encodeLong('EtcdMemberListResponse', {
          messages: [
            {
              legacy_members: ['cp-1'],
              members: [
                {
                  id: big,
                  hostname: 'cp-1',
                  peer_urls: ['https://10.5.0.2:2380'],
                  client_urls: ['https://10.5.0.2:2379'],
                  is_learner: true,
                },
              ],
            },
          ],
        }),
      );
      assert.deepEqual(ml.messages[0]?.members[0], {
        id: big,
        hostname: 'cp-1',
        peerUrls: ['https://10.5.0.2:2380'],
        clientUrls: ['https://10.5.0.2:2379'],
        isLearner: true,
      });
      assert.deepEqual(ml.messages[0]?.legacyMembers, ['cp-1']);
      const st = EtcdStatusResponse.decode(
        encodeLong('EtcdStatusResponse', {
          messages: [
            {
              member_status: {
                protocol_version: '3.6.12',
                db_size: 4096,
                db_size_in_use: 2048,
                leader: big,
                raft_index: 1234,
                raft_term: 7,
                raft_applied_index: 1230,
                errors: ['e'],
                member_id: '1',
                storage_version: '3.6.0',
              },
            },
          ],
        }),
      );
      assert.deepEqual(st.messages[0]?.memberStatus, {
        protocolVersion: '3.6.12',
        dbSize: 4096,
        dbSizeInUse: 2048,
        leader: big,
        raftIndex: 1234,
        raftTerm: 7,
        raftAppliedIndex: 1230,
        errors: ['e'],
        isLearner: false,
        memberId: '1',
        storageVersion: '3.6.0',
      });
      const al = EtcdAlarmListResponse.decode(
        encodeLong('EtcdAlarmListResponse', {
          messages: [
            {
              member_alarms: [
                { member_id: big, alarm: 1 },
                { member_id: '2', alarm: 2 },
              ],
            },
          ],
        }),
      );
      assert.deepEqual(al.messages[0]?.memberAlarms, [
        { memberId: big, alarm: 1 },
        { memberId: '2', alarm: 2 },
      ]);
      const ff = EtcdForfeitLeadershipResponse.decode(
        encodeLong('EtcdForfeitLeadershipResponse', { messages: [{ member: 'cp-2' }] }),
      );
      assert.equal(ff.messages[0]?.member, 'cp-2');
      assert.deepEqual(
        decodeIndependent('EtcdMemberListRequest', EtcdMemberListRequest.encode({ queryLocal: true }).finish()),
        { query_local: true },
      );
      const back = T('EtcdMemberListResponse').toObject(
        T('EtcdMemberListResponse').decode(EtcdMemberListResponse.encode(ml).finish()),
        { longs: String },
      );
      assert.equal((back as { messages: { members: { id: string }[] }[] }).messages[0]?.members[0]?.id, big);
    });
  });
});
