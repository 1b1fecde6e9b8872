// The notifier against the lab webhook receiver: signed bodies with the idempotency key, retries on
// 503 honouring Retry-After and on refused connections, no retry on 4xx, a stalled receiver that
// holds up no other receiver, and the bounded queue dropping (and counting) the oldest events.
import assert from 'node:assert/strict';
import { createNotifier, type NotifyResult } from '../../controller/notify/notifier.js';
import type { NotifyEvent } from '../../controller/core/notify/index.js';
import { systemClock } from '../../controller/runtime/clock.js';
import { signatureMatches } from '../../controller/runtime/hmac.js';
import { notifyConfig } from '../../schemas/notify.js';
import { freePort } from '../lab/net.js';
import { startWebhookReceiver, type WebhookReceiver } from '../lab/webhook-receiver.js';
import { waitFor } from '../lab/wait.js';

const SECRET = 'lab-hmac-secret-0123456789';
const FAST = { initialMs: 10, maxMs: 40, factor: 2 };

function event(n: number, type: NotifyEvent['type'] = 'node.completed'): NotifyEvent {
  return {
    type,
    key: `uid-${n}:${type}:t`,
    time: new Date(0).toISOString(),
    plan: 'prod',
    node: `worker-${n}`,
    phase: 'Completed',
  };
}

interface Run {
  results: [string, NotifyResult][];
  logs: { level: string; msg: string; fields: Record<string, unknown> }[];
  notify: (events: NotifyEvent[]) => void;
  stop: () => Promise<void>;
}

function run(config: Record<string, unknown>): Run {
  const results: [string, NotifyResult][] = [];
  const logs: Run['logs'] = [];
  const stop = new AbortController();
  const notifier = createNotifier({
    config: notifyConfig.parse(config),
    cluster: 'lab',
    clock: systemClock,
    log: (level, msg, fields) => logs.push({ level, msg, fields: fields ?? {} }),
    onResult: (receiver, result) => results.push([receiver, result]),
    backoff: FAST,
  });
  notifier.start(stop.signal);
  return {
    results,
    logs,
    notify: (events) => notifier.notify(events),
    stop: async () => {
      stop.abort();
      await notifier.stopped();
    },
  };
}

const count = (r: Run, receiver: string, result: NotifyResult): number =>
  r.results.filter(([n, x]) => n === receiver && x === result).length;

describe('notifier against the lab webhook receiver', function () {
  let a: WebhookReceiver;
  let b: WebhookReceiver;
  let current: Run | undefined;

  beforeEach(async function () {
    a = await startWebhookReceiver();
    b = await startWebhookReceiver();
  });
  afterEach(async function () {
    await current?.stop();
    current = undefined;
    await a.stop();
    await b.stop();
  });

  it('signs each webhook body (X-KangalPatch-Signature) and sends the idempotency key as a header and in the body, in order', async function () {
    current = run({
      receivers: [
        { name: 'ops', type: 'webhook', url: a.url(), secret: SECRET },
        { name: 'chat', type: 'slack', url: b.url('/slack') },
      ],
    });
    current.notify([event(1, 'node.started'), event(1, 'node.completed')]);
    await waitFor(() => count(current as Run, 'ops', 'sent') === 2 && count(current as Run, 'chat', 'sent') === 2, {
      timeoutMs: 10_000,
      description: 'both receivers got both events',
    });
    assert.deepEqual(
      a.bodies().map((x) => x.type),
      ['node.started', 'node.completed'],
    );
    for (const d of a.deliveries) {
      assert.ok(
        signatureMatches(SECRET, Buffer.from(d.body), d.headers['x-kangalpatch-signature']),
        'signature verifies',
      );
      assert.equal(
        signatureMatches('another-secret-0123456789', Buffer.from(d.body), d.headers['x-kangalpatch-signature']),
        false,
      );
      assert.equal(d.headers['idempotency-key'], (JSON.parse(d.body) as { id: string }).id);
      assert.equal(d.headers['content-type'], 'application/json');
    }
    // Slack gets its own format and no signature (its URL is the credential).
    assert.equal(b.deliveries[0]?.headers['x-kangalpatch-signature'], undefined);
    assert.equal(b.bodies()[0]?.text, 'KangalPatch [lab]: node worker-1 started (plan prod)');
    // Nothing logged carries the URL or the secret.
    const logged = JSON.stringify(current.logs);
    assert.ok(!logged.includes(a.url()) && !logged.includes(b.url('/slack')) && !logged.includes(SECRET), logged);
  });

  it('retries a 503 after its Retry-After, with the same body and key; a 4xx is not retried', async function () {
    current = run({
      receivers: [
        { name: 'ops', type: 'webhook', url: a.url(), secret: SECRET },
        { name: 'strict', type: 'webhook', url: b.url() },
      ],
    });
    a.answerNext({ status: 503, headers: { 'retry-after': '1' } });
    b.answerNext({ status: 400 });
    current.notify([event(1)]);
    await waitFor(() => count(current as Run, 'ops', 'sent') === 1 && count(current as Run, 'strict', 'failed') === 1, {
      timeoutMs: 10_000,
      description: 'ops sent after a retry, strict failed',
    });
    assert.deepEqual(
      a.deliveries.map((d) => d.answer),
      [503, 200],
    );
    assert.equal(a.deliveries[1]?.body, a.deliveries[0]?.body, 'a retry sends the same bytes');
    assert.equal(a.deliveries[1]?.headers['idempotency-key'], a.deliveries[0]?.headers['idempotency-key']);
    const retry = current.logs.find((l) => l.fields.receiver === 'ops' && l.msg.includes('retrying'));
    assert.ok(Number(retry?.fields.retryInMs) >= 1000, `waited for Retry-After: ${JSON.stringify(retry)}`);
    assert.ok(
      (a.deliveries[1]?.at ?? 0) - (a.deliveries[0]?.at ?? 0) >= 990,
      'the second attempt came after Retry-After',
    );
    // 400: one attempt, failed, not retried.
    assert.deepEqual(
      b.deliveries.map((d) => d.answer),
      [400],
    );
    assert.equal(
      current.logs.find((l) => l.fields.receiver === 'strict' && l.msg === 'notification failed')?.fields.why,
      'HTTP 400',
    );
    current.notify([event(2)]);
    await waitFor(() => count(current as Run, 'strict', 'sent') === 1, {
      timeoutMs: 10_000,
      description: 'the next event goes through',
    });
    assert.equal(b.deliveries.length, 2, 'the 400 was never sent again');
  });

  it('retries a refused connection up to maxAttempts, then counts it failed', async function () {
    const dead = `http://127.0.0.1:${await freePort()}/hook`;
    current = run({ maxAttempts: 3, receivers: [{ name: 'dead', type: 'discord', url: dead }] });
    current.notify([event(1)]);
    await waitFor(() => count(current as Run, 'dead', 'failed') === 1, {
      timeoutMs: 10_000,
      description: 'dead receiver failed',
    });
    const failed = current.logs.find((l) => l.msg === 'notification failed');
    assert.equal(failed?.fields.attempt, 3);
    assert.equal(failed?.fields.why, 'network error (ECONNREFUSED)');
    assert.equal(current.logs.filter((l) => l.msg.includes('retrying')).length, 2);
    assert.ok(!JSON.stringify(current.logs).includes(dead));
  });

  it("gives up on a request that gets no answer within the receiver's timeout, and retries it", async function () {
    a.setFallback('stall');
    current = run({ maxAttempts: 2, receivers: [{ name: 'slow', type: 'webhook', url: a.url(), timeout: '200ms' }] });
    current.notify([event(1)]);
    await waitFor(() => count(current as Run, 'slow', 'failed') === 1, {
      timeoutMs: 10_000,
      description: 'slow receiver failed',
    });
    assert.equal(a.deliveries.length, 2, 'two attempts');
    assert.equal(current.logs.find((l) => l.msg === 'notification failed')?.fields.why, 'no answer within 200 ms');
  });

  it('a stalled receiver holds up no other receiver', async function () {
    a.setFallback('stall');
    current = run({
      receivers: [
        { name: 'stalled', type: 'webhook', url: a.url(), timeout: '60s' },
        { name: 'ok', type: 'teams', url: b.url() },
      ],
    });
    current.notify([event(1), event(2), event(3)]);
    await waitFor(() => count(current as Run, 'ok', 'sent') === 3, {
      timeoutMs: 10_000,
      description: 'the good receiver got all three',
    });
    assert.equal(a.deliveries.length, 1, 'the stalled receiver still holds the first request');
    assert.equal(count(current, 'stalled', 'sent') + count(current, 'stalled', 'failed'), 0);
    // Released, it gets the rest in order.
    a.setFallback({ status: 200 });
    a.releaseStalled();
    await waitFor(() => count(current as Run, 'stalled', 'sent') === 3, {
      timeoutMs: 10_000,
      description: 'the stalled receiver caught up',
    });
    assert.deepEqual(
      a.bodies().map((x) => x.node),
      ['worker-1', 'worker-2', 'worker-3'],
    );
  });

  it('a full queue drops the oldest waiting event, counted and logged, and never blocks notify()', async function () {
    a.answerNext('stall');
    current = run({ queueSize: 2, receivers: [{ name: 'slow', type: 'webhook', url: a.url(), timeout: '60s' }] });
    current.notify([event(1)]);
    await waitFor(() => a.deliveries.length === 1 || undefined, {
      timeoutMs: 10_000,
      description: 'event 1 in flight (stalled)',
    });
    current.notify([2, 3, 4, 5, 6].map((n) => event(n)));
    assert.equal(count(current, 'slow', 'dropped'), 3, 'queue of 2: events 2, 3 and 4 dropped');
    assert.deepEqual(
      current.logs.filter((l) => l.msg.includes('dropped')).map((l) => l.fields.key),
      ['uid-2:node.completed:t', 'uid-3:node.completed:t', 'uid-4:node.completed:t'],
    );
    a.releaseStalled();
    await waitFor(() => count(current as Run, 'slow', 'sent') === 3, {
      timeoutMs: 10_000,
      description: 'the queued events delivered',
    });
    assert.deepEqual(
      a.bodies().map((x) => x.node),
      ['worker-1', 'worker-5', 'worker-6'],
    );
  });
});
