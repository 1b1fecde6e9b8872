// Health gates through the real `kangal-patch run` process (issue 17, "Health checks" and "Alert gate
// and silences"): a plan with a Longhorn-style check over a CRD this test installs, and a plan gated
// on alerts in the lab's real Alertmanager that silences each node's alerts while it is disrupted.
// The oracle is the lab's observer (its own watches of Nodes, Leases and PatchJobs, with times) and
// Alertmanager's own API, not the controller's status.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import {
  installVolumeCrd,
  LONGHORN_NAMESPACE as NS,
  setRobustness as setVolumeRobustness,
  volume,
  VOLUMES,
} from '../support/longhorn.js';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { labPlan, type PlanDoc } from './support/plans.js';
import { grantHealthReads } from './support/health-identity.js';
import { startWebhookReceiver, type WebhookReceiver } from '../lab/webhook-receiver.js';
import { waitFor } from '../lab/wait.js';
import { startAlertmanager, type LabAlertmanager, type LabSilence } from '../lab/alerting/alertmanager.js';
import type { Controller } from './support/job-lab.js';

const POOL = 'lab.kangalpatch.io/pool';
const pools: Record<string, string[]> = {
  gate: ['worker-1', 'worker-2', 'worker-3'],
  timeout: ['worker-4'],
  alerts: ['worker-5', 'worker-6'],
};
const labels = Object.fromEntries(
  Object.entries(pools).flatMap(([pool, nodes]) => nodes.map((n) => [n, { [POOL]: pool }])),
);
/** The silences of one node (a `node` label matcher, not a regex). */
const nodeSilences = (list: LabSilence[], node: string): LabSilence[] =>
  list.filter((x) => x.matchers.some((m) => m.name === 'node' && m.value === node && !m.isRegex));

const EXPR = 'has(status.robustness) && status.robustness == "healthy"';

function plan(name: string, pool: string, spec: Record<string, unknown>): PlanDoc {
  return {
    apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
    kind: 'PatchPlan',
    metadata: { name },
    spec: {
      target: { talosVersion: 'v1.13.2' },
      nodeSelector: { matchLabels: { [POOL]: pool } },
      strategy: { order: ['workers'] },
      failurePolicy: { type: 'Pause' },
      ...spec,
    },
  };
}

describe('PatchPlan end to end: health gates', function () {
  this.timeout(300_000);
  let lab: JobLab;
  let custom: CustomObjectsApi;
  // Told when a plan has waited on a closed gate for over a second (`plan.waiting`).
  let receiver: WebhookReceiver;
  let dir: string;
  let notify: string;
  let alertmanager: LabAlertmanager;
  let controller: Controller;

  /**
   * One node's silence of the alerts test: recorded once in its job's status, the one Alertmanager
   * holds (found again after a restart by its tag), its own TTL, expired, and spanning exactly the
   * node's disruption.
   */
  const assertNodeSilence = async (node: string, all: LabSilence[]): Promise<void> => {
    const job = await lab.job(`alerts-${node}`);
    const recorded =
      (job?.status['silences'] as { name: string; id: string; endsAt: string; expiredTime?: string }[] | undefined) ??
      [];
    assert.equal(recorded.length, 1, `${node}: one silence recorded in the job's status`);
    const mine = nodeSilences(all, node);
    assert.equal(
      mine.length,
      1,
      `${node}: exactly one silence in Alertmanager (a restart found it by its tag): ${JSON.stringify(mine)}`,
    );
    const silence = mine[0] as LabSilence;
    assert.equal(silence.id, recorded[0]?.id, `${node}: the recorded ID is Alertmanager's`);
    // Its own end time bounds it: drainTimeout 5m + 2 × rebootTimeout 10m after it was made.
    const ttl = Date.parse(recorded[0]?.endsAt ?? '') - Date.parse(silence.startsAt);
    assert.ok(
      Math.abs(ttl - 25 * 60_000) < 60_000,
      `${node}: recorded end ${recorded[0]?.endsAt}, ${ttl} ms after its start`,
    );
    assert.equal(silence.status.state, 'expired', `${node}: expired once its job finished`);
    assert.ok(
      silence.matchers.some((m) => m.name === 'alertname' && m.value === 'KubeNode.*|TargetDown' && m.isRegex),
      JSON.stringify(silence.matchers),
    );
    // During the disruption only: created before the cordon, ended after the node was given back.
    const cordoned = lab.observer.of(node, ['cordoned'])[0]?.at ?? 0;
    const uncordoned = lab.observer.of(node, ['uncordoned']).at(-1)?.at ?? 0;
    assert.ok(
      Date.parse(silence.startsAt) <= cordoned,
      `${node}: silence starts ${silence.startsAt}, cordoned at ${new Date(cordoned).toISOString()}`,
    );
    assert.ok(
      Date.parse(silence.endsAt) >= uncordoned - 1_000,
      `${node}: silence ends ${silence.endsAt}, uncordoned at ${new Date(uncordoned).toISOString()}`,
    );
    assert.ok(Date.parse(silence.endsAt) < Date.now(), `${node}: the silence has ended`);
  };

  const controllerArgs = (): string[] => [
    '--alertmanager-url',
    alertmanager.url,
    '--alertmanager-interval',
    '1s',
    '--notify-config-file',
    notify,
  ];

  const setRobustness = (name: string, robustness: string): Promise<number> =>
    setVolumeRobustness(lab.kc, name, robustness);

  before(async function () {
    [lab, alertmanager] = await Promise.all([
      startJobLab({
        fleet: { nodes: 7, controlPlanes: 1, talosVersion: 'v1.12.4' },
        labels,
        images: ['siderolabs/installer:v1.13.2'],
      }),
      startAlertmanager(),
    ]);
    installVolumeCrd(lab.cluster.kubectl, lab.cluster.kubeconfigPath);
    await grantHealthReads(lab.kc, 'health-gates-reads', ['volumes.longhorn.io', 'configmaps']);
    await lab.kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    custom = lab.kc.makeApiClient(CustomObjectsApi);
    for (const v of [
      volume('pvc-a', 'healthy', { app: 'db' }),
      volume('pvc-b', 'healthy', { app: 'db' }),
      volume('pvc-c', 'degraded'),
      volume('pvc-other', 'faulted', { app: 'other' }),
    ]) {
      await custom.createNamespacedCustomObject({ ...VOLUMES, namespace: NS, body: v });
    }
    receiver = await startWebhookReceiver();
    dir = mkdtempSync(join(tmpdir(), 'kp-gate-notify-'));
    notify = join(dir, 'notify.yaml');
    writeFileSync(
      notify,
      stringify({
        waitingAfter: '1s',
        receivers: [{ name: 'oncall', type: 'webhook', url: receiver.url(), events: ['plan.waiting'] }],
      }),
      { mode: 0o600 },
    );
    controller = lab.startController({ args: controllerArgs() });
  });
  after(async function () {
    await lab?.stop();
    await alertmanager?.stop();
    await receiver?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a degraded volume stops the rollout before the next node; it continues once the volume is healthy', async function () {
    const check = {
      name: 'longhorn-volumes',
      apiVersion: 'longhorn.io/v1beta2',
      kind: 'Volume',
      namespace: NS,
      labelSelector: { matchLabels: { app: 'db' } },
      expr: EXPR,
      timeout: '5m',
    };
    await lab.applyPlan(labPlan(plan('gate', 'gate', { healthChecks: [check] }), lab.talos.endpoint));
    // The first node goes (every db volume healthy); while it is cordoned, a volume degrades.
    const first = await waitFor(
      () => lab.observer.events.find((e) => e.kind === 'cordoned' && pools.gate?.includes(e.node)),
      { timeoutMs: 60_000, description: 'the first node cordoned' },
    );
    const degradedAt = await setRobustness('pvc-b', 'degraded');

    const waiting = await lab.waitForPlan(
      'gate',
      'held by the health check',
      (s) => s.reason === 'WaitingForHealthCheck',
      60_000,
    );
    assert.equal(waiting.phase, 'InProgress');
    assert.match(String(waiting.message), /health check longhorn-volumes/);
    assert.match(String(waiting.message), /longhorn-system\/pvc-b: false/);
    assert.match(String(waiting.message), /status\.robustness == "healthy"/);
    const wait = waiting.healthCheckWait as { name: string; deadline: string; startTime: string };
    assert.equal(wait.name, 'longhorn-volumes');
    assert.equal(
      Date.parse(wait.deadline) - Date.parse(wait.startTime),
      5 * 60_000,
      'the deadline is startTime + timeout',
    );
    assert.equal(waiting.completedNodes, 1, 'the first node finished');

    const healthyAt = await setRobustness('pvc-b', 'healthy');
    const next = await waitFor(
      () => lab.observer.events.find((e) => e.kind === 'cordoned' && e.at >= healthyAt && e.node !== first.node),
      { timeoutMs: 60_000, description: 'the next node cordoned' },
    );
    // The observer's own record: while the gate was closed nothing new was scheduled or disrupted.
    const closed = lab.observer.events.filter((e) => e.at > degradedAt && e.at < healthyAt);
    const disruptive = closed.filter(
      (e) =>
        e.kind === 'cordoned' ||
        e.kind === 'leaseCreated' ||
        (e.node !== first.node && ['podDeleting', 'notReady', 'booted'].includes(e.kind)),
    );
    assert.deepEqual(
      disruptive,
      [],
      'no node cordoned, no slot taken, no other node disrupted while the gate was closed',
    );
    const slot = lab.observer.events.find((e) => e.kind === 'leaseCreated' && e.at >= healthyAt);
    process.stdout.write(
      `      gate-open latency (observer): volume healthy → next slot Lease ${slot ? slot.at - healthyAt : '?'} ms, → next node cordoned ${next.at - healthyAt} ms\n`,
    );

    const done = await lab.waitForPlan('gate', 'all nodes done', (s) => s.phase === 'Completed', 120_000);
    assert.equal(done.completedNodes, 3);
    assert.equal(done.healthCheckWait, undefined);
  });

  it("a gate that never opens pauses the plan after the check's timeout (HealthCheckTimeout, Pause policy), touching no node", async function () {
    const check = {
      name: 'volume-c',
      apiVersion: 'longhorn.io/v1beta2',
      kind: 'Volume',
      namespace: NS,
      objectName: 'pvc-c',
      expr: EXPR,
      timeout: '5s',
    };
    await lab.applyPlan(labPlan(plan('timeout', 'timeout', { healthChecks: [check] }), lab.talos.endpoint));
    // Until the first list of Volumes arrives the wait says so; then it names the object and its value.
    const waiting = await lab.waitForPlan(
      'timeout',
      'held by the health check on pvc-c',
      (s) => s.reason === 'WaitingForHealthCheck' && /pvc-c: false/.test(String(s.message)),
      60_000,
    );
    const paused = await lab.waitForPlan('timeout', 'paused by the timeout', (s) => s.phase === 'Paused', 30_000);
    assert.equal(paused.reason, 'HealthCheckTimeout');
    assert.match(String(paused.message), /health check volume-c did not hold within its timeout 5s/);
    assert.equal((await lab.plan('timeout'))?.spec.paused, true, 'the Pause policy set spec.paused');
    const at = Date.parse(String((paused.policyPause as { time: string }).time));
    const deadline = Date.parse((waiting.healthCheckWait as { deadline: string }).deadline);
    assert.ok(
      at >= deadline,
      `paused at ${new Date(at).toISOString()}, not before the deadline ${new Date(deadline).toISOString()}`,
    );
    assert.deepEqual(
      lab.observer.of('worker-4', ['cordoned', 'leaseCreated', 'podDeleting', 'booted']),
      [],
      'worker-4 never touched',
    );
    assert.equal(await lab.job('timeout-worker-4'), undefined);
    // Waiting past waitingAfter (1 s, under the 5 s timeout) was told once, naming the check.
    const told = receiver.bodies().filter((b) => b.type === 'plan.waiting' && b.plan === 'timeout');
    assert.equal(told.length, 1, JSON.stringify(receiver.bodies()));
    assert.equal(told[0]?.reason, 'WaitingForHealthCheck');
    assert.match(
      String(told[0]?.message),
      /^waiting since .* for health check "volume-c" .*; the failure policy applies at /,
    );
  });

  it('a plan applied with kubectl whose expression does not compile is refused: Failed, InvalidSpec, naming the path', async function () {
    const check = {
      name: 'typo',
      apiVersion: 'longhorn.io/v1beta2',
      kind: 'Volume',
      expr: 'stauts.robustness == "healthy"',
    };
    await lab.applyPlan(
      labPlan(
        plan('bad-expr', 'timeout', {
          healthChecks: [{ name: 'ok', apiVersion: 'v1', kind: 'ConfigMap', expr: 'true' }, check],
        }),
        lab.talos.endpoint,
      ),
    );
    const failed = await lab.waitForPlan('bad-expr', 'refused', (s) => s.phase === 'Failed', 30_000);
    assert.equal(failed.reason, 'InvalidSpec');
    assert.match(
      String(failed.message),
      /spec\.healthChecks\[1\]\.expr: invalid CEL expression: undeclared reference to "stauts"/,
    );
  });

  it('a firing alert holds the rollout; each node is silenced in Alertmanager during its disruption only, also across a SIGKILL', async function () {
    const ceph = { labels: { alertname: 'CephHealthError', severity: 'critical', namespace: 'rook-ceph' } };
    const watchdog = { labels: { alertname: 'Watchdog', severity: 'critical' } };
    const nodeAlerts = (pools.alerts ?? []).map((n) => ({
      labels: { alertname: 'KubeNodeUnschedulable', severity: 'warning', node: n },
    }));
    await alertmanager.fire([ceph, watchdog, ...nodeAlerts]);
    const gate = {
      alerts: ['severity="critical"', '{alertname=~"Ceph.*"}'],
      ignore: ['alertname="Watchdog"'],
      timeout: '10m',
    };
    const silences = [{ name: 'node-alerts', matchers: '{alertname=~"KubeNode.*|TargetDown"}' }];
    await lab.applyPlan(labPlan(plan('alerts', 'alerts', { alertGate: gate, silences }), lab.talos.endpoint));

    const waiting = await lab.waitForPlan(
      'alerts',
      'held by the alert',
      (s) => s.reason === 'WaitingForAlerts' && /CephHealthError/.test(String(s.message)),
      60_000,
    );
    assert.equal(waiting.phase, 'InProgress');
    assert.match(
      String(waiting.message),
      /1 firing alert\(s\) match spec\.alertGate: CephHealthError\{namespace="rook-ceph", severity="critical"\}/,
    );
    assert.doesNotMatch(String(waiting.message), /Watchdog/, 'the ignored alert holds nothing');
    const wait = waiting.alertWait as { startTime: string; deadline: string; alerts: string[] };
    assert.equal(
      Date.parse(wait.deadline) - Date.parse(wait.startTime),
      10 * 60_000,
      'the deadline is startTime + timeout',
    );
    assert.deepEqual(wait.alerts, ['CephHealthError{namespace="rook-ceph", severity="critical"}']);
    // Held across three more of the controller's re-checks (--alertmanager-interval 1s), each asking
    // once per matcher list (two gate lists, one ignore list), as Alertmanager's own metric counts them.
    const asked = await alertmanager.alertQueries();
    await waitFor(async () => ((await alertmanager.alertQueries()) >= asked + 3 * 3 ? true : undefined), {
      timeoutMs: 30_000,
      description: 'three more re-checks of the closed gate',
    });
    const resolvedAt = Date.now();
    await alertmanager.resolve([ceph]);

    const first = await waitFor(
      () => lab.observer.events.find((e) => e.kind === 'cordoned' && pools.alerts?.includes(e.node)),
      { timeoutMs: 60_000, description: 'the first node cordoned' },
    );
    // (A Lease's observation names its holder, the PatchJob `alerts-<node>`.)
    const held = lab.observer.events.filter(
      (e) =>
        e.at < resolvedAt &&
        ((pools.alerts?.includes(e.node) && ['cordoned', 'podDeleting', 'notReady'].includes(e.kind)) ||
          (e.kind === 'leaseCreated' && e.node.startsWith('alerts-'))),
    );
    assert.deepEqual(held, [], 'no node of the plan cordoned, no slot taken while the alert fired');
    process.stdout.write(
      `      alert-gate latency (observer): alert resolved → first node cordoned ${first.at - resolvedAt} ms\n`,
    );

    // The second node: the controller is SIGKILLed while it is cordoned, and a new one finishes it.
    const second = (pools.alerts ?? []).find((n) => n !== first.node) ?? '';
    await waitFor(() => lab.observer.of(second, ['cordoned']).length > 0 || undefined, {
      timeoutMs: 120_000,
      description: `${second} cordoned`,
    });
    await controller.kill();
    controller = lab.startController({ args: controllerArgs() });
    const done = await lab.waitForPlan('alerts', 'all nodes done', (s) => s.phase === 'Completed', 180_000);
    assert.equal(done.completedNodes, 2);
    assert.equal(done.alertWait, undefined);

    // The jobs expire their silences in the passes after they finish (after freeing their slots).
    const all = await waitFor(
      async () => {
        const list = await alertmanager.silences();
        return (pools.alerts ?? []).every(
          (n) => nodeSilences(list, n).length > 0 && nodeSilences(list, n).every((x) => x.status.state === 'expired'),
        )
          ? list
          : undefined;
      },
      { timeoutMs: 30_000, description: 'every node silence expired' },
    ).catch(async (err: unknown) => {
      throw new Error(
        `${err instanceof Error ? err.message : String(err)}: ${JSON.stringify(await alertmanager.silences())}`,
        { cause: err },
      );
    });
    for (const node of pools.alerts ?? []) await assertNodeSilence(node, all);
    // The node alerts are no longer silenced: Alertmanager reports them active again.
    await waitFor(
      async () => {
        const alerts = await alertmanager.alerts();
        const nodeOnes = alerts.filter((a) => a.labels['alertname'] === 'KubeNodeUnschedulable');
        return nodeOnes.length === 2 &&
          nodeOnes.every((a) => a.status.state === 'active' && a.status.silencedBy.length === 0)
          ? true
          : undefined;
      },
      { timeoutMs: 30_000, description: 'the node alerts active and unsilenced again' },
    );
  });
});
