// Invalid plans refused at `kubectl apply`, without a webhook: the CRD's CEL rules (generated from
// schemas/rules.ts, like the zod rules of `kangal-patch validate`) against the real lab apiserver.
// For each document of the corpus the apiserver must refuse it and report exactly the problems
// `validate` reports: the same paths and the same messages (validate may append the rule's detail,
// which CEL cannot compute or afford, and nothing else).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadPlanSources } from '../../controller/gitops/load/index.js';
import { patchPlanDocument } from '../../schemas/index.js';
import type { LabCluster } from '../lab/cluster/index.js';
import { kubectl as runKubectl, type KubectlRun } from '../support/kubectl.js';
import { sharedCluster } from '../support/shared-cluster.js';
import { ADMISSION_CORPUS } from '../unit/schemas/admission-corpus.js';
import { basePlan } from '../unit/schemas/plan-fixtures.js';

type Finding = [path: string, message: string];

/** `* spec.x: Invalid value: message` lines (or the single-error form) of a refused apply. The apiserver
 *  writes a map key as `[key]` (`.[key]` in a rule's fieldPath); validate writes `.key`: the same field. */
function apiserverFindings(stderr: string): Finding[] {
  const out: Finding[] = [];
  for (const m of stderr.matchAll(/(?:^\* |is invalid: )(\S+): Invalid value: (.*)$/gm)) {
    const path = (m[1] ?? '').replace(/\.?\[([^\]]+)\]/g, (_, key: string) =>
      /^[0-9]+$/.test(key) ? `[${key}]` : `.${key}`,
    );
    out.push([path, m[2] ?? '']);
  }
  return out;
}

/** What the apiserver should say for `doc`: validate's problems, each without its validate-only detail. */
function expectedFindings(doc: unknown): Finding[] {
  const yaml = stringify(doc);
  const problems = loadPlanSources([{ file: 'p.yaml', content: yaml }]).problems;
  const issues = patchPlanDocument.safeParse(doc).error?.issues ?? [];
  return problems.map((p): Finding => {
    const issue = issues.find((i) => i.message === p.message);
    const detail =
      (issue?.code === 'custom' ? (issue.params as { detail?: string } | undefined)?.detail : undefined) ?? '';
    assert.ok(p.message.endsWith(detail));
    return [p.path, p.message.slice(0, p.message.length - detail.length)];
  });
}

const sorted = (f: Finding[]) => [...f].sort((a, b) => (a.join('\0') < b.join('\0') ? -1 : 1));

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (name.startsWith('.')) return []; // a CI workflow, not a plan
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(name) ? [path] : [];
  });
}

describe('admission: invalid plans refused by the CRD rules (lab apiserver)', function () {
  this.timeout(180_000);
  let cluster: LabCluster;

  const kubectl = (args: string[], input?: string): Promise<KubectlRun> => runKubectl(cluster, args, input);

  before(async function () {
    cluster = await sharedCluster();
    for (const args of [
      ['apply', '--server-side', '-k', 'kustomize/crd'],
      [
        'wait',
        '--for=condition=Established',
        '--timeout=60s',
        'crd/patchplans.kangalpatch.ozalp.dk',
        'crd/patchjobs.kangalpatch.ozalp.dk',
      ],
    ]) {
      const r = await kubectl(args);
      assert.equal(r.code, 0, `kubectl ${args.join(' ')}: ${r.stderr}`);
    }
  });

  after(async function () {
    if (cluster) await kubectl(['delete', 'patchplans', '-l', 'test=admission', '--ignore-not-found', '--wait=false']);
  });

  ADMISSION_CORPUS.forEach((c, i) => {
    it(`refuses with validate's messages: ${c.name}`, async function () {
      const doc = basePlan();
      c.edit(doc);
      doc.metadata = { name: `admission-bad-${i}`, labels: { test: 'admission' } };
      const expected = expectedFindings(doc);
      assert.equal(expected.length, c.breaks.length, 'validate reports one problem per broken rule');
      const r = await kubectl(['apply', '--server-side', '--field-manager=admission-test', '-f', '-'], stringify(doc));
      assert.notEqual(r.code, 0, `accepted: ${c.name}`);
      assert.deepEqual(sorted(apiserverFindings(r.stderr)), sorted(expected), r.stderr);
    });
  });

  it('accepts every example plan (server-side apply, dry run)', async function () {
    // Each file on its own: the same plan may be shown in two places (examples/ and the sample repository).
    const plans = yamlFiles('examples').flatMap((file) => {
      const loaded = loadPlanSources([{ file, content: readFileSync(file, 'utf8') }]);
      assert.deepEqual(loaded.problems, [], file);
      return loaded.plans;
    });
    assert.ok(plans.length >= 7, `${plans.length} example plans`);
    for (const plan of plans) {
      const r = await kubectl(
        ['apply', '--server-side', '--dry-run=server', '--field-manager=admission-test', '-f', '-'],
        stringify(plan.raw),
      );
      assert.equal(r.code, 0, `${plan.file} (${plan.plan.metadata.name}) refused: ${r.stderr}`);
    }
  });

  it('agrees with validate at the edge of the ghcr rule: ghcr up to 1.13, factory from 1.14', async function () {
    const targets = [
      { talosVersion: 'v1.13.9' },
      { talosVersion: 'v1.13.0', source: 'ghcr' },
      { talosVersion: 'v1.14.0', source: 'factory', installer: 'metal' },
      { talosVersion: 'v1.14.2', source: 'factory', installer: 'aws' },
      { talosVersion: 'v1.20.1', source: 'factory', installer: 'metal' },
      { kubernetesVersion: 'v1.35.1' },
    ];
    for (const [i, target] of targets.entries()) {
      const doc = basePlan();
      doc.metadata = { name: `admission-ghcr-edge-${i}`, labels: { test: 'admission' } };
      doc.spec.target = target;
      assert.deepEqual(expectedFindings(doc), [], JSON.stringify(target));
      const r = await kubectl(
        ['apply', '--server-side', '--dry-run=server', '--field-manager=admission-test', '-f', '-'],
        stringify(doc),
      );
      assert.equal(r.code, 0, `${JSON.stringify(target)} refused: ${r.stderr}`);
    }
  });

  it('accepts a plan that breaks only the status-only rule (Secret outside the operator namespace), which validate refuses', async function () {
    const doc = basePlan();
    doc.metadata = { name: 'admission-secret-ns', labels: { test: 'admission' } };
    doc.spec.talosConfig = { secretRef: { name: 'talos', namespace: 'default' } };
    assert.deepEqual(
      expectedFindings(doc).map(([path]) => path),
      ['spec.talosConfig.secretRef.namespace'],
    );
    const r = await kubectl(
      ['apply', '--server-side', '--dry-run=server', '--field-manager=admission-test', '-f', '-'],
      stringify(doc),
    );
    assert.equal(r.code, 0, r.stderr);
  });

  it('the rules hold on update too: a valid plan edited into an invalid one is refused', async function () {
    const doc = basePlan();
    doc.metadata = { name: 'admission-update', labels: { test: 'admission' } };
    doc.spec.groups = { db: { selector: { matchLabels: { role: 'db' } } } };
    doc.spec.strategy = { order: ['controlPlane', 'db', 'workers'] };
    const created = await kubectl(
      ['apply', '--server-side', '--field-manager=admission-test', '-f', '-'],
      stringify(doc),
    );
    assert.equal(created.code, 0, created.stderr);
    delete (doc.spec.groups as Record<string, unknown>).db;
    const expected = expectedFindings(doc);
    assert.deepEqual(expected, [
      [
        'spec.strategy.order',
        'unknown group "db": declare it under spec.groups or use a built-in group (controlPlane, workers)',
      ],
    ]);
    const r = await kubectl(['apply', '--server-side', '--field-manager=admission-test', '-f', '-'], stringify(doc));
    assert.notEqual(r.code, 0);
    assert.deepEqual(apiserverFindings(r.stderr), expected);
  });
});
