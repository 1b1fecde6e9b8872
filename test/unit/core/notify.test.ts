// Notifications (controller/core/notify): which events a phase change means, their idempotency keys,
// and the body each receiver type gets. The plan cases use the real plan decisions' statuses.
import assert from 'node:assert/strict';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import { afterPreflight, decidePlan } from '../../../controller/core/plan/decide.js';
import type { PlanObservation } from '../../../controller/core/plan/types.js';
import { HOSTILE, assertInert } from './markdown-fixtures.js';
import { PLAN_T0 as T0, planObservation } from '../../support/plan-observation.js';
import {
  jobEvents,
  jobWaiting,
  planEvents,
  planWaiting,
  proposalEvent,
  receiverBody,
  receiverWants,
  type JobRef,
  type NotifyEvent,
} from '../../../controller/core/notify/index.js';

const at = (s: number): string => new Date(T0 + s * 1000).toISOString();
const plan = { name: 'prod', uid: 'plan-uid' };
const job: JobRef = {
  name: 'prod-worker-1',
  uid: 'job-uid',
  plan: 'prod',
  node: 'worker-1',
  group: 'workers',
  targetTalosVersion: 'v1.13.2',
  targetKubernetesVersion: undefined,
};
const types = (events: NotifyEvent[]): string[] => events.map((e) => e.type);

function obs(status: PatchPlanStatus, now = T0): PlanObservation {
  return planObservation(status, { now }, { name: 'prod', uid: 'plan-uid' });
}

describe('core/notify: events from phase changes', function () {
  it('a proposal: keyed by template, version and pull request, with its URL; a new PR for the same version is a new event', function () {
    const template = { name: 'patch-tpl', uid: 'tpl-uid' };
    const p = {
      version: 'v1.13.3',
      currentVersion: 'v1.13.2',
      number: 7,
      url: 'https://git.example/acme/plans/pull/7',
    };
    const e = proposalEvent(template, p, T0);
    assert.deepEqual(
      [e.type, e.key, e.plan, e.targetTalosVersion, e.url, e.time],
      ['proposal.opened', 'tpl-uid:proposal.opened:v1.13.3:7', 'patch-tpl', 'v1.13.3', p.url, at(0)],
    );
    assert.match(e.message ?? '', /Talos v1\.13\.3 \(from v1\.13\.2\) proposed in pull request #7/);
    assert.equal(proposalEvent(template, p, T0 + 60_000).key, e.key, 'the same PR, the same key');
    assert.notEqual(proposalEvent(template, { ...p, number: 8 }, T0).key, e.key);
    const slack = receiverBody('slack', e, 'prod') as { text: string; blocks: { fields?: { text: string }[] }[] };
    assert.equal(slack.text, 'KangalPatch [prod]: Talos v1.13.3 proposed for patch-tpl');
    assert.ok(
      slack.blocks[1]?.fields?.some((f) => f.text === `*Pull request*\n${p.url}`),
      JSON.stringify(slack.blocks),
    );
    assert.equal((receiverBody('webhook', e, 'prod') as { url?: string }).url, p.url);
  });

  it('a job: started on its first phase, completed or failed at its end, nothing in between', function () {
    const pending: PatchJobStatus = { phase: 'Pending', startTime: at(0) };
    const started = jobEvents(job, {}, pending, T0);
    assert.deepEqual(types(started), ['node.started']);
    assert.equal(started[0]?.key, `job-uid:node.started:${at(0)}`);
    assert.equal(started[0]?.node, 'worker-1');
    assert.equal(started[0]?.targetTalosVersion, 'v1.13.2');
    assert.deepEqual(jobEvents(job, pending, { ...pending, phase: 'Draining' }, T0 + 1000), []);
    assert.deepEqual(jobEvents(job, pending, pending, T0), [], 'no phase change, no event');
    const done = jobEvents(job, { phase: 'Rebooting' }, { phase: 'Completed', completionTime: at(90) }, T0 + 90_000);
    assert.deepEqual(
      done.map((e) => [e.type, e.key, e.time]),
      [['node.completed', `job-uid:node.completed:${at(90)}`, at(90)]],
    );
    const failed = jobEvents(
      job,
      { phase: 'Draining' },
      { phase: 'Failed', reason: 'DrainTimeout', message: 'PDB web blocks', completionTime: at(300) },
      T0,
    );
    assert.deepEqual(
      failed.map((e) => [e.type, e.reason, e.message]),
      [['node.failed', 'DrainTimeout', 'PDB web blocks']],
    );
    // Already at the target: the first write is the end.
    assert.deepEqual(types(jobEvents(job, {}, { phase: 'Completed', startTime: at(0), completionTime: at(0) }, T0)), [
      'node.started',
      'node.completed',
    ]);
  });

  it('the same transition decided twice has the same key; another transition has another', function () {
    const a = jobEvents(job, { phase: 'Rebooting' }, { phase: 'Completed', completionTime: at(90) }, T0 + 90_000);
    const b = jobEvents(job, { phase: 'Rebooting' }, { phase: 'Completed', completionTime: at(90) }, T0 + 500_000);
    assert.deepEqual(a, b, 'the key and time come from status, not from when it was decided');
    const retried = jobEvents(
      { ...job, uid: 'job-uid-2' },
      { phase: 'Rebooting' },
      { phase: 'Completed', completionTime: at(90) },
      T0,
    );
    assert.notEqual(retried[0]?.key, a[0]?.key, 'a retried node is a new PatchJob (new UID)');
  });

  it('a plan: started once through preflight, completed with its counts', function () {
    const preflighting = decidePlan(obs({})).status;
    assert.deepEqual(planEvents(plan, {}, preflighting, T0), [], 'Preflighting is not news');
    const running = afterPreflight(obs(preflighting), { status: preflighting, events: [] }, [
      { name: 'SelectionNonEmpty', passed: true, message: 'ok' },
    ]).status;
    const started = planEvents(plan, preflighting, { ...running, totalNodes: 3, pendingNodes: 3 }, T0 + 2000);
    assert.deepEqual(types(started), ['plan.started']);
    assert.equal(started[0]?.key, `plan-uid:plan.started:${preflighting.startTime ?? ''}`);
    assert.deepEqual(started[0]?.progress, { total: 3, completed: 0, failed: 0, running: 0, pending: 3 });
    // Resumed after a pause, or reopened to retry a node: not a start.
    assert.deepEqual(planEvents(plan, { ...running, phase: 'Paused' }, running, T0), []);
    assert.deepEqual(planEvents(plan, { ...running, phase: 'Completed' }, running, T0), []);
    const done: PatchPlanStatus = {
      ...running,
      phase: 'Completed',
      completionTime: at(600),
      totalNodes: 3,
      completedNodes: 2,
      failedNodes: 1,
    };
    const completed = planEvents(plan, running, done, T0 + 600_000);
    assert.deepEqual(
      completed.map((e) => [e.type, e.key]),
      [['plan.completed', `plan-uid:plan.completed:${at(600)}:2/1`]],
    );
    // The failed node retried and the plan completed again: another key.
    const again = planEvents(plan, running, { ...done, completedNodes: 3, failedNodes: 0 }, T0 + 900_000);
    assert.notEqual(again[0]?.key, completed[0]?.key);
  });

  it('a plan: paused by the policy (its time) or by spec.paused (its generation); failed by Halt', function () {
    const running: PatchPlanStatus = { phase: 'InProgress', observedGeneration: 4 };
    const policy = planEvents(
      plan,
      running,
      {
        ...running,
        phase: 'Paused',
        reason: 'PausedByFailurePolicy',
        policyPause: { failures: 1, generation: 5, time: at(60) },
      },
      T0 + 61_000,
    );
    assert.deepEqual(
      policy.map((e) => [e.type, e.key, e.time, e.reason]),
      [['plan.paused', `plan-uid:plan.paused:${at(60)}`, at(60), 'PausedByFailurePolicy']],
    );
    const byHand = planEvents(
      plan,
      running,
      { ...running, phase: 'Paused', reason: 'Paused', observedGeneration: 7 },
      T0,
    );
    assert.equal(byHand[0]?.key, 'plan-uid:plan.paused:generation-7');
    const halted = planEvents(
      plan,
      running,
      { ...running, phase: 'Failed', reason: 'FailureBudgetExceeded', completionTime: at(120) },
      T0,
    );
    assert.deepEqual(
      halted.map((e) => [e.type, e.key]),
      [['plan.failed', `plan-uid:plan.failed:FailureBudgetExceeded:${at(120)}`]],
    );
  });

  it('a failed preflight is told once, not at every retry, unless it fails for another reason', function () {
    const preflighting = decidePlan(obs({})).status;
    const failCheck = (name: string, now: number, from: PatchPlanStatus): PatchPlanStatus =>
      afterPreflight(obs(from, now), { status: { ...from, phase: 'Preflighting' }, events: [] }, [
        { name, passed: false, message: `${name} broken` },
      ]).status;
    const failed = failCheck('TalosCredentials', T0, preflighting);
    const first = planEvents(plan, preflighting, failed, T0);
    assert.deepEqual(
      first.map((e) => [e.type, e.reason]),
      [['plan.failed', 'PreflightTalosCredentials']],
    );
    // A minute later: Preflighting again, failing the same way.
    const retrying = { ...failed, phase: 'Preflighting' as const };
    assert.deepEqual(planEvents(plan, retrying, failCheck('TalosCredentials', T0 + 60_000, retrying), T0 + 60_000), []);
    const other = planEvents(plan, retrying, failCheck('InstallerImages', T0 + 120_000, retrying), T0 + 120_000);
    assert.deepEqual(types(other), ['plan.failed']);
    assert.notEqual(other[0]?.key, first[0]?.key);
  });
});

describe('core/notify: waiting longer than waitingAfter', function () {
  const AFTER = 10 * 60_000;
  const gated: PatchPlanStatus = {
    phase: 'InProgress',
    reason: 'WaitingForHealthCheck',
    message: 'health check "volumes": longhorn-system/pvc-1 is false',
    targetTalosVersion: 'v1.13.2',
    healthCheckWait: { name: 'volumes', when: 'beforeEachNode', startTime: at(0), deadline: at(1800) },
  };

  it('a plan behind a closed health check: a timer for the moment the wait is long enough, then one event keyed by the check and the wait', function () {
    assert.deepEqual(planWaiting(plan, gated, AFTER, T0 + 60_000), { checkAt: T0 + AFTER });
    const e = planWaiting(plan, gated, AFTER, T0 + AFTER).event;
    assert.deepEqual(
      [e?.type, e?.key, e?.since, e?.reason],
      ['plan.waiting', `plan-uid:plan.waiting:health:volumes:${at(0)}`, at(0), 'WaitingForHealthCheck'],
    );
    assert.match(
      e?.message ?? '',
      /waiting since .* for health check "volumes" \(health check "volumes": longhorn-system\/pvc-1 is false\); the failure policy applies at/,
    );
    assert.equal(planWaiting(plan, gated, AFTER, T0 + 3 * AFTER).event?.key, e?.key, 'the same wait, the same key');
    const again = {
      ...gated,
      healthCheckWait: { name: 'volumes', when: 'beforeEachNode' as const, startTime: at(900), deadline: at(2700) },
    };
    assert.notEqual(planWaiting(plan, again, AFTER, T0 + 3 * AFTER).event?.key, e?.key, 'a new wait is news');
    assert.equal(
      receiverBody('slack', e as NotifyEvent, 'prod').text,
      'KangalPatch [prod]: plan prod is still waiting (WaitingForHealthCheck)',
    );
  });

  it('a plan waiting for its window or between nodes is not stalled; neither is a finished or paused one', function () {
    assert.deepEqual(
      planWaiting(
        plan,
        { phase: 'InProgress', reason: 'OutsideMaintenanceWindow', nextScheduleTime: at(7200) },
        AFTER,
        T0 + 10 * AFTER,
      ),
      {},
    );
    assert.deepEqual(planWaiting(plan, { ...gated, phase: 'Paused' }, AFTER, T0 + 10 * AFTER), {});
  });

  it("a node draining past waitingAfter: one event naming the drain's message and deadline; other phases never", function () {
    const draining: PatchJobStatus = {
      phase: 'Draining',
      reason: 'DrainBlockedByPDB',
      message: 'PodDisruptionBudget db/pg allows no eviction of db/pg-0',
      phaseStartTime: at(0),
      deadline: at(3600),
    };
    assert.deepEqual(jobWaiting(job, draining, AFTER, T0), { checkAt: T0 + AFTER });
    const e = jobWaiting(job, draining, AFTER, T0 + AFTER).event;
    assert.deepEqual(
      [e?.type, e?.key, e?.node, e?.group],
      ['node.waiting', `job-uid:node.waiting:Draining:${at(0)}`, 'worker-1', 'workers'],
    );
    assert.equal(
      e?.message,
      `draining since ${at(0)}: PodDisruptionBudget db/pg allows no eviction of db/pg-0; the drain times out at ${at(3600)}`,
    );
    assert.deepEqual(jobWaiting(job, { ...draining, phase: 'Rebooting' }, AFTER, T0 + 10 * AFTER), {});
    assert.deepEqual(
      jobWaiting(job, { phase: 'Draining' }, AFTER, T0 + 10 * AFTER),
      {},
      'no start recorded yet: nothing to measure',
    );
  });
});

describe('core/notify: receivers and bodies', function () {
  const event: NotifyEvent = jobEvents(
    job,
    { phase: 'Draining' },
    {
      phase: 'Failed',
      reason: 'DrainTimeout',
      message: 'PDB <web> & friends block @everyone',
      completionTime: at(300),
    },
    T0,
  )[0] as NotifyEvent;

  it('a receiver takes the event types and plans it names (default: all)', function () {
    assert.equal(receiverWants({}, event), true);
    assert.equal(receiverWants({ events: ['node.failed'] }, event), true);
    assert.equal(receiverWants({ events: ['plan.failed'] }, event), false);
    assert.equal(receiverWants({ plans: ['prod'] }, event), true);
    assert.equal(receiverWants({ plans: ['staging'] }, event), false);
  });

  it('webhook: the event as JSON with the idempotency key as id', function () {
    const body = receiverBody('webhook', event, 'lab');
    assert.deepEqual(body, {
      apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
      kind: 'Notification',
      id: `job-uid:node.failed:${at(300)}`,
      cluster: 'lab',
      type: 'node.failed',
      time: at(300),
      plan: 'prod',
      node: 'worker-1',
      job: 'prod-worker-1',
      group: 'workers',
      phase: 'Failed',
      reason: 'DrainTimeout',
      message: 'PDB <web> & friends block @everyone',
      targetTalosVersion: 'v1.13.2',
    });
  });

  it('Slack: text fallback plus Block Kit sections, markup escaped', function () {
    const body = receiverBody('slack', event, 'lab') as {
      text: string;
      blocks: {
        type: string;
        text?: { type: string; text: string };
        fields?: { type: string; text: string }[];
        elements?: { text: string }[];
      }[];
    };
    assert.equal(body.text, 'KangalPatch [lab]: node worker-1 failed (DrainTimeout) (plan prod)');
    assert.equal(body.blocks[0]?.type, 'section');
    assert.equal(body.blocks[0]?.text?.type, 'mrkdwn');
    assert.ok(body.blocks[1]?.fields?.some((f) => f.text === '*Node*\nworker-1'));
    assert.ok((body.blocks[1]?.fields?.length ?? 0) <= 10, 'Slack allows 10 fields per section');
    assert.equal(body.blocks[2]?.elements?.[0]?.text, 'PDB &lt;web&gt; &amp; friends block @everyone');
  });

  it('Teams: a message with one Adaptive Card attachment (Workflows webhook)', function () {
    const body = receiverBody('teams', event, undefined) as {
      type: string;
      attachments: {
        contentType: string;
        contentUrl: null;
        content: {
          type: string;
          version: string;
          body: { type: string; text?: string; facts?: { title: string; value: string }[] }[];
        };
      }[];
    };
    assert.equal(body.type, 'message');
    assert.equal(body.attachments.length, 1);
    const a = body.attachments[0];
    assert.equal(a?.contentType, 'application/vnd.microsoft.card.adaptive');
    assert.equal(a?.contentUrl, null);
    assert.equal(a?.content.type, 'AdaptiveCard');
    assert.equal(a?.content.body[0]?.text, 'KangalPatch: node worker-1 failed (DrainTimeout) (plan prod)');
    assert.deepEqual(
      a?.content.body[1]?.facts?.find((f) => f.title === 'Reason'),
      { title: 'Reason', value: 'DrainTimeout' },
    );
  });

  it('Discord: one embed within its limits, no mentions', function () {
    const long: NotifyEvent = { ...event, message: 'x'.repeat(5000), node: 'n'.repeat(300) };
    const body = receiverBody('discord', long, 'lab') as {
      embeds: {
        title: string;
        description: string;
        color: number;
        fields: { name: string; value: string }[];
        timestamp: string;
      }[];
      allowed_mentions: { parse: string[] };
    };
    const e = body.embeds[0];
    assert.ok(e && e.title.length <= 256 && e.description.length <= 4096);
    assert.ok(e.fields.length <= 25 && e.fields.every((f) => f.name.length <= 256 && f.value.length <= 1024));
    assert.equal(e.timestamp, at(300));
    assert.deepEqual(body.allowed_mentions, { parse: [] });
  });

  it('Teams and Discord: plan text (names, reasons, messages) renders inert in their Markdown', function () {
    const hostile: NotifyEvent = {
      ...event,
      plan: `p${HOSTILE}`,
      group: HOSTILE,
      reason: HOSTILE,
      message: `${HOSTILE}\n# heading\n- item`,
    };
    type Card = { text?: string; facts?: { value: string }[] };
    const teams = receiverBody('teams', hostile, 'lab') as { attachments: { content: { body: Card[] } }[] };
    const card = teams.attachments.flatMap((a) => a.content.body);
    const texts = card
      .flatMap((b) => [b.text, ...(b.facts ?? []).map((f) => f.value)])
      .filter((t): t is string => t !== undefined);
    assert.match(texts.at(-1) ?? '', /\n\\# heading\n\\- item$/);
    const discord = receiverBody('discord', hostile, 'lab') as {
      embeds: { title: string; description: string; fields: { value: string }[] }[];
    };
    texts.push(...discord.embeds.flatMap((e) => [e.title, e.description, ...e.fields.map((f) => f.value)]));
    for (const t of texts) assertInert(t, t);
    assert.ok(texts.some((t) => t.includes('\\](http://evil) \\<img src=x\\>')));
  });
});
