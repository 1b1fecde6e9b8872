// Contract tests: the product's Talos client (controller/talos) against the Talos simulator
// (test/lab/talos), over mTLS, for a 1.12 node (legacy Upgrade flow) and a 1.14 node (Pull →
// LifecycleService.Upgrade → Reboot), through every operation and every scripted fault.
// The Kubernetes side is a recording FleetControl (Talos-only tests).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { parse as parseYaml, stringify } from 'yaml';
import {
  TalosApiError,
  TalosErrorKind,
  createTalosClient,
  talosChannelStats,
  type InstallResult,
  type TalosClient,
  type TalosClientOptions,
} from '../../controller/talos/index.js';
import type { FleetNodeSpec } from '../lab/fleet/types.js';
import { freePort } from '../lab/net.js';
import { type LabDir, makeLabDir } from '../lab/process.js';
import {
  createRecordingFleet,
  startTalosSimulator,
  type RecordingFleet,
  type TalosSimulator,
} from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';
import { testContext as op } from '../support/op-context.js';

const SCHEMATIC = randomBytes(32).toString('hex');
const NEW_SCHEMATIC = randomBytes(32).toString('hex');
const installer = (tag: string, schematic = SCHEMATIC): string =>
  `factory.talos.dev/metal-installer/${schematic}:${tag}`;

const FAST: TalosClientOptions = {
  callTimeoutMs: 2000,
  streamTimeoutMs: 5000,
  maxAttempts: 4,
  backoff: { initialMs: 20, maxMs: 200, factor: 2 },
  idleCloseMs: 0,
};

function errorOf(p: Promise<unknown>): Promise<TalosApiError> {
  return p.then(
    () => assert.fail('expected the call to fail'),
    (err: unknown) => {
      assert.ok(err instanceof TalosApiError, `expected TalosApiError, got ${String(err)}`);
      return err;
    },
  );
}

describe('Talos client ↔ simulator contract (mTLS)', function () {
  this.timeout(30_000);
  let dir: LabDir;
  let fleet: RecordingFleet;
  let sim: TalosSimulator;
  let client: TalosClient;
  let ip = 20;
  const nodeIp = (): string => `127.0.77.${ip++}`;

  /** A fresh node per test keeps tests independent; returns its IP (how the rollout addresses nodes). */
  const specs: FleetNodeSpec[] = [
    {
      name: 'cp-1',
      role: 'controlplane',
      talosVersion: 'v1.13.9',
      kubernetesVersion: 'v1.35.4',
      schematic: SCHEMATIC,
      internalIP: nodeIp(),
    },
  ];
  const legacyNodes: string[] = [];
  const lifecycleNodes: string[] = [];
  for (let i = 0; i < 30; i++) {
    const a = {
      name: `w112-${i}`,
      role: 'worker' as const,
      talosVersion: 'v1.12.6',
      kubernetesVersion: 'v1.35.4',
      schematic: SCHEMATIC,
      internalIP: nodeIp(),
    };
    const b = {
      name: `w114-${i}`,
      role: 'worker' as const,
      talosVersion: 'v1.14.0',
      kubernetesVersion: 'v1.35.4',
      schematic: SCHEMATIC,
      internalIP: nodeIp(),
    };
    specs.push(a, b);
    legacyNodes.push(a.internalIP);
    lifecycleNodes.push(b.internalIP);
  }
  const take = (list: string[]): string => {
    const n = list.shift();
    if (!n) throw new Error('test node pool exhausted');
    return n;
  };

  before(async function () {
    dir = makeLabDir('talos-contract');
    fleet = createRecordingFleet(specs);
    sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: false });
    client = createTalosClient({ endpoints: [sim.endpoint], secret: sim.secretData }, FAST);
  });

  after(async function () {
    client?.close();
    await sim?.stop();
    dir?.remove();
  });

  /** The 1.13+ upgrade up to the reboot: pull, then write the image. */
  const lifecycleUpgrade = async (node: string, image: string): Promise<InstallResult> => {
    await client.pullImage(op(), node, image);
    return client.installImage(op(), node, image);
  };

  const waitBooted = (node: string, fromBootId: string, timeoutMs = 5000) =>
    waitFor(
      async () => {
        try {
          const id = await client.identity(op(), node);
          const st = await client.machineStatus(op(), node);
          return id.bootId !== fromBootId && st.stage === 'running' && st.ready ? id : undefined;
        } catch (err) {
          if (err instanceof TalosApiError && err.transient) return undefined;
          throw err;
        }
      },
      { timeoutMs, intervalMs: 25, description: `node ${node} to boot with a new boot ID` },
    );

  describe('reads', function () {
    it('version and boot ID of a 1.12 node (boot ID via MachineService.Read)', async function () {
      const n = take(legacyNodes);
      const id = await client.identity(op(), n);
      assert.equal(id.tag, 'v1.12.6');
      assert.equal(id.platform, 'metal');
      assert.equal(id.arch, 'amd64');
      assert.equal(id.configLoaded, true);
      assert.equal(id.bootId, sim.node(n).bootId);
    });

    it('version and boot ID of a 1.14 node (boot ID via COSI BootIDs)', async function () {
      const n = take(lifecycleNodes);
      const id = await client.identity(op(), n);
      assert.equal(id.tag, 'v1.14.0');
      assert.equal(id.bootId, sim.node(n).bootId);
    });

    // BootIDs is registered from v1.14.0-alpha.2; a 1.13 node refuses the type, PermissionDenied "not
    // supported" (internal/app/resources/access.go), so the client's version gate must send it to Read.
    it('version and boot ID of a 1.13 node, which has no BootIDs type (boot ID via MachineService.Read)', async function () {
      const n = specs[0]?.internalIP ?? '';
      const id = await client.identity(op(), n);
      assert.equal(id.tag, 'v1.13.9');
      assert.equal(id.bootId, sim.node(n).bootId);
    });

    it('a node can be addressed by name as well as by IP', async function () {
      const n = take(legacyNodes);
      const byName = await client.version(op(), sim.node(n).name);
      assert.equal(byName.tag, 'v1.12.6');
    });

    it('running schematic, platform and extensions from COSI ExtensionStatuses', async function () {
      const n = take(lifecycleNodes);
      const s = await client.schematic(op(), n);
      assert.equal(s.schematic, SCHEMATIC);
      assert.equal(s.platform, 'metal');
      assert.deepEqual(s.extensions.map((e) => e.name).sort(), ['iscsi-tools', 'qemu-guest-agent']);
    });

    it("Secure Boot from upstream's SecurityStates.talos.dev (runtime/security_status.go; a real node refuses any other type name)", async function () {
      const n = take(lifecycleNodes);
      assert.equal(await client.secureBoot(op(), n), false);
      sim.node(n).secureBoot = true;
      assert.equal(await client.secureBoot(op(), n), true);
    });

    it('machine status: running and ready', async function () {
      const st = await client.machineStatus(op(), take(legacyNodes));
      assert.deepEqual(st, { stage: 'running', ready: true, unmetConditions: [] });
    });

    it('reads the machine config and applies a change with NO_REBOOT (dry run first)', async function () {
      const n = take(lifecycleNodes);
      const before = await client.readConfig(op(), n);
      const doc = parseYaml(before) as {
        version: string;
        machine: { type: string; kubelet: { image: string }; network: { hostname: string } };
      };
      assert.equal(doc.version, 'v1alpha1');
      assert.equal(doc.machine.type, 'worker');
      assert.equal(doc.machine.network.hostname, sim.node(n).name);
      doc.machine.kubelet.image = 'ghcr.io/siderolabs/kubelet:v1.36.3';
      const next = stringify(doc);
      const dry = await client.applyConfig(op(), n, next, { dryRun: true });
      assert.match(dry.modeDetails, /Dry run summary/);
      assert.equal(await client.readConfig(op(), n), before, 'a dry run changes nothing');
      const applied = await client.applyConfig(op(), n, next);
      assert.equal(applied.mode, 'NO_REBOOT');
      assert.equal(await client.readConfig(op(), n), next);
      assert.equal(sim.node(n).bootId, (await client.identity(op(), n)).bootId, 'NO_REBOOT does not reboot');
    });

    it('rejects a config without a v1alpha1 document as InvalidArgument naming the node', async function () {
      const n = take(lifecycleNodes);
      const err = await errorOf(
        client.applyConfig(op(), n, 'apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: x\n'),
      );
      assert.equal(err.kind, TalosErrorKind.InvalidArgument);
      assert.equal(err.node, n);
      assert.match(err.message, new RegExp(n.replace(/\./g, '\\.')));
    });

    it('an unknown node fails as apid does (UNAVAILABLE dial error), with the node in the error', async function () {
      const c = createTalosClient({ endpoints: [sim.endpoint], secret: sim.secretData }, { ...FAST, maxAttempts: 2 });
      try {
        const err = await errorOf(c.version(op(), '127.0.78.250'));
        assert.equal(err.kind, TalosErrorKind.Unavailable);
        assert.equal(err.node, '127.0.78.250');
        assert.match(err.message, /127\.0\.78\.250/);
        assert.match(err.message, /dial tcp 127\.0\.78\.250:50000/);
      } finally {
        c.close();
      }
    });
  });

  describe('legacy flow (Talos 1.12: MachineService.Upgrade, the node reboots itself)', function () {
    it('acks, goes down (Node NotReady via the fleet), comes back on the new version with a new boot ID', async function () {
      const n = take(legacyNodes);
      const name = sim.node(n).name;
      const before = await client.identity(op(), n);
      const res = await client.legacyUpgrade(op(), n, installer('v1.13.9', NEW_SCHEMATIC));
      assert.equal(res.ack, 'Upgrade request received');
      assert.match(res.actorId, /^[0-9a-f-]{36}$/);
      const after = await waitBooted(n, before.bootId);
      assert.equal(after.tag, 'v1.13.9');
      assert.equal((await client.schematic(op(), n)).schematic, NEW_SCHEMATIC);
      const calls = fleet.calls.filter((c) => c.name === name).map((c) => c.op);
      assert.deepEqual(calls, ['takeDown', 'bringUp']);
      const up = fleet.calls.find((c) => c.name === name && c.op === 'bringUp');
      assert.equal(up?.opts?.talosVersion, 'v1.13.9');
      assert.equal(up?.opts?.bootId, after.bootId);
    });

    it('calls to a node that is down fail as Unavailable and are classified transient', async function () {
      const n = take(legacyNodes);
      sim.faults.set(n, { neverComesBack: true });
      await client.legacyUpgrade(op(), n, installer('v1.13.9'));
      await waitFor(() => sim.node(n).phase === 'down', { timeoutMs: 3000, description: 'node down' });
      const c = createTalosClient({ endpoints: [sim.endpoint], secret: sim.secretData }, { ...FAST, maxAttempts: 2 });
      try {
        const err = await errorOf(c.version(op(), n));
        assert.equal(err.kind, TalosErrorKind.Unavailable);
        assert.equal(err.transient, true);
        assert.match(err.message, /connection refused/);
      } finally {
        c.close();
      }
    });

    it('a bad installer reference fails the Upgrade RPC (UNKNOWN → OperationFailed) and nothing reboots', async function () {
      const n = take(legacyNodes);
      const before = sim.node(n).bootId;
      const err = await errorOf(client.legacyUpgrade(op(), n, 'not-an-image'));
      assert.equal(err.kind, TalosErrorKind.OperationFailed);
      assert.match(err.message, /error validating installer image "not-an-image"/);
      assert.equal(sim.node(n).bootId, before);
      assert.equal(sim.node(n).phase, 'running');
    });
  });

  describe('lifecycle flow (Talos 1.14: Pull → LifecycleService.Upgrade → Reboot)', function () {
    it('pre-pulls the installer image with progress', async function () {
      const n = take(lifecycleNodes);
      const progress: string[] = [];
      const name = await client.pullImage(op(), n, installer('v1.14.1'), {
        onProgress: (p) => progress.push(`${p.layerId}:${p.status}`),
      });
      assert.equal(name, installer('v1.14.1'));
      assert.ok(progress.includes('sha256:4f4fb700ef54:EXTRACT_COMPLETE'), progress.join(','));
    });

    // A node with an ImageVerificationConfig rule pulls by the digest it verified and answers
    // `name@sha256:…` (internal/pkg/containers/image/pull.go, verify/verify.go): the product keeps
    // installing the reference it pulled, which the node's aliases still name (aliases.go).
    it('a node that verifies image signatures answers the digest-pinned name; the install by the tag still finds the image', async function () {
      const n = take(lifecycleNodes);
      sim.faults.set(n, { imageVerification: true });
      const name = await client.pullImage(op(), n, installer('v1.14.1'));
      assert.match(name, new RegExp(`^factory\\.talos\\.dev/metal-installer/${SCHEMATIC}@sha256:[0-9a-f]{64}$`));
      const res = await client.installImage(op(), n, installer('v1.14.1'));
      assert.equal(res.exitCode, 0);
      assert.equal(sim.node(n).staged?.version, 'v1.14.1');
    });

    it('writes the image without rebooting, returns the messages and exit code 0; Reboot then boots it', async function () {
      const n = take(lifecycleNodes);
      const name = sim.node(n).name;
      const before = await client.identity(op(), n);
      const res = await lifecycleUpgrade(n, installer('v1.14.1', NEW_SCHEMATIC));
      assert.equal(res.exitCode, 0);
      assert.ok(
        res.messages.some((m) => m.includes('writing boot assets for v1.14.1')),
        res.messages.join('\n'),
      );
      const still = await client.identity(op(), n);
      assert.equal(still.tag, 'v1.14.0', 'no reboot yet');
      assert.equal(still.bootId, before.bootId);
      assert.equal(fleet.calls.filter((c) => c.name === name).length, 0, 'Node untouched until Reboot');
      const { actorId } = await client.reboot(op(), n);
      assert.match(actorId, /^[0-9a-f-]{36}$/);
      const after = await waitBooted(n, before.bootId);
      assert.equal(after.tag, 'v1.14.1');
      assert.equal((await client.schematic(op(), n)).schematic, NEW_SCHEMATIC);
      assert.deepEqual(
        fleet.calls.filter((c) => c.name === name).map((c) => c.op),
        ['takeDown', 'bringUp'],
      );
    });

    it('a 1.12 node has no LifecycleService/ImageService (UNIMPLEMENTED → Unimplemented)', async function () {
      const n = take(legacyNodes);
      const err = await errorOf(client.pullImage(op(), n, installer('v1.13.9')));
      assert.equal(err.kind, TalosErrorKind.Unimplemented);
      assert.match(err.message, /unknown service machine\.ImageService/);
    });

    it('reboot modes: FORCE exists on 1.14, a plain reboot keeps the version', async function () {
      const n = take(lifecycleNodes);
      const before = await client.identity(op(), n);
      await client.reboot(op(), n, 'force');
      const after = await waitBooted(n, before.bootId);
      assert.equal(after.tag, 'v1.14.0');
    });
  });

  describe('faults', function () {
    it('upgrade RPC error (legacy): the scripted status reaches the caller with the node named', async function () {
      const n = take(legacyNodes);
      sim.faults.set(n, { upgradeError: { code: 9, message: 'failed to acquire upgrade mutex: etcd lock held' } });
      const err = await errorOf(client.legacyUpgrade(op(), n, installer('v1.13.9')));
      assert.equal(err.kind, TalosErrorKind.FailedPrecondition);
      assert.equal(err.node, n);
      assert.match(err.message, /etcd lock held/);
    });

    it('upgrade RPC error (lifecycle) and pull error', async function () {
      const n = take(lifecycleNodes);
      sim.faults.set(n, { pullError: { code: 13, message: 'failed to pull image: 503 Service Unavailable' } });
      const pullErr = await errorOf(lifecycleUpgrade(n, installer('v1.14.1')));
      assert.equal(pullErr.method, 'ImageService.Pull');
      assert.match(pullErr.message, /503/);
      sim.faults.clear(n);
      sim.faults.set(n, { upgradeError: { code: 13, message: 'upgrade failed: disk full' } });
      const upErr = await errorOf(lifecycleUpgrade(n, installer('v1.14.1')));
      assert.equal(upErr.method, 'LifecycleService.Upgrade');
      assert.equal(upErr.kind, TalosErrorKind.OperationFailed);
    });

    it('install failure exit code (lifecycle): returned, nothing staged, Reboot keeps the old version', async function () {
      const n = take(lifecycleNodes);
      sim.faults.set(n, { installExitCode: 3 });
      const res = await lifecycleUpgrade(n, installer('v1.14.1'));
      assert.equal(res.exitCode, 3);
      assert.ok(res.messages.some((m) => /installer failed: exit status 3/.test(m)));
      const before = await client.identity(op(), n);
      await client.reboot(op(), n);
      const after = await waitBooted(n, before.bootId);
      assert.equal(after.tag, 'v1.14.0');
    });

    it('an Upgrade stream that never ends: the call gives up at its stream deadline (DeadlineExceeded), is not retried (the upgrade is not idempotent), nothing staged', async function () {
      const n = take(lifecycleNodes);
      const short = createTalosClient(
        { endpoints: [sim.endpoint], secret: sim.secretData },
        { ...FAST, streamTimeoutMs: 1500 },
      );
      sim.faults.set(n, { endlessInstall: true });
      try {
        await short.pullImage(op(), n, installer('v1.14.1'));
        const since = sim.lastCallSeq();
        const err = await errorOf(short.installImage(op(), n, installer('v1.14.1')));
        assert.equal(err.kind, TalosErrorKind.DeadlineExceeded, err.message);
        assert.match(err.message, /LifecycleService\.Upgrade/);
        assert.equal(sim.callLog({ node: n, method: 'LifecycleService.Upgrade', since }).length, 1);
        assert.equal(sim.node(n).staged, undefined);
      } finally {
        sim.faults.clear(n);
        short.close();
      }
    });

    it('install failure (legacy): acked, then the node stays up on its version without a reboot', async function () {
      const n = take(legacyNodes);
      sim.faults.set(n, { installExitCode: 1 });
      const before = await client.identity(op(), n);
      await client.legacyUpgrade(op(), n, installer('v1.13.9'));
      await waitFor(() => sim.node(n).history.some((h) => h.startsWith('upgrade failed')), {
        timeoutMs: 3000,
        description: 'legacy install failure',
      });
      const after = await client.identity(op(), n);
      assert.equal(after.tag, 'v1.12.6');
      assert.equal(after.bootId, before.bootId);
    });

    it('never comes back: down after the upgrade until powered on', async function () {
      const n = take(lifecycleNodes);
      sim.faults.set(n, { neverComesBack: true });
      const before = await client.identity(op(), n);
      await lifecycleUpgrade(n, installer('v1.14.1'));
      await client.reboot(op(), n);
      await waitFor(() => sim.node(n).phase === 'down', { timeoutMs: 3000, description: 'node down' });
      // Much longer than a reboot takes with these timings: it stays down.
      const c = createTalosClient({ endpoints: [sim.endpoint], secret: sim.secretData }, { ...FAST, maxAttempts: 3 });
      try {
        assert.equal((await errorOf(c.version(op(), n))).kind, TalosErrorKind.Unavailable);
      } finally {
        c.close();
      }
      sim.faults.powerOn(n);
      const after = await waitBooted(n, before.bootId);
      assert.equal(after.tag, 'v1.14.1');
    });

    it('comes back slowly: stays down for the extra boot time', async function () {
      const n = take(legacyNodes);
      sim.faults.set(n, { slowBootMs: 600 });
      const before = await client.identity(op(), n);
      await client.legacyUpgrade(op(), n, installer('v1.13.9'));
      await waitFor(() => sim.node(n).phase === 'down', { timeoutMs: 3000, description: 'node down' });
      const downAt = Date.now();
      await waitBooted(n, before.bootId, 8000);
      assert.ok(Date.now() - downAt >= 600, `down for ${Date.now() - downAt} ms`);
    });

    it('boots the old partition: new boot ID, old version', async function () {
      const n = take(legacyNodes);
      sim.faults.set(n, { bootsOldPartition: true });
      const before = await client.identity(op(), n);
      await client.legacyUpgrade(op(), n, installer('v1.13.9'));
      const after = await waitBooted(n, before.bootId);
      assert.equal(after.tag, 'v1.12.6');
      assert.notEqual(after.bootId, before.bootId);
    });

    it('API unreachable for a while: retried with backoff until it answers; one attempt fails Unavailable', async function () {
      const n = take(lifecycleNodes);
      sim.faults.unreachable(n, 300);
      const once = createTalosClient(
        { endpoints: [sim.endpoint], secret: sim.secretData },
        { ...FAST, maxAttempts: 1 },
      );
      try {
        const err = await errorOf(once.version(op(), n));
        assert.equal(err.kind, TalosErrorKind.Unavailable);
        assert.match(err.message, /i\/o timeout/);
      } finally {
        once.close();
      }
      const patient = createTalosClient(
        { endpoints: [sim.endpoint], secret: sim.secretData },
        { ...FAST, maxAttempts: 8, backoff: { initialMs: 100, maxMs: 400, factor: 2 } },
      );
      try {
        assert.equal((await patient.version(op(), n)).tag, 'v1.14.0');
      } finally {
        patient.close();
      }
    });

    it('slow responses: a call slower than its deadline fails DeadlineExceeded; a longer deadline succeeds', async function () {
      const n = take(lifecycleNodes);
      sim.faults.set(n, { slowResponseMs: 300 });
      const hasty = createTalosClient(
        { endpoints: [sim.endpoint], secret: sim.secretData },
        { ...FAST, callTimeoutMs: 100, maxAttempts: 2 },
      );
      try {
        const err = await errorOf(hasty.version(op(), n));
        assert.equal(err.kind, TalosErrorKind.DeadlineExceeded);
        assert.equal(err.transient, true);
      } finally {
        hasty.close();
      }
      assert.equal((await client.version(op(), n)).tag, 'v1.14.0');
    });

    it('malformed answers: a truncated, oversized or empty Version response fails with a clear error, is not taken for a version, and the next intact answer works', async function () {
      const node = take(lifecycleNodes);
      const path = '/machine.MachineService/Version';
      const expected = {
        truncated: [
          TalosErrorKind.OperationFailed,
          /for node 127\.0\.77\.\d+ via endpoint .*: INTERNAL: Response message parsing error/,
        ],
        oversized: [
          TalosErrorKind.Unknown,
          /via endpoint .*: RESOURCE_EXHAUSTED: Received message larger than max \(\d+ vs 33554432\)/,
        ],
        empty: [TalosErrorKind.Unknown, /MachineService\.Version on node 127\.0\.77\.\d+: empty response$/],
      } as const;
      try {
        for (const [fault, [kind, message]] of Object.entries(expected)) {
          sim.wireFault(path, fault as keyof typeof expected);
          const err = await errorOf(client.version(op(), node));
          assert.equal(err.kind, kind, `${fault}: ${err.message}`);
          assert.match(err.message, message);
        }
      } finally {
        sim.wireFault(path, undefined);
      }
      assert.equal((await client.version(op(), node)).tag, 'v1.14.0');
    });

    it('unknown enum values and missing fields: a Version without version.tag or a MachineStatus without a stage or with an unknown one is a transient Malformed error naming node and endpoint; an unknown pull status is shown as a number', async function () {
      const n = take(lifecycleNodes);
      const malformed = async (call: Promise<unknown>, what: RegExp): Promise<void> => {
        const err = await errorOf(call);
        assert.equal(err.kind, TalosErrorKind.Malformed, err.message);
        assert.equal(err.transient, true);
        assert.equal(err.node, n);
        assert.match(
          err.message,
          new RegExp(`on node ${n.replaceAll('.', '\\.')} via endpoint ${sim.endpoint.replaceAll('.', '\\.')} `),
        );
        assert.match(err.message, what);
        assert.match(err.message, /check that the node runs a Talos version this controller supports/);
      };
      try {
        sim.faults.set(n, { malformed: { versionWithoutTag: true } });
        await malformed(client.version(op(), n), /MachineService\.Version .* answered without version\.tag/);
        await malformed(client.identity(op(), n), /answered without version\.tag/);
        sim.faults.set(n, { malformed: { machineStage: 0 } });
        await malformed(client.machineStatus(op(), n), /answered a MachineStatus that has no machine stage/);
        sim.faults.set(n, { malformed: { machineStage: 42 } });
        await malformed(
          client.machineStatus(op(), n),
          /answered a MachineStatus that has machine stage 42, unknown to this controller/,
        );
        sim.faults.set(n, { malformed: { pullStatus: 42 } });
        const statuses = new Set<string>();
        const name = await client.pullImage(op(), n, installer('v1.14.1'), {
          onProgress: (p) => statuses.add(p.status),
        });
        assert.ok(name.includes('v1.14.1'), name);
        assert.deepEqual([...statuses], ['UNKNOWN(42)']);
      } finally {
        sim.faults.clear(n);
      }
      assert.equal((await client.version(op(), n)).tag, 'v1.14.0');
      assert.equal((await client.machineStatus(op(), n)).stage, 'running');
    });

    it('a Pull stream that sends progress forever: each attempt ends at its stream deadline (DeadlineExceeded), retried as the pull is idempotent, nothing stored', async function () {
      const n = take(lifecycleNodes);
      const short = createTalosClient(
        { endpoints: [sim.endpoint], secret: sim.secretData },
        { ...FAST, streamTimeoutMs: 1000, maxAttempts: 2 },
      );
      sim.faults.set(n, { endlessPull: true });
      const since = sim.lastCallSeq();
      let progress = 0;
      try {
        const err = await errorOf(short.pullImage(op(), n, installer('v1.14.1'), { onProgress: () => progress++ }));
        assert.equal(err.kind, TalosErrorKind.DeadlineExceeded, err.message);
        assert.match(err.message, /ImageService\.Pull for node .* via endpoint/);
        assert.ok(progress > 0, 'the stream sent progress');
        assert.equal(sim.callLog({ node: n, method: 'ImageService.Pull', since }).length, 2);
        assert.equal(sim.node(n).containerd.size, 0);
      } finally {
        sim.faults.clear(n);
        short.close();
      }
    });

    it('a stream that sends nothing (Pull, LifecycleService.Upgrade): the idle watchdog ends it long before the stream deadline with a clear error; the Upgrade is not repeated, nothing staged', async function () {
      const n = take(lifecycleNodes);
      const watched = createTalosClient(
        { endpoints: [sim.endpoint], secret: sim.secretData },
        { ...FAST, streamTimeoutMs: 120_000, streamIdleMs: 300, maxAttempts: 2 },
      );
      try {
        sim.faults.set(n, { silentStream: 'ImageService.Pull' });
        let since = sim.lastCallSeq();
        let err = await errorOf(watched.pullImage(op(), n, installer('v1.14.1')));
        assert.equal(err.kind, TalosErrorKind.DeadlineExceeded, err.message);
        assert.equal(err.transient, true);
        assert.match(
          err.message,
          /ImageService\.Pull for node .* via endpoint .* sent nothing for 300 ms; ended it — the node may be stuck/,
        );
        assert.equal(sim.callLog({ node: n, method: 'ImageService.Pull', since }).length, 2);

        sim.faults.clear(n);
        await client.pullImage(op(), n, installer('v1.14.1'));
        sim.faults.set(n, { silentStream: 'LifecycleService.Upgrade' });
        since = sim.lastCallSeq();
        err = await errorOf(watched.installImage(op(), n, installer('v1.14.1')));
        assert.equal(err.kind, TalosErrorKind.DeadlineExceeded, err.message);
        assert.match(err.message, /LifecycleService\.Upgrade for node .* sent nothing for 300 ms/);
        assert.equal(sim.callLog({ node: n, method: 'LifecycleService.Upgrade', since }).length, 1);
        assert.equal(sim.node(n).staged, undefined);
      } finally {
        sim.faults.clear(n);
        watched.close();
      }
    });

    it('mTLS rejected by the node: role ⇒ PermissionDenied, wrong CA ⇒ TlsRejected, each naming the endpoint', async function () {
      const n = take(lifecycleNodes);
      sim.faults.set(n, { tlsRejected: 'role' });
      const denied = await errorOf(client.version(op(), n));
      assert.equal(denied.kind, TalosErrorKind.PermissionDenied);
      assert.match(denied.message, new RegExp(sim.endpoint));
      sim.faults.set(n, { tlsRejected: 'wrong-ca' });
      const tls = await errorOf(client.version(op(), n));
      assert.equal(tls.kind, TalosErrorKind.TlsRejected);
      assert.equal(tls.transient, false);
      assert.match(tls.message, new RegExp(sim.endpoint));
      assert.match(tls.message, /certificate signed by unknown authority/);
    });
  });

  describe('connections', function () {
    it('fails over to the next endpoint when the first does not answer', async function () {
      const dead = `127.0.0.1:${await freePort()}`;
      const c = createTalosClient({ endpoints: [dead, sim.endpoint], secret: sim.secretData }, FAST);
      try {
        assert.equal((await c.version(op(), take(legacyNodes))).tag, 'v1.12.6');
        assert.equal(
          (await c.version(op(), take(lifecycleNodes))).tag,
          'v1.14.0',
          'sticks to the endpoint that answered',
        );
      } finally {
        c.close();
      }
    });

    it('shares one channel set per endpoint set and closes it when the last user releases it', async function () {
      const base = talosChannelStats().sets;
      const secret = { 'ca.crt': sim.caPem, 'tls.crt': sim.adminCert.cert, 'tls.key': sim.adminCert.keyTalos };
      // `localhost` (a SAN of the simulator's certificate): an endpoint set no other client uses.
      const a = createTalosClient({ endpoints: [`localhost:${sim.port}`], secret }, FAST);
      const b = createTalosClient({ endpoints: [`localhost:${sim.port}`], secret }, FAST);
      await a.version(op(), take(legacyNodes));
      await b.version(op(), take(legacyNodes));
      assert.equal(talosChannelStats().sets, base + 1);
      a.close();
      assert.equal(talosChannelStats().sets, base + 1, 'still used by b');
      b.close();
      assert.equal(talosChannelStats().sets, base);
    });

    it('accepts raw PEM with the Ed25519 `ED25519 PRIVATE KEY` label as well as base64 of PEM', async function () {
      const c = createTalosClient(
        {
          endpoints: [sim.endpoint],
          secret: { 'ca.crt': sim.caPem, 'tls.crt': sim.adminCert.cert, 'tls.key': sim.adminCert.keyTalos },
        },
        FAST,
      );
      try {
        assert.match(sim.adminCert.keyTalos, /BEGIN ED25519 PRIVATE KEY/);
        assert.equal((await c.version(op(), take(lifecycleNodes))).tag, 'v1.14.0');
      } finally {
        c.close();
      }
    });
  });
});
