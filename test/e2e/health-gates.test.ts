// Health gates through the real `kangal-patch run` process (issue 17, "Health checks"): a plan with a
// Longhorn-style check over a CRD this test installs. The oracle is the lab's observer (its own
// watches of Nodes, Leases and PatchJobs, with times), not the controller's status.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { installVolumeCrd, LONGHORN_NAMESPACE as NS, setRobustness as setVolumeRobustness, volume, VOLUMES } from '../support/longhorn.js';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { labPlan, type PlanDoc } from './support/plans.js';
import { startWebhookReceiver, type WebhookReceiver } from '../lab/webhook-receiver.js';
import { waitFor } from '../lab/wait.js';

const POOL = 'lab.kangalpatch.io/pool';
const pools: Record<string, string[]> = { gate: ['worker-1', 'worker-2', 'worker-3'], timeout: ['worker-4'] };
const labels = Object.fromEntries(Object.entries(pools).flatMap(([pool, nodes]) => nodes.map((n) => [n, { [POOL]: pool }])));
const EXPR = 'has(status.robustness) && status.robustness == "healthy"';

function plan(name: string, pool: string, spec: Record<string, unknown>): PlanDoc {
  return {
    apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
    kind: 'PatchPlan',
    metadata: { name },
    spec: { target: { talosVersion: 'v1.13.2' }, nodeSelector: { matchLabels: { [POOL]: pool } }, strategy: { order: ['workers'] }, failurePolicy: { type: 'Pause' }, ...spec },
  };
}

describe('PatchPlan end to end: health gates', function () {
  this.timeout(300_000);
  let lab: JobLab;
  let custom: CustomObjectsApi;
  // Told when a plan has waited on a closed gate for over a second (`plan.waiting`).
  let receiver: WebhookReceiver;
  let dir: string;

  const setRobustness = (name: string, robustness: string): Promise<number> => setVolumeRobustness(lab.kc, name, robustness);

  before(async function () {
    lab = await startJobLab({ fleet: { nodes: 5, controlPlanes: 1, talosVersion: 'v1.12.4' }, labels, images: ['siderolabs/installer:v1.13.2'] });
    installVolumeCrd(lab.cluster.kubectl, lab.cluster.kubeconfigPath);
    await lab.kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    custom = lab.kc.makeApiClient(CustomObjectsApi);
    for (const v of [volume('pvc-a', 'healthy', { app: 'db' }), volume('pvc-b', 'healthy', { app: 'db' }), volume('pvc-c', 'degraded'), volume('pvc-other', 'faulted', { app: 'other' })]) {
      await custom.createNamespacedCustomObject({ ...VOLUMES, namespace: NS, body: v });
    }
    receiver = await startWebhookReceiver();
    dir = mkdtempSync(join(tmpdir(), 'kp-gate-notify-'));
    const notify = join(dir, 'notify.yaml');
    writeFileSync(notify, stringify({ waitingAfter: '1s', receivers: [{ name: 'oncall', type: 'webhook', url: receiver.url(), events: ['plan.waiting'] }] }), { mode: 0o600 });
    lab.startController({ args: ['--notify-config-file', notify] });
  });
  after(async function () {
    await lab?.stop();
    await receiver?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a degraded volume stops the rollout before the next node; it continues once the volume is healthy', async function () {
    const check = { name: 'longhorn-volumes', apiVersion: 'longhorn.io/v1beta2', kind: 'Volume', namespace: NS, labelSelector: { matchLabels: { app: 'db' } }, expr: EXPR, timeout: '5m' };
    await lab.applyPlan(labPlan(plan('gate', 'gate', { healthChecks: [check] }), lab.talos.endpoint));
    // The first node goes (every db volume healthy); while it is cordoned, a volume degrades.
    const first = await waitFor(() => lab.observer.events.find((e) => e.kind === 'cordoned' && pools.gate?.includes(e.node)), { timeoutMs: 60_000, description: 'the first node cordoned' });
    const degradedAt = await setRobustness('pvc-b', 'degraded');

    const waiting = await lab.waitForPlan('gate', 'held by the health check', (s) => s.reason === 'WaitingForHealthCheck', 60_000);
    assert.equal(waiting.phase, 'InProgress');
    assert.match(String(waiting.message), /health check longhorn-volumes/);
    assert.match(String(waiting.message), /longhorn-system\/pvc-b: false/);
    assert.match(String(waiting.message), /status\.robustness == "healthy"/);
    const wait = waiting.healthCheckWait as { name: string; deadline: string; startTime: string };
    assert.equal(wait.name, 'longhorn-volumes');
    assert.equal(Date.parse(wait.deadline) - Date.parse(wait.startTime), 5 * 60_000, 'the deadline is startTime + timeout');
    assert.equal(waiting.completedNodes, 1, 'the first node finished');

    const healthyAt = await setRobustness('pvc-b', 'healthy');
    const next = await waitFor(() => lab.observer.events.find((e) => e.kind === 'cordoned' && e.at >= healthyAt && e.node !== first.node), { timeoutMs: 60_000, description: 'the next node cordoned' });
    // The observer's own record: while the gate was closed nothing new was scheduled or disrupted.
    const closed = lab.observer.events.filter((e) => e.at > degradedAt && e.at < healthyAt);
    const disruptive = closed.filter((e) => e.kind === 'cordoned' || e.kind === 'leaseCreated' || (e.node !== first.node && ['podDeleting', 'notReady', 'booted'].includes(e.kind)));
    assert.deepEqual(disruptive, [], 'no node cordoned, no slot taken, no other node disrupted while the gate was closed');
    const slot = lab.observer.events.find((e) => e.kind === 'leaseCreated' && e.at >= healthyAt);
    process.stdout.write(`      gate-open latency (observer): volume healthy → next slot Lease ${slot ? slot.at - healthyAt : '?'} ms, → next node cordoned ${next.at - healthyAt} ms\n`);

    const done = await lab.waitForPlan('gate', 'all nodes done', (s) => s.phase === 'Completed', 120_000);
    assert.equal(done.completedNodes, 3);
    assert.equal(done.healthCheckWait, undefined);
  });

  it('a gate that never opens pauses the plan after the check\'s timeout (HealthCheckTimeout, Pause policy), touching no node', async function () {
    const check = { name: 'volume-c', apiVersion: 'longhorn.io/v1beta2', kind: 'Volume', namespace: NS, objectName: 'pvc-c', expr: EXPR, timeout: '5s' };
    await lab.applyPlan(labPlan(plan('timeout', 'timeout', { healthChecks: [check] }), lab.talos.endpoint));
    // Until the first list of Volumes arrives the wait says so; then it names the object and its value.
    const waiting = await lab.waitForPlan('timeout', 'held by the health check on pvc-c', (s) => s.reason === 'WaitingForHealthCheck' && /pvc-c: false/.test(String(s.message)), 60_000);
    const paused = await lab.waitForPlan('timeout', 'paused by the timeout', (s) => s.phase === 'Paused', 30_000);
    assert.equal(paused.reason, 'HealthCheckTimeout');
    assert.match(String(paused.message), /health check volume-c did not hold within its timeout 5s/);
    assert.equal((await lab.plan('timeout'))?.spec.paused, true, 'the Pause policy set spec.paused');
    const at = Date.parse(String((paused.policyPause as { time: string }).time));
    const deadline = Date.parse((waiting.healthCheckWait as { deadline: string }).deadline);
    assert.ok(at >= deadline, `paused at ${new Date(at).toISOString()}, not before the deadline ${new Date(deadline).toISOString()}`);
    assert.deepEqual(lab.observer.of('worker-4', ['cordoned', 'leaseCreated', 'podDeleting', 'booted']), [], 'worker-4 never touched');
    assert.equal(await lab.job('timeout-worker-4'), undefined);
    // Waiting past waitingAfter (1 s, under the 5 s timeout) was told once, naming the check.
    const told = receiver.bodies().filter((b) => b.type === 'plan.waiting' && b.plan === 'timeout');
    assert.equal(told.length, 1, JSON.stringify(receiver.bodies()));
    assert.equal(told[0]?.reason, 'WaitingForHealthCheck');
    assert.match(String(told[0]?.message), /^waiting since .* for health check "volume-c" .*; the failure policy applies at /);
  });

  it('a plan applied with kubectl whose expression does not compile is refused: Failed, InvalidSpec, naming the path', async function () {
    const check = { name: 'typo', apiVersion: 'longhorn.io/v1beta2', kind: 'Volume', expr: 'stauts.robustness == "healthy"' };
    await lab.applyPlan(labPlan(plan('bad-expr', 'timeout', { healthChecks: [{ name: 'ok', apiVersion: 'v1', kind: 'ConfigMap', expr: 'true' }, check] }), lab.talos.endpoint));
    const failed = await lab.waitForPlan('bad-expr', 'refused', (s) => s.phase === 'Failed', 30_000);
    assert.equal(failed.reason, 'InvalidSpec');
    assert.match(String(failed.message), /spec\.healthChecks\[1\]\.expr: invalid CEL expression: undeclared reference to "stauts"/);
  });
});
