// Drains that PodDisruptionBudgets hold up, and every simulator fault, each ending in its
// documented outcome within its deadline, through the real `kangal-patch run` process. The node
// is never left cordoned without the job saying so.
import assert from 'node:assert/strict';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { EventsV1Api } from '@kubernetes/client-node';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { startWebhookReceiver, type WebhookReceiver } from '../lab/webhook-receiver.js';
import { waitFor } from '../lab/wait.js';

const POOL = 'lab.kangalpatch.io/pool';
const CORDONED_BY = 'kangalpatch.ozalp.dk/cordoned-by';

/** 'cordon' or 'uncordon' when the request is the controller's write of the cordon marker on `node`. */
function cordonWrite(
  req: { method: string; path: string; body: unknown },
  node: string,
): 'cordon' | 'uncordon' | undefined {
  if (req.method !== 'PATCH' || new URL(req.path, 'https://lab').pathname !== `/api/v1/nodes/${node}`) return undefined;
  const annotations = (req.body as { metadata?: { annotations?: Record<string, unknown> } } | undefined)?.metadata
    ?.annotations;
  if (annotations === undefined || !(CORDONED_BY in annotations)) return undefined;
  return annotations[CORDONED_BY] === null ? 'uncordon' : 'cordon';
}

describe('PatchJob end to end: drains and faults', function () {
  this.timeout(240_000);
  let lab: JobLab;
  // Told when a node has been draining for over a second (`node.waiting`).
  let receiver: WebhookReceiver;
  let dir: string;

  before(async function () {
    lab = await startJobLab({
      // The controller's requests go through the interposer, so a test can race them on purpose.
      interposer: true,
      fleet: { nodes: 12, controlPlanes: 1, talosVersion: 'v1.12.4' },
      talosVersions: { 'worker-5': 'v1.13.1' },
      labels: { 'worker-1': { [POOL]: 'db' }, 'worker-4': { [POOL]: 'db' } },
      // Replacements appear only after a while, so a PDB visibly holds the drain up.
      rescheduleDelayMs: 2_000,
      workloads: [
        // Placed round robin on worker-1, worker-4, worker-1: draining worker-1 may evict one pod at once.
        {
          namespace: 'db',
          name: 'pg',
          kind: 'replicaset',
          replicas: 3,
          pdb: { minAvailable: 2 },
          nodeSelector: { [POOL]: 'db' },
        },
        // Never any slack.
        {
          namespace: 'locked',
          name: 'quorum',
          kind: 'replicaset',
          replicas: 1,
          pdb: { minAvailable: 1 },
          nodeSelector: { 'kubernetes.io/hostname': 'worker-2' },
        },
        {
          namespace: 'misc',
          name: 'bare',
          kind: 'bare',
          replicas: 1,
          nodeSelector: { 'kubernetes.io/hostname': 'worker-3' },
        },
      ],
    });
    receiver = await startWebhookReceiver();
    dir = mkdtempSync(join(tmpdir(), 'kp-drain-notify-'));
    const notify = join(dir, 'notify.yaml');
    writeFileSync(
      notify,
      stringify({
        waitingAfter: '1s',
        receivers: [{ name: 'oncall', type: 'webhook', url: receiver.url(), events: ['node.waiting'] }],
      }),
      { mode: 0o600 },
    );
    lab.startController({ args: ['--notify-config-file', notify] });
  });
  after(async function () {
    await lab?.stop();
    await receiver?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function uncordoned(node: string): Promise<void> {
    await waitFor(() => lab.observer.node(node)?.unschedulable === false, {
      timeoutMs: 15_000,
      description: `${node} uncordoned`,
    });
  }

  it('waits on a PDB, naming it in status, and proceeds once the replacement is Ready', async function () {
    const job = await lab.createJob({ plan: 'pdb', node: 'worker-1', target: { talosVersion: 'v1.13.2' } });
    const blocked = await waitFor(
      async () => {
        const j = await lab.job(job);
        return j?.status.reason === 'DrainBlockedByPDB' ? j.status : undefined;
      },
      { timeoutMs: 30_000, description: 'the drain blocked by PDB db/pg' },
    );
    assert.equal(blocked.blockingPDB, 'db/pg');
    assert.match(String(blocked.message), /retrying until/);
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 60_000);
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    // The second eviction waited for the first pod's replacement to exist elsewhere.
    const seen = lab.observer.events;
    const deletions = seen.filter(
      (e) => e.kind === 'podDeleting' && e.node === 'worker-1' && e.detail.startsWith('db/'),
    );
    const replacement = seen.find(
      (e) =>
        e.kind === 'podAdded' && e.node === 'worker-4' && e.detail.startsWith('db/') && e.at > (deletions[0]?.at ?? 0),
    );
    assert.equal(deletions.length, 2, JSON.stringify(deletions));
    assert.ok(
      replacement && replacement.at < (deletions[1]?.at ?? 0),
      'second eviction after the replacement appeared',
    );
  });

  it('fails at drainTimeout when the PDB never allows the eviction: node uncordoned, reason given', async function () {
    const job = await lab.createJob({
      plan: 'locked',
      node: 'worker-2',
      target: { talosVersion: 'v1.13.2' },
      spec: { drainTimeout: '4s' },
    });
    const waiting = await waitFor(
      async () => {
        const j = await lab.job(job);
        return j?.status.reason === 'DrainBlockedByPDB' ? j.status : undefined;
      },
      { timeoutMs: 30_000, description: 'the drain blocked by PDB locked/quorum' },
    );
    assert.equal(waiting.blockingPDB, 'locked/quorum');
    assert.ok(waiting.deadline, 'the wait has its deadline in status');
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 30_000);
    assert.equal(status.reason, 'DrainTimeout');
    assert.match(String(status.message), /locked\/quorum/);
    await uncordoned('worker-2');
    assert.equal(lab.talos.node('worker-2').calls.length, 0, 'no mutating Talos call');
    // Draining past waitingAfter (1 s, under the 4 s drainTimeout) was told once, though the status changed on every retry.
    const told = receiver.bodies().filter((b) => b.type === 'node.waiting' && b.node === 'worker-2');
    assert.equal(told.length, 1, JSON.stringify(receiver.bodies()));
    // Told with the reason of the first status write past waitingAfter: the PDB's block, or, on a
    // loaded machine where the first eviction came later than that, the cordon before it.
    assert.ok(['DrainBlockedByPDB', 'Cordoned'].includes(String(told[0]?.reason)), JSON.stringify(told[0]));
    if (told[0]?.reason === 'DrainBlockedByPDB') assert.match(String(told[0].message), /locked\/quorum/);
    assert.match(String(told[0]?.message), /^draining since .*; the drain times out at /);
  });

  it('fails naming an unmanaged pod when evictUnmanagedPods is off, and evicts nothing', async function () {
    const job = await lab.createJob({ plan: 'bare', node: 'worker-3', target: { talosVersion: 'v1.13.2' } });
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 30_000);
    assert.equal(status.reason, 'UnmanagedPods');
    assert.match(String(status.message), /misc\/bare-/);
    assert.match(String(status.message), /evictUnmanagedPods: true/);
    await uncordoned('worker-3');
    assert.equal(lab.observer.of('worker-3', ['podDeleting']).length, 0);
  });

  it('fails on an upgrade call Talos refuses; the node is uncordoned', async function () {
    lab.talos.faults.set('worker-6', {
      upgradeError: { code: GrpcStatus.UNKNOWN, message: 'error validating installer image: not found' },
    });
    const job = await lab.createJob({ plan: 'refused', node: 'worker-6', target: { talosVersion: 'v1.13.2' } });
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 30_000);
    assert.equal(status.reason, 'UpgradeFailed');
    assert.match(String(status.message), /error validating installer image/);
    await uncordoned('worker-6');
  });

  it('fails with the installer words on a non-zero exit code and never reboots the node', async function () {
    lab.talos.faults.set('worker-5', { installExitCode: 3 });
    const job = await lab.createJob({ plan: 'install', node: 'worker-5', target: { talosVersion: 'v1.14.0' } });
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 30_000);
    assert.equal(status.reason, 'InstallFailed');
    assert.match(String(status.message), /exit status 3/);
    await uncordoned('worker-5');
    assert.equal(lab.talos.node('worker-5').calls.filter((c) => c.method === 'MachineService.Reboot').length, 0);
    assert.equal(lab.observer.of('worker-5', ['booted']).length, 0);
  });

  it('fails at rebootTimeout when the node never comes back, says it stays cordoned, and uncordons it once Ready', async function () {
    lab.talos.faults.set('worker-7', { neverComesBack: true });
    const job = await lab.createJob({
      plan: 'gone',
      node: 'worker-7',
      target: { talosVersion: 'v1.13.2' },
      spec: { rebootTimeout: '5s' },
    });
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 30_000);
    assert.equal(status.reason, 'RebootTimeout');
    const left = await waitFor(
      async () => {
        const j = await lab.job(job);
        return j?.status.nodeLeftCordoned === true ? j.status : undefined;
      },
      { timeoutMs: 15_000, description: 'the job says the node stays cordoned' },
    );
    const released = (left.conditions as { type: string; status: string; message: string }[] | undefined)?.find(
      (c) => c.type === 'NodeReleased',
    );
    assert.equal(released?.status, 'False');
    assert.match(String(released?.message), /stays cordoned/);
    assert.deepEqual([left.reason, left.message], [status.reason, status.message], 'the job still says why it failed');
    assert.equal(lab.observer.node('worker-7')?.unschedulable, true);
    lab.talos.faults.powerOn('worker-7');
    await uncordoned('worker-7');
  });

  it('fails at once when the node boots its old partition, and keeps saying so through a cordon and an uncordon that race kubelet status posts', async function () {
    const node = 'worker-8';
    const interposer = lab.interposer;
    assert.ok(interposer);
    // The simulated kubelet posts the Node's status at the moment each cordon-marker write arrives,
    // before the apiserver sees it: the write, guarded by the resourceVersion the controller read,
    // conflicts every time, not only when a real post happens to land in between.
    const raced: string[] = [];
    interposer.setBeforeForward(async (req) => {
      const write = cordonWrite(req, node);
      if (write === undefined || raced.includes(write)) return;
      raced.push(write);
      await lab.fleet.postStatus(node);
    });
    const nodePath = `/api/v1/nodes/${node}`;
    const firstExchange = interposer.exchanges.length;
    try {
      lab.talos.faults.set(node, { bootsOldPartition: true });
      const job = await lab.createJob({ plan: 'oldpart', node, target: { talosVersion: 'v1.13.2' } });
      const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 30_000);
      assert.equal(status.reason, 'BootedOldPartition');
      assert.match(String(status.message), /previous partition/);
      await uncordoned(node);
      assert.deepEqual(raced, ['cordon', 'uncordon'], 'both writes were raced');

      // Each raced write cost one extra round trip: the conflict, a fresh read, the write again.
      const onNode = interposer.exchanges
        .slice(firstExchange)
        .filter((e) => new URL(e.path, 'https://lab').pathname === nodePath)
        .map((e) => `${e.method} ${e.status}`);
      assert.deepEqual(onNode, ['PATCH 409', 'GET 200', 'PATCH 200', 'PATCH 409', 'GET 200', 'PATCH 200']);

      // The uncordon is housekeeping: the failed job still says why it failed, and said it once.
      const after = (await lab.job(job))?.status ?? {};
      assert.equal(after.reason, 'BootedOldPartition');
      assert.equal(after.message, status.message);
      // Events are written in the background after the status write: wait for the first.
      const events = await waitFor(
        async () => {
          const list = await lab.kc
            .makeApiClient(EventsV1Api)
            .listNamespacedEvent({ namespace: 'default', fieldSelector: `regarding.name=${job}` });
          return list.items.some((e) => e.reason === 'BootedOldPartition') ? list : undefined;
        },
        { timeoutMs: 30_000, description: `the BootedOldPartition Event of ${job}` },
      );
      assert.equal(
        events.items.filter((e) => e.reason === 'BootedOldPartition').length,
        1,
        JSON.stringify(events.items.map((e) => e.reason)),
      );
    } finally {
      interposer.setBeforeForward(undefined);
    }
  });

  it('retries, does not fail, while the Talos API is unreachable for a while', async function () {
    lab.talos.faults.unreachable('worker-9', 3_000);
    const job = await lab.createJob({ plan: 'flaky', node: 'worker-9', target: { talosVersion: 'v1.13.2' } });
    const waiting = await waitFor(
      async () => {
        const j = await lab.job(job);
        return j?.status.reason === 'TalosUnreachable' && String(j.status.message).includes('waiting')
          ? j.status
          : undefined;
      },
      { timeoutMs: 15_000, description: 'the job waiting for the Talos API' },
    );
    assert.ok(waiting.deadline);
    const status = await lab.waitForPhase(job, ['Completed', 'Failed'], 60_000);
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
  });
});
