// The guards' reads (controller/rollout/job/talos-facts.ts) against the Talos simulator: a legacy
// node that acknowledged Upgrade, or a lifecycle node that acknowledged Reboot, reboots while the
// pass reads its stage, version and boot ID. Wherever the reboot falls between those reads, the
// guard must see it and never call Upgrade (or Reboot) a second time. Found by chaos seed 4291: the boot ID was read from the old boot,
// the stage (retried across the reboot) from the new one, and the node was upgraded twice.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { patchJobSpec, type PatchJobStatus } from '../../schemas/patchjob.js';
import { decideJob, type TalosFacts } from '../../controller/core/job/index.js';
import { talosFacts } from '../../controller/rollout/job/talos-facts.js';
import { createTalosClient, type TalosClient, type TalosClientOptions } from '../../controller/talos/index.js';
import type { FleetNodeSpec } from '../lab/fleet/types.js';
import { type LabDir, makeLabDir } from '../lab/process.js';
import { createRecordingFleet, startTalosSimulator, type TalosSimulator } from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';
import { testContext as op } from '../support/op-context.js';

const SCHEMATIC = randomBytes(32).toString('hex');
const FROM = 'v1.12.6';
const TO = 'v1.13.2';
const IMAGE = `factory.talos.dev/metal-installer/${SCHEMATIC}:${TO}`;
const FAST: TalosClientOptions = {
  callTimeoutMs: 2000,
  streamTimeoutMs: 5000,
  maxAttempts: 4,
  backoff: { initialMs: 20, maxMs: 200, factor: 2 },
  idleCloseMs: 0,
};
/** The guard reads three times: the stage, the version, the boot ID. Case k: the node reboots while the k-th read waits (4: after all of them). */
const READS = 3;

/** One case of the guard's reads racing a reboot (see rebootDuringRead). */
interface RebootDuringRead {
  spec: FleetNodeSpec;
  /** The read during which the node reboots (after the reads when k > READS). */
  k: number;
  /** The phase the node is held in after `act`. */
  hold: 'upgrading' | 'rebooting';
  /** The call the guard must not repeat. */
  act: (node: string) => Promise<unknown>;
  /** Checks the decision on the facts the reads returned. */
  decide: (facts: TalosFacts, initialBootID: string) => void;
  /** The job's status as the guard reads it. */
  status: (initialBootID: string) => PatchJobStatus;
  target: string;
}

describe("the upgrade and reboot guards' reads vs. a node rebooting between them", function () {
  this.timeout(60_000);
  let dir: LabDir;
  let sim: TalosSimulator;
  let client: TalosClient;
  const worker = (name: string, talosVersion: string, ip: string): FleetNodeSpec => ({
    name,
    role: 'worker',
    talosVersion,
    kubernetesVersion: 'v1.35.4',
    schematic: SCHEMATIC,
    internalIP: ip,
  });
  const specs: FleetNodeSpec[] = Array.from({ length: READS + 1 }, (_, i) =>
    worker(`w-${i + 1}`, FROM, `127.0.78.${i + 10}`),
  );
  const lifecycleSpecs: FleetNodeSpec[] = Array.from({ length: READS + 1 }, (_, i) =>
    worker(`l-${i + 1}`, 'v1.14.0', `127.0.78.${i + 30}`),
  );

  before(async function () {
    dir = makeLabDir('job-talos-facts');
    sim = await startTalosSimulator({
      fleet: createRecordingFleet([...specs, ...lifecycleSpecs]),
      dir: dir.path,
      nodeListeners: false,
      timings: { upgradeMs: 50, shutdownMs: 20, rebootMs: 50, bootMs: 20 },
    });
    client = createTalosClient({ endpoints: [sim.endpoint], secret: sim.secretData }, FAST);
  });
  after(async function () {
    client?.close();
    await sim?.stop();
    dir?.remove();
  });

  const jobSpecFor = (spec: FleetNodeSpec, target: string) =>
    patchJobSpec.parse({
      nodeName: spec.name,
      patchPlanRef: 'p',
      group: 'workers',
      target: { talosVersion: target },
      talosConfig: { secretRef: { name: 'talos' } },
    });
  /**
   * `act` (the call the guard must not repeat) leaves the node held in `hold`; the node then reboots
   * into a new boot exactly while the k-th of the guard's reads waits (k > READS: after them), and
   * `decide` gets the facts the reads returned.
   */
  async function rebootDuringRead({ spec, k, hold, act, decide, status, target }: RebootDuringRead): Promise<void> {
    const node = spec.internalIP;
    const sn = sim.node(node);
    const initialBootID = sn.bootId;
    sim.faults.set(node, { holdPhase: hold });
    await act(node);
    let reads = 0;
    const rebooted = async (): Promise<void> => {
      sim.faults.clear(node);
      await waitFor(() => (sn.phase === 'running' && sn.bootId !== initialBootID) || undefined, {
        timeoutMs: 10_000,
        intervalMs: 10,
        description: `node ${node} back on a new boot`,
      });
    };
    sn.answerGate = async () => {
      if (++reads === k) await rebooted();
    };
    try {
      const facts = await talosFacts(
        op(),
        { spec: jobSpecFor(spec, target), status: status(initialBootID) },
        { name: spec.name, internalIP: node, schematic: undefined, installerAnnotations: undefined },
        () => Promise.resolve(client),
      );
      assert.ok(facts.ok, 'the reads succeeded');
      decide(facts, initialBootID);
    } finally {
      sn.answerGate = undefined;
      if (reads < k) await rebooted();
    }
  }
  const bootSeen = (facts: TalosFacts, initialBootID: string): string =>
    facts.ok
      ? `read stage ${facts.stage}, boot ${facts.bootId === initialBootID ? 'the initial one' : 'a new one'}`
      : 'reads failed';

  for (let k = 1; k <= READS + 1; k++) {
    it(
      k <= READS
        ? `the node reboots while read ${k} of ${READS} waits: the upgrade is seen delivered, no second Upgrade`
        : 'the node reboots after the reads: still upgrading, no second Upgrade',
      async function () {
        const spec = specs[k - 1] as FleetNodeSpec;
        const status = (initialBootID: string): PatchJobStatus => ({
          phase: 'Upgrading',
          flow: 'legacy',
          initialBootID,
          installerImage: IMAGE,
          upgradeRequestedTime: new Date().toISOString(),
          deadline: new Date(Date.now() + 600_000).toISOString(),
        });
        await rebootDuringRead({
          spec,
          k,
          hold: 'upgrading',
          act: (node) => client.legacyUpgrade(op(), node, IMAGE),
          decide: (facts, initialBootID) => {
            const step = decideJob({
              now: Date.now(),
              job: { name: `p-${spec.name}`, spec: jobSpecFor(spec, TO), status: status(initialBootID) },
              node: undefined,
              pods: [],
              leases: [],
              talos: facts,
            });
            assert.equal(
              step.action?.type,
              undefined,
              `the guard would call ${step.action?.type ?? ''} again (${bootSeen(facts, initialBootID)})`,
            );
            assert.equal(step.status.phase, 'Rebooting');
          },
          status,
          target: TO,
        });
        assert.equal(sim.node(spec.internalIP).upgradesStarted, 1, 'one upgrade started on the node');
      },
    );
  }

  // Lifecycle flow (1.13+): the Reboot after the install. Its status write failing sends the next
  // pass to the same reads (rebootRequestedTime set, no acknowledgement recorded).
  for (let k = 1; k <= READS + 1; k++) {
    it(
      k <= READS
        ? `lifecycle: the node reboots while read ${k} of ${READS} waits: the reboot is seen, no second Reboot`
        : 'lifecycle: the node reboots after the reads: still rebooting, no second Reboot',
      async function () {
        const spec = lifecycleSpecs[k - 1] as FleetNodeSpec;
        const now = Date.now();
        const status = (initialBootID: string): PatchJobStatus => ({
          phase: 'Rebooting',
          flow: 'lifecycle',
          initialBootID,
          installerImage: IMAGE,
          upgradeRequestedTime: new Date(now - 5_000).toISOString(),
          upgradeAcknowledgedTime: new Date(now - 4_000).toISOString(),
          rebootRequestedTime: new Date(now - 1_000).toISOString(),
          deadline: new Date(now + 600_000).toISOString(),
        });
        await rebootDuringRead({
          spec,
          k,
          hold: 'rebooting',
          act: (node) => client.reboot(op(), node),
          decide: (facts, initialBootID) => {
            // The Node as the cache still shows it: the old boot, not Ready (the kubelet has not reported the new one).
            const kubeNode = {
              name: spec.name,
              internalIP: spec.internalIP,
              ready: false,
              unschedulable: true,
              cordonedBy: `p-${spec.name}`,
              bootID: initialBootID,
              talosVersion: 'v1.14.0',
              schematic: undefined,
              controlPlane: false,
              kubeletVersion: 'v1.35.4',
            };
            const step = decideJob({
              now: Date.now(),
              job: { name: `p-${spec.name}`, spec: jobSpecFor(spec, 'v1.14.1'), status: status(initialBootID) },
              node: kubeNode,
              pods: [],
              leases: [],
              talos: facts,
            });
            assert.notEqual(
              step.action?.type,
              'reboot',
              `the guard would reboot again (${bootSeen(facts, initialBootID)})`,
            );
            assert.ok(step.status.rebootAcknowledgedTime, 'the reboot is recorded as acknowledged');
          },
          status,
          target: 'v1.14.1',
        });
      },
    );
  }
});
