// The generated CRDs against a real kube-apiserver: accepted, Established, explainable, defaulting
// like the zod schemas, and rejecting what OpenAPI (and CEL) can express. The cross-field rules are
// covered one by one, with validate's messages, in admission.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { loadPlanSources } from '../../controller/gitops/load/index.js';
import type { LabCluster } from '../lab/cluster/index.js';
import { waitFor } from '../lab/wait.js';
import { kubectl as runKubectl, type KubectlRun } from '../support/kubectl.js';
import { sharedCluster } from '../support/shared-cluster.js';
import { basePlan, planYaml, type Doc } from '../unit/schemas/plan-fixtures.js';

describe('CRDs on the lab apiserver', function () {
  this.timeout(180_000);
  let cluster: LabCluster;

  const kubectl = (args: string[], input?: string): Promise<KubectlRun> => runKubectl(cluster, args, input);

  async function ok(args: string[], input?: string): Promise<string> {
    const r = await kubectl(args, input);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed: ${r.stderr}`);
    return r.stdout;
  }

  /** Applies `yaml` and expects the apiserver to refuse it with a message naming `field`. */
  async function rejected(yaml: string, field: string, phrase: RegExp): Promise<void> {
    const r = await kubectl(['apply', '-f', '-'], yaml);
    assert.notEqual(r.code, 0, `accepted:\n${yaml}`);
    assert.ok(r.stderr.includes(field), `stderr names ${field}: ${r.stderr}`);
    assert.match(r.stderr, phrase);
  }

  const named = (name: string, edit: (d: Doc) => void) =>
    planYaml((d) => {
      d.metadata.name = name;
      edit(d);
    });

  before(async function () {
    cluster = await sharedCluster();
    await ok(['apply', '-k', 'kustomize/crd']);
    // kubectl wait fails at once ("status.conditions accessor error: <nil>") when it reads a CRD
    // before the apiserver gave it any condition: ask again until Established, within a deadline.
    const wait = [
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/patchplans.kangalpatch.ozalp.dk',
      'crd/patchjobs.kangalpatch.ozalp.dk',
    ];
    let last = '';
    await waitFor(
      async () => {
        const r = await kubectl(wait);
        last = r.stderr;
        return r.code === 0 || undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500, description: `kubectl ${wait.join(' ')}` },
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}: ${last}`);
    });
  });

  after(async function () {
    if (!cluster) return;
    await kubectl(['delete', 'patchplans,patchjobs', '-l', 'test=crd', '--ignore-not-found', '--wait=false']);
  });

  it('kubectl explain patchplan.spec.target describes the fields', async function () {
    // The apiserver publishes the CRD's OpenAPI a moment after Established.
    const out = await waitFor(
      async () => {
        const r = await kubectl(['explain', 'patchplan.spec.target']);
        return r.code === 0 ? r.stdout : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 250, description: 'kubectl explain patchplan.spec.target' },
    );
    for (const field of [
      'talosVersion',
      'kubernetesVersion',
      'source',
      'installer',
      'schematicID',
      'secureBoot',
      'autoUpdate',
    ]) {
      assert.match(out, new RegExp(`^\\s+${field}\\s`, 'm'), field);
    }
    assert.match(out, /Target Talos OS version/);
  });

  it('accepts every example plan (server-side dry run)', async function () {
    for (const file of [
      'simple-upgrade',
      'controlplane-only',
      'custom-groups',
      'maintenance-window',
      'auto-update',
      'hooks-ceph-noout',
    ]) {
      await ok(['apply', '--dry-run=server', '-f', `examples/${file}.yaml`]);
    }
  });

  it('defaults a minimal plan exactly as the zod schema does', async function () {
    const yaml = named('crdtest-defaults', (d) => (d.metadata.labels = { test: 'crd' }));
    await ok(['apply', '-f', '-'], yaml);
    const stored = JSON.parse(await ok(['get', 'patchplan', 'crdtest-defaults', '-o', 'json'])) as { spec: unknown };
    const [loaded] = loadPlanSources([{ file: 'p.yaml', content: yaml }]).plans;
    assert.deepEqual(stored.spec, loaded?.plan.spec);
  });

  it('has a status subresource and the printer columns', async function () {
    const status = {
      phase: 'InProgress',
      targetTalosVersion: 'v1.12.1',
      totalNodes: 6,
      runningNodes: 2,
      completedNodes: 3,
      failedNodes: 1,
    };
    await ok([
      'patch',
      'patchplan',
      'crdtest-defaults',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status }),
    ]);
    const table = await ok(['get', 'patchplan', 'crdtest-defaults']);
    const [header, row] = table.trim().split('\n');
    assert.deepEqual(header?.split(/\s+/), [
      'NAME',
      'PHASE',
      'TALOSTARGET',
      'K8STARGET',
      'TOTAL',
      'RUNNING',
      'COMPLETED',
      'FAILED',
      'AGE',
    ]);
    assert.match(row ?? '', /^crdtest-defaults\s+InProgress\s+v1\.12\.1\s+6\s+2\s+3\s+1\s+\S+$/);
    // spec is not writable through /status, status is not writable through the main resource
    await ok(['patch', 'patchplan', 'crdtest-defaults', '--type=merge', '-p', '{"status":{"phase":"Failed"}}']);
    assert.equal(await ok(['get', 'patchplan', 'crdtest-defaults', '-o', 'jsonpath={.status.phase}']), 'InProgress');
  });

  it('is cluster-scoped and answers to its short names', async function () {
    const names = await ok(['get', 'pp', '-o', 'name']);
    assert.match(names, /patchplan\.kangalpatch\.ozalp\.dk\/crdtest-defaults/);
    const resources = await ok([
      'api-resources',
      '--api-group=kangalpatch.ozalp.dk',
      '--namespaced=false',
      '-o',
      'name',
    ]);
    assert.deepEqual(resources.trim().split('\n').sort(), [
      'patchjobs.kangalpatch.ozalp.dk',
      'patchplans.kangalpatch.ozalp.dk',
    ]);
  });

  it('accepts a PatchJob and shows its columns', async function () {
    const job = {
      apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
      kind: 'PatchJob',
      metadata: { name: 'crdtest-job', labels: { test: 'crd' } },
      spec: {
        nodeName: 'worker-1',
        patchPlanRef: 'crdtest-defaults',
        group: 'workers',
        target: { talosVersion: 'v1.12.1' },
        talosConfig: { secretRef: { name: 'talos' } },
      },
    };
    await ok(['apply', '-f', '-'], stringify(job));
    const status = {
      phase: 'Rebooting',
      currentTalosVersion: 'v1.11.6',
      targetTalosVersion: 'v1.12.1',
      initialBootID: 'a',
    };
    await ok([
      'patch',
      'patchjob',
      'crdtest-job',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status }),
    ]);
    const [header, row] = (await ok(['get', 'pj', 'crdtest-job'])).trim().split('\n');
    assert.deepEqual(header?.split(/\s+/), ['NAME', 'NODE', 'PLAN', 'GROUP', 'PHASE', 'CURRENT', 'TARGET', 'AGE']);
    assert.match(
      row ?? '',
      /^crdtest-job\s+worker-1\s+crdtest-defaults\s+workers\s+Rebooting\s+v1\.11\.6\s+v1\.12\.1\s+\S+$/,
    );
    await rejected(
      stringify({ ...job, metadata: { name: 'crdtest-job2' }, spec: { ...job.spec, target: {} } }),
      'spec.target',
      /at least one of target.talosVersion or target.kubernetesVersion/,
    );
  });

  describe('rejects what the schema rejects', function () {
    const cases: [name: string, edit: (d: Doc) => void, field: string, phrase: RegExp][] = [
      [
        'concurrency 0',
        (d) => (d.spec.groups = { workers: { concurrency: 0 } }),
        'spec.groups.workers.concurrency',
        /greater than or equal to 1/,
      ],
      [
        'unknown failure policy',
        (d) => (d.spec.failurePolicy = { type: 'halt' }),
        'spec.failurePolicy.type',
        /Unsupported value: "halt"/,
      ],
      ['unknown source', (d) => (d.spec.target.source = 'docker'), 'spec.target.source', /Unsupported value: "docker"/],
      ['version without v', (d) => (d.spec.target.talosVersion = '1.12.1'), 'spec.target.talosVersion', /should match/],
      ['duration in days', (d) => (d.spec.delayBetweenNodes = '7d'), 'spec.delayBetweenNodes', /should match/],
      [
        'window at 24:00',
        (d) => (d.spec.maintenance = { windows: [{ startTime: '24:00', endTime: '01:00' }] }),
        'spec.maintenance.windows[0].startTime',
        /should match/,
      ],
      [
        'day name',
        (d) => (d.spec.maintenance = { windows: [{ days: ['Funday'], startTime: '01:00', endTime: '02:00' }] }),
        'spec.maintenance.windows[0].days[0]',
        /should match/,
      ],
      [
        'order lists a group twice',
        (d) => (d.spec.strategy = { order: ['workers', 'workers'] }),
        'spec.strategy.order[1]',
        /Duplicate value/,
      ],
      ['no target version', (d) => (d.spec.target = {}), 'spec.target', /at least one of target.talosVersion/],
      [
        'autoUpdate with a version',
        (d) => (d.spec.target.autoUpdate = { enabled: true }),
        'spec.target.talosVersion',
        /must be omitted when target.autoUpdate is enabled/,
      ],
      [
        'checkInterval below 1m',
        (d) => (d.spec.target = { autoUpdate: { enabled: true, checkInterval: '30s' } }),
        'spec.target.autoUpdate.checkInterval',
        /must be at least 1m/,
      ],
      [
        'retention over a year',
        (d) => (d.spec.retention = { history: '8761h' }),
        'spec.retention.history',
        /must be at most 8760h \(365 days\)/,
      ],
      [
        'delayBetweenNodes over a week',
        (d) => (d.spec.delayBetweenNodes = '720h'),
        'spec.delayBetweenNodes',
        /must be at most 168h \(7 days\)/,
      ],
      [
        'health-check timeout over 24h',
        (d) => (d.spec.healthChecks = [{ name: 'c', apiVersion: 'v1', kind: 'Node', expr: 'true', timeout: '25h' }]),
        'spec.healthChecks[0].timeout',
        /must be at most 24h/,
      ],
      [
        'hook timeout over 6h',
        (d) =>
          (d.spec.hooks = {
            preNode: { timeout: '7h', template: { spec: { containers: [{ name: 'c', image: 'busybox:1.37' }] } } },
          }),
        'spec.hooks.preNode.timeout',
        /must be at most 6h/,
      ],
      [
        'hook running as root',
        (d) =>
          (d.spec.hooks = {
            preNode: {
              template: {
                spec: { securityContext: { runAsUser: 0 }, containers: [{ name: 'c', image: 'busybox:1.37' }] },
              },
            },
          }),
        'spec.hooks.preNode.template.spec.securityContext.runAsUser',
        /greater than or equal to 1/,
      ],
      [
        'negative maxFailures',
        (d) => (d.spec.failurePolicy = { maxFailures: -1 }),
        'spec.failurePolicy.maxFailures',
        /greater than or equal to 0/,
      ],
      ['unknown field', (d) => (d.spec.maxConcurency = 1), 'maxConcurency', /unknown field/],
    ];
    cases.forEach(([name, edit, field, phrase], i) => {
      it(name, async function () {
        await rejected(named(`crdtest-bad-${i}`, edit), field, phrase);
      });
    });

    it('an unknown status phase', async function () {
      const r = await kubectl([
        'patch',
        'patchplan',
        'crdtest-defaults',
        '--subresource=status',
        '--type=merge',
        '-p',
        '{"status":{"phase":"Done"}}',
      ]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /status.phase: Unsupported value: "Done"/);
    });
  });

  it('round-trips the base plan used by the unit tests', function () {
    // Guards the fixture: the rejection cases above only mean something if the base is valid.
    assert.deepEqual(loadPlanSources([{ file: 'p.yaml', content: stringify(basePlan()) }]).problems, []);
    assert.ok(readFileSync('kustomize/crd/kustomization.yaml', 'utf8').includes('resources:'));
  });
});
