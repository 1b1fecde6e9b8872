// The Alertmanager adapter (controller/alertmanager) against the lab's real Alertmanager: firing
// alerts by matcher (silenced and ignored ones aside), silences found again by their tag instead of
// doubled, expired by ID or tag, and errors classified for the work queue. The token is sent as a
// header and never appears in a message.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAlertmanagerClient } from '../../controller/alertmanager/client.js';
import { createAlertGateAnswers } from '../../controller/alertmanager/gate.js';
import { rootContext } from '../../controller/runtime/context.js';
import { systemClock } from '../../controller/runtime/clock.js';
import { isOutcomeError } from '../../controller/runtime/outcome.js';
import { alertGate } from '../../schemas/alerts.js';
import { parseMatchers, type Matcher } from '../../schemas/matchers.js';
import { startAlertmanager, type LabAlertmanager } from '../lab/alerting/alertmanager.js';
import { freePort } from '../lab/net.js';
import { makeLabDir, type LabDir } from '../lab/process.js';

const ctx = () => rootContext(systemClock, new AbortController().signal, 10_000);
const m = (text: string): Matcher[] => {
  const p = parseMatchers(text);
  if (!p.ok) throw new Error(p.error);
  return p.matchers;
};

describe('alertmanager adapter against the lab Alertmanager', function () {
  this.timeout(120_000);
  let am: LabAlertmanager;
  let dir: LabDir;

  before(async function () {
    am = await startAlertmanager();
    dir = makeLabDir('kangal-am-client');
    await am.fire([
      { labels: { alertname: 'CephHealthError', severity: 'critical', namespace: 'rook-ceph' } },
      { labels: { alertname: 'Watchdog', severity: 'critical' } },
      { labels: { alertname: 'KubeNodeNotReady', severity: 'warning', node: 'w1' } },
      { labels: { alertname: 'KubeNodeNotReady', severity: 'warning', node: 'w2' } },
    ]);
  });
  after(async function () {
    await am?.stop();
    dir?.remove();
  });

  it('lists the firing alerts that match every matcher (regex included)', async function () {
    const client = createAlertmanagerClient({ url: am.url });
    const critical = await client.firingAlerts(ctx(), m('severity="critical"'));
    assert.deepEqual(critical.map((a) => a.labels['alertname']).sort(), ['CephHealthError', 'Watchdog']);
    const ceph = await client.firingAlerts(ctx(), m('{alertname=~"Ceph.*", namespace="rook-ceph"}'));
    assert.deepEqual(
      ceph.map((a) => a.labels['alertname']),
      ['CephHealthError'],
    );
    assert.ok(ceph[0]?.fingerprint);
  });

  it("the gate's answer: matched minus ignored, by fingerprint", async function () {
    const answers = createAlertGateAnswers(createAlertmanagerClient({ url: am.url }), 10_000);
    await answers.ask(
      ctx(),
      'p',
      alertGate.parse({ alerts: ['severity="critical"'], ignore: ['alertname="Watchdog"'] }),
    );
    const facts = answers.facts('p');
    assert.equal(facts?.state, 'observed');
    if (facts?.state !== 'observed') return;
    assert.equal(facts.matched.length, 2);
    assert.equal(facts.ignored.length, 1);
  });

  it('a silence is created once per tag (a restart finds it), silences its node only, and is expired by ID or tag', async function () {
    const client = createAlertmanagerClient({ url: am.url });
    const request = {
      name: 'node-alerts',
      tag: 'plan-w1/node-alerts@2026-12-05T10:00:00.000Z',
      matchers: [...m('alertname=~"KubeNode.*"'), { name: 'node', op: '=' as const, value: 'w1' }],
      endsAt: new Date(Date.now() + 600_000).toISOString(),
      createdBy: 'kangal-patch',
      comment: 'KangalPatch test [plan-w1/node-alerts@2026-12-05T10:00:00.000Z]',
    };
    const id = await client.createSilence(ctx(), request);
    assert.equal(await client.createSilence(ctx(), request), id, 'the second create finds the first by its tag');
    assert.equal((await am.silences()).filter((s) => s.status.state === 'active').length, 1);
    const firing = await client.firingAlerts(ctx(), m('alertname="KubeNodeNotReady"'));
    assert.deepEqual(
      firing.map((a) => a.labels['node']),
      ['w2'],
      'w1 silenced (not firing for the gate), w2 not',
    );

    await client.expireSilence(ctx(), request.tag, undefined);
    assert.equal((await am.silences()).find((s) => s.id === id)?.status.state, 'expired', 'expired by its tag');
    await client.expireSilence(ctx(), request.tag, id);
    await client.expireSilence(ctx(), request.tag, '00000000-0000-0000-0000-000000000000');
    const again = await client.createSilence(ctx(), request);
    assert.notEqual(again, id, 'an expired silence is not reused');
    await client.expireSilence(ctx(), request.tag, again);
  });

  it('refusals are Stalled, an unreachable Alertmanager is Transient; the token goes in a header and never into a message', async function () {
    const tokenFile = join(dir.path, 'token');
    writeFileSync(tokenFile, 's3cr3t-token\n');
    let seen: string | null = null;
    const spy: typeof fetch = (input, init) => {
      seen = new Headers(init?.headers).get('authorization');
      return fetch(input, init);
    };
    const client = createAlertmanagerClient({ url: am.url, tokenFile, fetch: spy });
    const bad = await client
      .createSilence(ctx(), {
        name: 'x',
        tag: 't',
        matchers: [],
        endsAt: new Date(Date.now() + 60_000).toISOString(),
        createdBy: 'kangal-patch',
        comment: '[t]',
      })
      .catch((e: unknown) => e);
    assert.equal(seen, 'Bearer s3cr3t-token');
    assert.ok(isOutcomeError(bad), String(bad));
    assert.equal(bad.kind, 'Stalled');
    assert.equal(bad.reason, 'AlertmanagerRejected');
    assert.doesNotMatch(bad.message, /s3cr3t/);

    const down = createAlertmanagerClient({ url: `http://127.0.0.1:${await freePort()}`, tokenFile });
    const err = await down.firingAlerts(ctx(), m('a="b"')).catch((e: unknown) => e);
    assert.ok(isOutcomeError(err));
    assert.equal(err.kind, 'Transient');
    assert.equal(err.reason, 'AlertmanagerUnreachable');
    assert.match(err.message, /ECONNREFUSED/);
    assert.doesNotMatch(err.message, /s3cr3t/);
  });
});
