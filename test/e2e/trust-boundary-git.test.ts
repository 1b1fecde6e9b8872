// The trust boundary of plans in Git mode, through the real `kangal-patch run` process with the lab
// forge: hostile files pushed as an attacker with push access would push them, beside a benign plan.
// Refused files get a failing commit status naming the file and field and are never applied; a hook
// asking for the controller's identity and Secret is refused before any Job exists; a probing check
// waits with a fixed verdict. Canary values sit in a ConfigMap the health-check identity may read, in
// Secrets of the operator and another namespace, and in a pod's environment: none may appear in the
// PatchPlans, PatchJobs, Events, the controller's log, any pull request or branch the controller
// wrote, or any request it sent the forge (commit statuses and comments included).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { OPERATOR_NAMESPACE, startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { grantHealthReads } from './support/health-identity.js';
import { labPlan, type PlanDoc } from './support/plans.js';
import { controllerOutputs, labSecrets, secretLeaks } from './support/secrets-scan.js';
import { waitFor } from '../lab/wait.js';

const POOL = 'lab.kangalpatch.io/pool';
const VICTIM = 'victim';
const POOLS = ['benign', 'value', 'hook', 'priority', 'registry', 'account', 'pods'] as const;
const labels = Object.fromEntries(POOLS.map((pool, i) => [`worker-${i + 1}`, { [POOL]: pool }]));

interface CommitStatus {
  state: string;
  context: string;
  description: string | null;
}
interface Pull {
  number: number;
  draft: boolean;
  head: { ref: string };
}

describe('trust boundary through Git: hostile pushes beside a benign plan', function () {
  this.timeout(300_000);
  let lab: JobLab;
  let controller: Controller;
  const canary = `canary-${randomBytes(12).toString('hex')}`;
  const secretCanary = `secret-${randomBytes(12).toString('hex')}`;
  const podCanary = `podenv-${randomBytes(12).toString('hex')}`;

  const plan = (name: string, pool: (typeof POOLS)[number], spec: Record<string, unknown> = {}): PlanDoc =>
    labPlan(
      {
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
      },
      lab.talos.endpoint,
    );
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
  const api = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${lab.forge!.apiUrl}${path}`, {
      headers: { authorization: `token ${lab.forge!.token}`, accept: 'application/vnd.github+json' },
    });
    assert.equal(res.status, 200, `GET ${path}`);
    return (await res.json()) as T;
  };
  /** Pushes `files` alone (the previous hostile push removed in the same commit) and returns the failing commit status the controller gives it. */
  let pushed: string[] = [];
  const refused = async (files: Record<string, string>): Promise<string> => {
    if (pushed.length > 0) await lab.plans!.git(['rm', '--quiet', '-r', ...pushed]);
    for (const [path, text] of Object.entries(files)) await lab.plans!.write(path, text);
    pushed = Object.keys(files);
    const sha = await lab.plans!.commitAndPush(`add ${pushed.length === 1 ? pushed[0] : `${pushed.length} files`}`);
    const failure = await waitFor(
      async () =>
        (await api<CommitStatus[]>(`/repos/acme/plans/commits/${sha}/statuses`)).find((s) => s.state === 'failure'),
      { timeoutMs: 60_000, description: `a failing commit status for ${pushed.join(', ').slice(0, 80)}` },
    );
    return failure.description ?? '';
  };
  const refusedPlan = (path: string, doc: PlanDoc): Promise<string> => refused({ [path]: stringify(doc) });
  const withHook = (
    template: Record<string, unknown>,
    over: Record<string, unknown> = {},
  ): Record<string, unknown> => ({
    hooks: {
      prePlan: { template: { spec: { containers: [{ name: 'h', image: 'example/hook' }] }, ...template }, ...over },
    },
  });

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: POOLS.length + 1, controlPlanes: 1, talosVersion: 'v1.12.4' },
      labels,
      images: ['siderolabs/installer:v1.13.2'],
      plansRepo: true,
    });
    const core = lab.kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: VICTIM } } });
    await core.createNamespacedConfigMap({
      namespace: VICTIM,
      body: { metadata: { name: 'canary' }, data: { token: canary } },
    });
    for (const namespace of [VICTIM, OPERATOR_NAMESPACE])
      await core.createNamespacedSecret({
        namespace,
        body: { metadata: { name: 'canary' }, stringData: { token: secretCanary } },
      });
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
    await grantHealthReads(lab.kc, 'trust-boundary-git-reads', ['configmaps']);
    controller = lab.startController({
      args: lab.gitArgs({
        pollInterval: '2s',
        extra: [
          '--forge',
          'github',
          '--forge-api-url',
          lab.forge!.apiUrl,
          '--hook-image-registries',
          'registry.example.com/hooks',
        ],
      }),
    });
    await waitFor(() => controller.logs().some((l) => l.msg === 'GitOps loop started') || undefined, {
      timeoutMs: 60_000,
      description: 'the GitOps loop to start',
    });
  });
  after(async function () {
    await lab?.stop();
  });

  it("refused at load, named by file and field or by the cap it breaks, never applied: Secret checks, nested comprehensions, unbounded durations, labels and annotations posing as the controller's, a blob bomb, too many files, too many plans", async function () {
    for (const namespace of [OPERATOR_NAMESPACE, VICTIM]) {
      const said = await refusedPlan(
        'plans/secret-check.yaml',
        plan('secret-check', 'value', { healthChecks: [check('true', { kind: 'Secret', namespace })] }),
      );
      assert.match(
        said,
        /plans\/secret-check\.yaml:\d+:\d+: spec\.healthChecks\[0\]\.kind: Secrets cannot be health-checked/,
        `${namespace}: ${said}`,
      );
    }
    const nested = `data.all(a, data.all(b, data.all(c, data.all(d, a + b + c + d != ""))))`;
    // The status description is cut at GitHub's 140 characters.
    assert.match(
      await refusedPlan('plans/nested.yaml', plan('nested', 'value', { healthChecks: [check(nested)] })),
      /plans\/nested\.yaml:\d+:\d+: spec\.healthChecks\[0\]\.expr: invalid CEL expression: comprehensions .* nest 4 de/,
    );
    // A month between rounds and a month-long hook: past their maximum, a mistake or a stall.
    const slow = plan('slow', 'value');
    assert.match(
      await refusedPlan('plans/slow.yaml', { ...slow, spec: { ...slow.spec, delayBetweenNodes: '720h' } }),
      /plans\/slow\.yaml:\d+:\d+: spec\.delayBetweenNodes: .*168h/,
    );
    assert.match(
      await refusedPlan('plans/long-hook.yaml', plan('long-hook', 'value', withHook({}, { timeout: '720h' }))),
      /plans\/long-hook\.yaml:\d+:\d+: spec\.hooks\.prePlan\.timeout: .*6h/,
    );
    // A hook pod posing as the controller's objects, or changing how it is secured.
    assert.match(
      await refusedPlan(
        'plans/pose.yaml',
        plan('pose', 'value', withHook({ metadata: { labels: { 'app.kubernetes.io/name': 'kangal-patch' } } })),
      ),
      /plans\/pose\.yaml:\d+:\d+: spec\.hooks\.prePlan\.template\.metadata\.labels\["app\.kubernetes\.io\/name"\]: label "app\.kubernetes\.io\/name" is refused/,
    );
    assert.match(
      await refusedPlan(
        'plans/unconfined.yaml',
        plan(
          'unconfined',
          'value',
          withHook({ metadata: { annotations: { 'container.apparmor.security.beta.kubernetes.io/h': 'unconfined' } } }),
        ),
      ),
      /plans\/unconfined\.yaml:\d+:\d+: spec\.hooks\.prePlan\.template\.metadata\.annotations/,
    );
    // 4 MiB of zeros deflate to a few KiB: refused by its size before it is inflated.
    assert.match(
      await refused({ 'plans/bomb.yaml': `# ${'0'.repeat(4 * 1024 * 1024)}\n` }),
      /plans\/bomb\.yaml:1:1: file is more than \d+ bytes \(the cap on one object fetched from Git/,
    );
    // 501 files, then 504 plans in 8 files (63 documents of one line of JSON each, within the per-file caps): over the caps, the whole commit refused.
    const tiny = (name: string): string => JSON.stringify(plan(name, 'value'));
    assert.match(
      await refused(
        Object.fromEntries(Array.from({ length: 501 }, (_, i) => [`plans/many/p${i}.yaml`, tiny(`many-${i}`)])),
      ),
      /over the cap of 500 plan files per commit/,
    );
    const docs = (file: number): string =>
      Array.from({ length: 63 }, (_, i) => tiny(`multi-${file * 63 + i}`)).join('\n---\n');
    assert.match(
      await refused(Object.fromEntries(Array.from({ length: 8 }, (_, f) => [`plans/multi-${f}.yaml`, docs(f)]))),
      /over the cap of 500 PatchPlans per commit/,
    );
    await lab.plans!.git(['rm', '--quiet', '-r', ...pushed]);
    await lab.plans!.commitAndPush('remove the refused files');
    pushed = [];
    for (const name of ['secret-check', 'nested', 'slow', 'long-hook', 'pose', 'unconfined', 'many-0', 'multi-0'])
      assert.equal(await lab.plan(name), undefined, `${name} never applied`);
  });

  it("hooks asking for the controller's identity and its Talos Secret, a system PriorityClass, a registry or ServiceAccount not allowed, a check on a kind not granted, and a probing check, beside a benign plan: the benign plan completes with its report PR; nothing leaks anywhere", async function () {
    const hook = {
      timeout: '2m',
      template: {
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
      },
    };
    await lab.plans!.write('plans/hook.yaml', stringify(plan('hook', 'hook', { hooks: { prePlan: hook } })));
    await lab.plans!.write(
      'plans/value.yaml',
      stringify(plan('value', 'value', { healthChecks: [check('data["token"]')] })),
    );
    await lab.plans!.write('plans/benign.yaml', stringify(plan('benign', 'benign')));
    const refusedInPreflight: [(typeof POOLS)[number], Record<string, unknown>, RegExp][] = [
      [
        'priority',
        withHook({
          spec: {
            priorityClassName: 'system-node-critical',
            containers: [{ name: 'h', image: 'registry.example.com/hooks/noout' }],
          },
        }),
        /PriorityClass system-node-critical is not allowed for hooks \(a system PriorityClass/,
      ],
      [
        'registry',
        withHook({ spec: { containers: [{ name: 'h', image: 'docker.io/attacker/miner' }] } }),
        /image docker\.io\/attacker\/miner is not from an allowed registry/,
      ],
      [
        'account',
        withHook({
          spec: {
            serviceAccountName: 'cluster-admin',
            containers: [{ name: 'h', image: 'registry.example.com/hooks/noout' }],
          },
        }),
        /ServiceAccount cluster-admin is not allowed for hooks/,
      ],
      [
        'pods',
        { healthChecks: [check('true', { kind: 'Pod', objectName: 'holder' })] },
        /grant get\/list\/watch on pods in namespace victim/,
      ],
    ];
    for (const [name, spec] of refusedInPreflight)
      await lab.plans!.write(`plans/${name}.yaml`, stringify(plan(name, name, spec)));
    await lab.plans!.commitAndPush('seven plans');

    const hooked = await lab.waitForPlan(
      'hook',
      'the hook plan refused in preflight',
      (s) => s.reason === 'PreflightHookAdmission',
      120_000,
    );
    assert.match(String(hooked.message), /ServiceAccount kangal-patch-controller is the controller's own name/);
    for (const [name, , expected] of refusedInPreflight) {
      const st = await lab.waitForPlan(
        name,
        `${name} refused in preflight`,
        (s) => expected.test(String(s.message)),
        120_000,
      );
      assert.match(String(st.message), expected, name);
    }
    const valued = await lab.waitForPlan(
      'value',
      'the probing plan holding with its verdict',
      (s) => /canary: not a bool/.test(String(s.message)),
      120_000,
    );
    assert.doesNotMatch(JSON.stringify(valued), new RegExp(canary));
    await lab.waitForPlan('benign', 'the benign plan Completed', (s) => s.phase === 'Completed', 180_000);
    const ready = await waitFor(
      async () =>
        (await api<Pull[]>('/repos/acme/plans/pulls?state=all')).find(
          (p) => p.head.ref.startsWith('kangal-patch/lab/report/benign-') && !p.draft,
        ),
      { timeoutMs: 90_000, description: "the benign plan's report PR ready for review" },
    );
    assert.ok(ready.number > 0);

    // No hook Job exists anywhere; only the benign plan's node was cordoned (the observer's own watch).
    const jobs = await lab.kc.makeApiClient(BatchV1Api).listJobForAllNamespaces();
    assert.deepEqual(
      jobs.items.map((j) => `${j.metadata?.namespace}/${j.metadata?.name}`),
      [],
      'no hook Job was created',
    );
    const cordoned = new Set(lab.observer.events.filter((e) => e.kind === 'cordoned').map((e) => e.node));
    assert.deepEqual([...cordoned], ['worker-1'], "only the benign plan's node was cordoned");

    const leaks = secretLeaks(await controllerOutputs(lab, [controller]), [
      canary,
      secretCanary,
      podCanary,
      ...labSecrets(lab),
    ]);
    assert.deepEqual(leaks, [], `a canary or credential appeared in ${leaks.join(', ')}`);
  });
});
