// Notifications through the real `kangal-patch run` process: a plan over 1 control plane and 2
// workers with three receivers from --notify-config-file: a signed generic webhook that must get
// exactly the plan's and nodes' events in order, a Slack receiver filtered to plan outcomes, and a
// receiver that stalls every request. The rollout completes regardless, and the metrics count it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { signatureMatches } from '../../controller/runtime/hmac.js';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { labPlan, type PlanDoc } from './support/plans.js';
import { startWebhookReceiver, type WebhookReceiver } from '../lab/webhook-receiver.js';
import { waitFor } from '../lab/wait.js';

const SECRET = 'e2e-notify-hmac-secret-0123456789';

describe('Notifications end to end', function () {
  this.timeout(300_000);
  let lab: JobLab;
  let good: WebhookReceiver;
  let chat: WebhookReceiver;
  let stalled: WebhookReceiver;
  let dir: string;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 3, controlPlanes: 1, talosVersion: 'v1.12.4' },
      images: ['siderolabs/installer:v1.13.2'],
    });
    good = await startWebhookReceiver();
    chat = await startWebhookReceiver();
    stalled = await startWebhookReceiver();
    stalled.setFallback('stall');
    dir = mkdtempSync(join(tmpdir(), 'kp-notify-e2e-'));
  });
  after(async function () {
    await lab?.stop();
    for (const r of [good, chat, stalled]) await r?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a good receiver gets exactly the expected events in order, signed; a stalled one delays nothing', async function () {
    const config = join(dir, 'notify.yaml');
    writeFileSync(
      config,
      stringify({
        receivers: [
          { name: 'stalled', type: 'webhook', url: stalled.url(), secret: SECRET, timeout: '2m' },
          { name: 'good', type: 'webhook', url: good.url(), secret: SECRET },
          {
            name: 'chat',
            type: 'slack',
            url: chat.url('/services/T0/B0/x'),
            events: ['plan.completed', 'plan.failed'],
            plans: ['notify'],
          },
        ],
      }),
      { mode: 0o600 },
    );
    const controller = lab.startController({ args: ['--notify-config-file', config], metrics: true });
    const plan: PlanDoc = {
      apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
      kind: 'PatchPlan',
      metadata: { name: 'notify' },
      spec: { target: { talosVersion: 'v1.13.2' } },
    };
    await lab.applyPlan(labPlan(plan, lab.talos.endpoint));
    const status = await lab.waitForPlan(
      'notify',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      180_000,
    );
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    assert.equal(status.completedNodes, 3);

    await waitFor(() => good.bodies().some((b) => b.type === 'plan.completed') || undefined, {
      timeoutMs: 30_000,
      description: 'plan.completed at the good receiver',
    });
    const bodies = good.bodies();
    assert.deepEqual(
      bodies.map((b) => b.type),
      [
        'plan.started',
        'node.started',
        'node.completed',
        'node.started',
        'node.completed',
        'node.started',
        'node.completed',
        'plan.completed',
      ],
    );
    const nodes = bodies.map((b) => b.node ?? '-');
    assert.deepEqual(nodes.slice(0, 3), ['-', 'cp-1', 'cp-1'], 'the control plane first');
    assert.equal(nodes[3], nodes[4]);
    assert.equal(nodes[5], nodes[6]);
    assert.deepEqual([nodes[3], nodes[5]].sort(), ['worker-1', 'worker-2'], 'then each worker, one at a time');
    assert.ok(bodies.every((b) => b.plan === 'notify'));
    assert.deepEqual(bodies[7]?.progress, { total: 3, completed: 3, failed: 0, running: 0, pending: 0 });
    for (const d of good.deliveries) {
      assert.ok(
        signatureMatches(SECRET, Buffer.from(d.body), d.headers['x-kangalpatch-signature']),
        `signed: ${d.body}`,
      );
      assert.equal(d.headers['idempotency-key'], (JSON.parse(d.body) as { id: string }).id);
      assert.equal(d.answer, 200);
    }
    assert.equal(new Set(good.deliveries.map((d) => d.headers['idempotency-key'])).size, 8, 'one key per event');

    // The filtered Slack receiver: the plan's outcome only, in Slack's format.
    await waitFor(() => chat.deliveries.length === 1 || undefined, {
      timeoutMs: 30_000,
      description: 'the Slack receiver got plan.completed',
    });
    assert.equal(chat.bodies()[0]?.text, 'KangalPatch: plan notify completed (3 completed, 0 failed)');
    // The stalled receiver still holds the first request; nothing else reached it, nothing waited for it.
    assert.equal(stalled.deliveries.length, 1);
    assert.equal((JSON.parse(stalled.deliveries[0]?.body ?? '{}') as { type: string }).type, 'plan.started');

    const metrics = await controller.scrape();
    assert.match(metrics, /^kangal_patch_notifications_total\{receiver="good",result="sent"\} 8$/m);
    assert.match(metrics, /^kangal_patch_notifications_total\{receiver="chat",result="sent"\} 1$/m);
    assert.doesNotMatch(metrics, /receiver="stalled",result="sent"/);
    // URLs and the secret stay out of the logs.
    const logs = JSON.stringify(controller.logs());
    assert.ok(logs.includes('notifications: receivers started'));
    for (const secret of [SECRET, good.url(), stalled.url(), '/services/T0/B0/x'])
      assert.ok(!logs.includes(secret), `logs do not contain ${secret}`);
  });
});
