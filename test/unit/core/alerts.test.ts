// The alert gate (controller/core/gates/alerts.ts), its place in the PatchPlan decision, and the
// silence steps of the PatchJob decision (controller/core/job/silences.ts), with a fixed clock.
import assert from 'node:assert/strict';
import { alertGate } from '../../../schemas/alerts.js';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import { patchPlanSpec, type PatchPlanStatus } from '../../../schemas/patchplan.js';
import { decideAlertGate, type AlertFacts, type FiringAlert } from '../../../controller/core/gates/alerts.js';
import { afterAction, afterFailure, decideJob, type JobObservation } from '../../../controller/core/job/index.js';
import { silenceMatchers } from '../../../controller/core/job/silences.js';
import { decidePlan } from '../../../controller/core/plan/decide.js';
import { newJob } from '../../../controller/core/plan/jobs.js';
import type { PlanObservation } from '../../../controller/core/plan/types.js';
import { jobNode, jobObservation, jobSpec, talosFacts } from '../../support/job-observation.js';
import { PLAN_T0 as T0, planInProgress, planObservation, planSpec } from '../../support/plan-observation.js';

const gate = alertGate.parse({ alerts: ['severity="critical"'], ignore: ['alertname="Watchdog"'], timeout: '10m' });
const ceph: FiringAlert = {
  fingerprint: 'f1',
  labels: { alertname: 'CephHealthError', severity: 'critical', namespace: 'rook-ceph' },
};
const watchdog: FiringAlert = { fingerprint: 'f2', labels: { alertname: 'Watchdog', severity: 'critical' } };
const answer = (matched: FiringAlert[], ignored: string[] = [], observedAt = T0): AlertFacts => ({
  state: 'observed',
  matched,
  ignored,
  observedAt,
  intervalMs: 10_000,
});

describe('core/gates: decideAlertGate', function () {
  it('opens on a fresh answer with no matching alert, or only ignored ones', function () {
    assert.deepEqual(decideAlertGate(gate, answer([]), undefined, T0), { state: 'open' });
    assert.deepEqual(decideAlertGate(gate, answer([watchdog], ['f2']), undefined, T0 + 5_000), { state: 'open' });
  });

  it('closes on a firing alert, naming it, with the wait and its deadline; looks again when the answer gets old', function () {
    const d = decideAlertGate(gate, answer([ceph, watchdog, ceph], ['f2']), undefined, T0 + 1_000);
    assert.equal(d.state, 'closed');
    if (d.state !== 'closed') return;
    assert.equal(d.reason, 'WaitingForAlerts');
    assert.match(
      d.message,
      /until 2026-12-05T10:10:01.000Z\): 1 firing alert\(s\) match spec.alertGate: CephHealthError\{namespace="rook-ceph", severity="critical"\}; Alertmanager is asked every 10s/,
    );
    assert.deepEqual(d.wait, {
      startTime: '2026-12-05T10:00:01.000Z',
      deadline: '2026-12-05T10:10:01.000Z',
      alerts: ['CephHealthError{namespace="rook-ceph", severity="critical"}'],
    });
    assert.equal(d.ask, false);
    assert.equal(d.recheckAt, T0 + 10_000);
  });

  it('never opens on an old answer, on no answer, or when Alertmanager cannot be asked', function () {
    const old = decideAlertGate(gate, answer([], [], T0 - 10_000), undefined, T0);
    assert.equal(old.state === 'closed' && old.ask, true);
    assert.match(
      old.state === 'closed' ? old.message : '',
      /asking Alertmanager again before the next node is scheduled/,
    );
    const none = decideAlertGate(gate, undefined, undefined, T0);
    assert.equal(none.state === 'closed' && none.ask, true);
    const down = decideAlertGate(
      gate,
      { state: 'unavailable', message: 'Alertmanager GET /alerts: ECONNREFUSED', observedAt: T0, intervalMs: 10_000 },
      undefined,
      T0 + 1,
    );
    assert.equal(down.state, 'closed');
    assert.match(
      down.state === 'closed' ? down.message : '',
      /cannot ask Alertmanager: Alertmanager GET \/alerts: ECONNREFUSED/,
    );
  });

  it('keeps the start of the wait, and fails at its deadline (AlertGateTimeout)', function () {
    const first = decideAlertGate(gate, answer([ceph]), undefined, T0);
    assert.equal(first.state, 'closed');
    if (first.state !== 'closed') return;
    const later = decideAlertGate(gate, answer([ceph], [], T0 + 600_000), first.wait, T0 + 600_000);
    assert.equal(later.state, 'failed');
    assert.match(later.state === 'failed' ? later.message : '', /did not open within its timeout 10m: 1 firing alert/);
  });
});

describe('core/plan: the alert gate in decidePlan', function () {
  const running = planInProgress();
  const obs = (status: PatchPlanStatus, alerts: AlertFacts | undefined, now = T0): PlanObservation =>
    planObservation(
      status,
      { now, alerts },
      {
        spec: planSpec({
          strategy: { order: ['workers'] },
          alertGate: { alerts: ['severity="critical"'], timeout: '10m' },
        }),
      },
    );

  it('without a fresh answer the pass asks Alertmanager (its one action) and schedules nothing', function () {
    const step = decidePlan(obs(running, undefined));
    assert.deepEqual(step.action, { type: 'askAlertmanager' });
    assert.equal(step.status.reason, 'WaitingForAlerts');
    assert.equal(step.requeueAfterMs, 0);
  });

  it('a firing alert holds: InProgress, WaitingForAlerts, the wait in status, one Event, looked at again after the interval', function () {
    const step = decidePlan(obs(running, answer([ceph])));
    assert.equal(step.action, undefined);
    assert.equal(step.status.phase, 'InProgress');
    assert.equal(step.status.reason, 'WaitingForAlerts');
    assert.equal(step.status.alertWait?.deadline, '2026-12-05T10:10:00.000Z');
    assert.equal(step.requeueAfterMs, 10_000);
    assert.deepEqual(
      step.events.map((e) => e.reason),
      ['WaitingForAlerts'],
    );
    const again = decidePlan(obs(step.status, answer([ceph], [], T0 + 10_000), T0 + 10_000));
    assert.deepEqual(again.events, [], 'not one Event per answer');
  });

  it('a fresh answer without alerts schedules the node and clears the wait', function () {
    const waiting = decidePlan(obs(running, answer([ceph]))).status;
    const step = decidePlan(obs(waiting, answer([], [], T0 + 1_000), T0 + 1_000));
    assert.equal(step.action?.type, 'scheduleNodes');
    assert.equal(step.status.alertWait, undefined);
  });

  it('the timeout applies the failure policy (Halt: Failed, AlertGateTimeout)', function () {
    const waiting = decidePlan(obs(running, answer([ceph]))).status;
    const step = decidePlan(obs(waiting, answer([ceph], [], T0 + 600_000), T0 + 600_000));
    assert.equal(step.status.phase, 'Failed');
    assert.equal(step.status.reason, 'AlertGateTimeout');
    assert.equal(step.status.alertWait, undefined, 'no wait outside InProgress');
  });

  it("the plan's silences are copied into each PatchJob", function () {
    const spec = patchPlanSpec.parse({
      target: { talosVersion: 'v1.13.2' },
      talosConfig: { secretRef: { name: 't' } },
      silences: [{ name: 'n', matchers: 'alertname="X"' }],
    });
    assert.deepEqual(newJob('p', spec, { node: 'w-1', group: 'workers' }).spec.silences, [
      { name: 'n', matchers: 'alertname="X"', nodeLabel: 'node' },
    ]);
  });
});

describe('core/job: silences around the disruption', function () {
  const spec = jobSpec({
    silences: [{ name: 'node-alerts', matchers: '{alertname=~"KubeNode.*", instance=~"$(NODE):.*"}' }],
  });
  const node = jobNode({ bootID: 'b1', schematic: undefined });
  const talos = talosFacts({ bootId: 'b1' });
  const obs = (status: PatchJobStatus, now = T0, over: Partial<JobObservation> = {}): JobObservation =>
    jobObservation(status, { now, node, talos, ...over }, { spec });
  /** Pending until the node's identity is recorded (the legacy flow goes to the cordon next). */
  const beforeCordon = (): PatchJobStatus => {
    let s = decideJob(obs({}, T0, { talos: undefined })).status;
    s = decideJob(obs(s)).status;
    return s;
  };

  it('the matchers: the plan\'s with $(NODE) filled in, and node="<name>"', function () {
    assert.deepEqual(silenceMatchers(spec.silences?.[0] ?? { name: '', matchers: '', nodeLabel: 'node' }, 'w1'), [
      { name: 'alertname', op: '=~', value: 'KubeNode.*' },
      { name: 'instance', op: '=~', value: 'w1:.*' },
      { name: 'node', op: '=', value: 'w1' },
    ]);
  });

  it('records the silence (tag, end time) first, then creates it, records its ID, and only then cordons', function () {
    const ready = beforeCordon();
    const record = decideJob(obs(ready, T0 + 1_000));
    assert.equal(record.action, undefined, 'record first: nothing is created in the pass that records');
    assert.equal(record.status.reason, 'SilencingAlerts');
    const [entry] = record.status.silences ?? [];
    assert.deepEqual(entry, {
      name: 'node-alerts',
      tag: 'plan-w1/node-alerts@2026-12-05T10:00:01.000Z',
      endsAt: new Date(T0 + 1_000 + 25 * 60_000).toISOString(),
    });

    const create = decideJob(obs(record.status, T0 + 2_000));
    assert.equal(create.action?.type, 'createSilence');
    if (create.action?.type !== 'createSilence') return;
    assert.equal(create.action.silence.tag, entry?.tag);
    assert.equal(create.action.silence.endsAt, entry?.endsAt);
    assert.match(create.action.silence.comment, /\[plan-w1\/node-alerts@2026-12-05T10:00:01.000Z\]$/);
    assert.equal(create.status.phase, 'Pending', 'not cordoned yet');

    const made = afterAction(obs(record.status, T0 + 2_000), create, {
      type: 'silenced',
      tag: entry?.tag ?? '',
      id: 'sil-1',
    });
    assert.equal(made.status.silences?.[0]?.id, 'sil-1');
    assert.deepEqual(
      made.events.map((e) => e.reason),
      ['AlertsSilenced'],
    );
    const drain = decideJob(obs(made.status, T0 + 3_000));
    assert.equal(drain.status.phase, 'Draining', 'with its ID recorded the node may be cordoned');
  });

  it('an unreachable Alertmanager is retried until the Pending deadline; a refusal fails the job before the cordon', function () {
    const record = decideJob(obs(beforeCordon(), T0 + 1_000));
    const create = decideJob(obs(record.status, T0 + 2_000));
    if (create.action === undefined) assert.fail('expected createSilence');
    const transient = afterFailure(obs(record.status, T0 + 2_000), create.action, {
      transient: true,
      reason: 'AlertmanagerUnreachable',
      message: 'ECONNREFUSED',
    });
    assert.equal(transient.status.phase, 'Pending');
    assert.equal(transient.status.reason, 'SilencingAlerts');
    assert.ok((transient.requeueAfterMs ?? 0) > 0);
    const refused = afterFailure(obs(record.status, T0 + 2_000), create.action, {
      transient: false,
      reason: 'AlertmanagerRejected',
      message: 'HTTP 400: bad matcher',
    });
    assert.equal(refused.status.phase, 'Failed');
    assert.equal(refused.status.reason, 'SilenceFailed');
    assert.match(refused.status.message ?? '', /the node was not cordoned/);
  });

  it('a finished job frees its slot, then expires each recorded silence (by ID, or by tag when the ID was never recorded)', function () {
    const done: PatchJobStatus = {
      phase: 'Completed',
      completionTime: new Date(T0).toISOString(),
      silences: [
        { name: 'a', tag: 't-a', endsAt: new Date(T0 + 60_000).toISOString(), id: 'sil-a' },
        { name: 'b', tag: 't-b', endsAt: new Date(T0 + 60_000).toISOString() },
      ],
    };
    const lease = { name: 'p-workers-0', resourceVersion: '1', holderIdentity: 'plan-w1' };
    assert.equal(
      decideJob(obs(done, T0, { leases: [lease] })).action?.type,
      'releaseLeases',
      'the slot first: Alertmanager being down holds up no slot',
    );
    const first = decideJob(obs(done));
    assert.deepEqual(first.action, { type: 'expireSilence', tag: 't-a', id: 'sil-a' });
    const second = decideJob(obs(first.status, T0 + 10));
    assert.deepEqual(second.action, { type: 'expireSilence', tag: 't-b' });
    assert.equal(decideJob(obs(second.status, T0 + 20)).action, undefined, 'nothing left to expire');
  });

  it('expiring is retried while Alertmanager is down, and not asked once the silence has ended by itself', function () {
    const done: PatchJobStatus = {
      phase: 'Failed',
      completionTime: new Date(T0).toISOString(),
      message: 'drain timed out',
      silences: [{ name: 'a', tag: 't-a', endsAt: new Date(T0 + 60_000).toISOString(), id: 'sil-a' }],
    };
    const step = decideJob(obs(done));
    if (step.action === undefined) assert.fail('expected expireSilence');
    const retry = afterFailure(obs(done), step.action, {
      transient: true,
      reason: 'AlertmanagerUnreachable',
      message: 'ECONNREFUSED',
    });
    assert.equal(retry.status.silences?.[0]?.expiredTime, undefined);
    assert.match(retry.status.message ?? '', /^drain timed out; expiring silence a in Alertmanager failed/);
    const again = afterFailure(obs(retry.status), step.action, {
      transient: true,
      reason: 'AlertmanagerUnreachable',
      message: 'ECONNREFUSED',
    });
    assert.equal(again.status.message, retry.status.message, 'the message does not grow with each retry');
    const ended = decideJob(obs(done, T0 + 60_000));
    assert.equal(ended.action, undefined);
    assert.ok(ended.status.silences?.[0]?.expiredTime !== undefined);
  });
});
