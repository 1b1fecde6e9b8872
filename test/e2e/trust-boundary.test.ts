// The trust boundary of plans, through the real `kangal-patch run` process: plans written as an
// attacker with push access would write them, applied beside a benign plan. A plan may choose which
// nodes go to which release, how and when — nothing else. Canary values sit in a ConfigMap the
// health-check identity may read, in a pod's environment it may not, and in the Talos Secret; none
// may appear in anything a plan author or a viewer can read (status, Events, the controller's log).
// The oracle is the lab's observer and the apiserver's own objects, not the controller's status.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { grantHealthReads } from './support/health-identity.js';
import { labPlan, type PlanDoc } from './support/plans.js';
import { controllerOutputs, labSecrets, secretLeaks } from './support/secrets-scan.js';
import { startWebhookReceiver, type WebhookReceiver } from '../lab/webhook-receiver.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { waitFor } from '../lab/wait.js';

const POOL = 'lab.kangalpatch.io/pool';
const VICTIM = 'victim';
/** One node per plan: plans that share a node refuse each other in preflight. */
const POOLS = [
  'benign',
  'value',
  'convert',
  'probe',
  'pods',
  'bomb',
  'doubling',
  'wide',
  'length',
  'overload',
  'regex',
  'keys',
  'podlist',
  'own-identity',
  'priority',
  'account',
  'pose',
  'unconfined',
] as const;
const labels = Object.fromEntries(POOLS.map((pool, i) => [`worker-${i + 1}`, { [POOL]: pool }]));

function plan(name: (typeof POOLS)[number], spec: Record<string, unknown> = {}): PlanDoc {
  return {
    apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
    kind: 'PatchPlan',
    metadata: { name },
    spec: {
      target: { talosVersion: 'v1.13.2' },
      nodeSelector: { matchLabels: { [POOL]: name } },
      strategy: { order: ['workers'] },
      failurePolicy: { type: 'Pause' },
      ...spec,
    },
  };
}

const hook = (template: Record<string, unknown>, over: Record<string, unknown> = {}): Record<string, unknown> => ({
  template: { spec: { containers: [{ name: 'h', image: 'example/hook' }] }, ...template },
  ...over,
});

const check = (expr: string, over: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: 'probe',
  apiVersion: 'v1',
  kind: 'ConfigMap',
  namespace: VICTIM,
  objectName: 'canary',
  expr,
  timeout: '30m',
  when: 'beforeRollout',
  ...over,
});

describe('trust boundary: a plan chooses nodes, releases, how and when — nothing else', function () {
  this.timeout(300_000);
  let lab: JobLab;
  let controller: Controller;
  // Every notification the controller sends (all events, plan.waiting after 1 s) goes into the scan too.
  let receiver: WebhookReceiver;
  let dir: string;
  // Random per run: nothing can have it but the objects this test wrote.
  const canary = `canary-${randomBytes(12).toString('hex')}`;
  const podCanary = `podenv-${randomBytes(12).toString('hex')}`;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: POOLS.length + 1, controlPlanes: 1, talosVersion: 'v1.12.4' },
      labels,
      images: ['siderolabs/installer:v1.13.2'],
    });
    const core = lab.kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: VICTIM } } });
    // 100 keys: three nested comprehensions over them are 10^6 steps.
    const data: Record<string, string> = {
      token: canary,
      ...Object.fromEntries(Array.from({ length: 99 }, (_, i) => [`k${i}`, `${i}`])),
    };
    await core.createNamespacedConfigMap({ namespace: VICTIM, body: { metadata: { name: 'canary' }, data } });
    await core.createNamespacedPod({
      namespace: VICTIM,
      body: {
        metadata: { name: 'holder' },
        spec: {
          nodeName: 'no-such-node',
          containers: [{ name: 'c', image: 'example/app', env: [{ name: 'TOKEN', value: podCanary }] }],
        },
      },
    });
    // What the operator granted the health-check identity: ConfigMaps, not Pods.
    await grantHealthReads(lab.kc, 'trust-boundary-reads', ['configmaps']);
    receiver = await startWebhookReceiver();
    dir = mkdtempSync(join(tmpdir(), 'kp-trust-notify-'));
    const notify = join(dir, 'notify.yaml');
    writeFileSync(
      notify,
      stringify({ waitingAfter: '1s', receivers: [{ name: 'all', type: 'webhook', url: receiver.url() }] }),
      { mode: 0o600 },
    );
    controller = lab.startController({ args: ['--notify-config-file', notify] });
  });
  after(async function () {
    await lab?.stop();
    await receiver?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a check on Secrets is refused by the apiserver (CRD rule) before any controller sees it', async function () {
    const secretCheck = check('true', { kind: 'Secret', namespace: 'kangal-patch', objectName: 'talos-credentials' });
    await assert.rejects(
      lab.applyPlan(labPlan(plan('value', { healthChecks: [secretCheck] }), lab.talos.endpoint)),
      /Secrets cannot be health-checked/,
    );
  });

  it("past their maximum, a month between rounds and a month-long hook are refused by the apiserver (the CRD's rules), naming the field", async function () {
    const refusals: [string, Record<string, unknown>, RegExp][] = [
      ['delayBetweenNodes 720h', { delayBetweenNodes: '720h' }, /spec\.delayBetweenNodes.*168h/],
      ['hook timeout 720h', { hooks: { prePlan: hook({}, { timeout: '720h' }) } }, /spec\.hooks\.prePlan\.timeout.*6h/],
    ];
    for (const [what, spec, expected] of refusals) {
      const doc = labPlan(plan('value'), lab.talos.endpoint);
      await assert.rejects(lab.applyPlan({ ...doc, spec: { ...doc.spec, ...spec } }), expected, what);
    }
    assert.equal(await lab.plan('value'), undefined, 'nothing applied');
  });

  it('hostile checks beside a benign plan: the benign plan completes; each hostile one waits with a fixed verdict, never a value; no canary anywhere', async function () {
    const hostile: [(typeof POOLS)[number], Record<string, unknown>, RegExp][] = [
      // The value as the result, as a conversion error, as a startsWith probe.
      ['value', check('data["token"]'), /canary: not a bool/],
      ['convert', check('bool(data["token"]) && int(data.token) > 0'), /canary: evaluation error/],
      ['probe', check('data.token.startsWith("zzz")'), /canary: false/],
      // A kind the identity was not granted, although the controller lists pods everywhere.
      [
        'pods',
        check('true', { kind: 'Pod', objectName: 'holder' }),
        /grant get\/list\/watch on pods in namespace victim to ServiceAccount kangal-patch\/kangal-patch-health/,
      ],
      // 10^6 steps, and a string doubled 40 times: over the budget, the controller goes on.
      ['bomb', check('data.all(a, data.all(b, data.all(c, a + b + c != "")))'), /canary: over its cost budget/],
      ['doubling', check(`[data.token]${'.map(x, x + x)'.repeat(40)}.size() > 0`), /canary: over its cost budget/],
      // Every ConfigMap of the cluster, but none of them holds: still only names and verdicts.
      [
        'wide',
        check('data.token == "guess"', { namespace: undefined, objectName: undefined }),
        /\d+ of \d+ ConfigMap object\(s\) fail `data\.token == "guess"`: [^:]+: (false|evaluation error)/,
      ],
      // Its length, the value inside a type error's text, a catastrophic regex, a key probe: still only the verdict.
      ['length', check('size(data.token) == 3'), /canary: false/],
      ['overload', check('data.token + 1 > 0'), /canary: evaluation error/],
      ['regex', check('data.token.matches("^(a+)+$")'), /canary: false/],
      ['keys', check('data.exists(k, k == "nope")'), /canary: false/],
      // Every pod of the cluster through a selector-less check: the kind is not granted, the controller's own pod list never serves it.
      [
        'podlist',
        check('true', { kind: 'Pod', namespace: undefined, objectName: undefined }),
        /grant get\/list\/watch on pods/,
      ],
    ];
    // Hooks asking for the controller's identity and Talos Secret, a system PriorityClass, a ServiceAccount not allowed: refused in preflight, no Job.
    const hooks: [(typeof POOLS)[number], Record<string, unknown>, RegExp][] = [
      [
        'own-identity',
        hook({
          spec: {
            serviceAccountName: 'kangal-patch-controller',
            containers: [
              {
                name: 'steal',
                image: 'example/steal',
                env: [{ name: 'KEY', valueFrom: { secretKeyRef: { name: 'talos-credentials', key: 'tls.key' } } }],
              },
            ],
          },
        }),
        /ServiceAccount kangal-patch-controller is the controller's own name/,
      ],
      [
        'priority',
        hook({
          spec: { priorityClassName: 'system-cluster-critical', containers: [{ name: 'h', image: 'example/hook' }] },
        }),
        /PriorityClass system-cluster-critical is not allowed for hooks \(a system PriorityClass/,
      ],
      [
        'account',
        hook({ spec: { serviceAccountName: 'cluster-admin', containers: [{ name: 'h', image: 'example/hook' }] } }),
        /ServiceAccount cluster-admin is not allowed for hooks/,
      ],
    ];
    for (const [name, h] of hooks)
      await lab.applyPlan(labPlan(plan(name, { hooks: { prePlan: h } }), lab.talos.endpoint));
    // A hook pod posing as the controller's objects, or changing how it is secured: past the CRD's schema, the controller refuses the spec.
    const invalid: [(typeof POOLS)[number], Record<string, unknown>, RegExp][] = [
      [
        'pose',
        hook({ metadata: { labels: { 'app.kubernetes.io/name': 'kangal-patch' } } }),
        /spec is invalid: .*labels.*app\.kubernetes\.io\/name.*refused/,
      ],
      [
        'unconfined',
        hook({ metadata: { annotations: { 'seccomp.security.alpha.kubernetes.io/pod': 'unconfined' } } }),
        /spec is invalid: .*annotation "seccomp\.security\.alpha\.kubernetes\.io\/pod" is refused/,
      ],
    ];
    for (const [name, h] of invalid)
      await lab.applyPlan(labPlan(plan(name, { hooks: { prePlan: h } }), lab.talos.endpoint));
    for (const [name, c] of hostile)
      await lab.applyPlan(labPlan(plan(name, { healthChecks: [c] }), lab.talos.endpoint));
    await lab.applyPlan(labPlan(plan('benign'), lab.talos.endpoint));

    for (const [name, , expected] of hostile) {
      const st = await lab.waitForPlan(
        name,
        `${name} holds with its verdict`,
        (s) => typeof s['message'] === 'string' && expected.test(s['message']),
        120_000,
      );
      assert.match(String(st['message']), expected, name);
    }
    for (const [name, , expected] of hooks) {
      const st = await lab.waitForPlan(
        name,
        `${name} refused in preflight`,
        (s) => s['reason'] === 'PreflightHookAdmission',
        120_000,
      );
      assert.match(String(st['message']), expected, name);
    }
    for (const [name, , expected] of invalid) {
      const st = await lab.waitForPlan(
        name,
        `${name} refused as invalid`,
        (s) => s['reason'] === 'InvalidSpec',
        120_000,
      );
      assert.equal(st['phase'], 'Failed');
      assert.match(String(st['message']), expected, name);
    }
    const done = await lab.waitForPlan(
      'benign',
      'the benign plan Completed',
      (s) => s['phase'] === 'Completed',
      180_000,
    );
    assert.equal(done['phase'], 'Completed');
    // No hostile plan disrupted a node: the observer's own record of cordons.
    const cordoned = new Set(lab.observer.events.filter((e) => e.kind === 'cordoned').map((e) => e.node));
    assert.deepEqual([...cordoned].sort(), ['worker-1'], "only the benign plan's node was cordoned");
    const jobs = await lab.kc.makeApiClient(BatchV1Api).listJobForAllNamespaces();
    assert.deepEqual(
      jobs.items.map((j) => `${j.metadata?.namespace}/${j.metadata?.name}`),
      [],
      'no hook Job was created',
    );

    // Each hostile plan was notified: waiting on its check, or failed in preflight (a kind not granted).
    const told = (): Set<unknown> =>
      new Set(
        receiver
          .bodies()
          .filter((b) => b['type'] === 'plan.waiting' || b['type'] === 'plan.failed')
          .map((b) => b['plan']),
      );
    await waitFor(() => hostile.every(([name]) => told().has(name)) || undefined, {
      timeoutMs: 30_000,
      description: `a notification for every hostile plan (so far: ${[...told()].join(', ')})`,
    });
    const notifications = {
      what: 'notifications',
      text: receiver.deliveries.map((d) => `${JSON.stringify(d.headers)}\n${d.body}`).join('\n'),
    };
    const leaks = secretLeaks(
      [...(await controllerOutputs(lab, [controller])), notifications],
      [canary, podCanary, ...labSecrets(lab)],
    );
    assert.deepEqual(leaks, [], `a canary or credential appeared in ${leaks.join(', ')}`);
  });
});
