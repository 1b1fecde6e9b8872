// The install manifests: `kubectl kustomize kustomize/default` renders (the real kubectl, built by
// the lab), the rendered RBAC keeps least privilege, and a server-side dry-run apply of all of it
// against the lab apiserver succeeds (the Namespace is applied for real first: namespaced objects
// cannot be dry-run into a namespace that does not exist).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { stringify } from 'yaml';
import type { LabCluster } from '../lab/cluster/index.js';
import { makeLabDir } from '../lab/process.js';
import { kubectl as runKubectl, type KubectlRun } from '../support/kubectl.js';
import { sharedCluster } from '../support/shared-cluster.js';
import { OPERATOR_NAMESPACE, parseObjects, rbacViolations, repoRoot, type K8sObject } from '../support/manifests.js';

const toYaml = (objects: K8sObject[]): string => objects.map((o) => stringify(o)).join('---\n');

describe('kustomize: render and dry-run apply on the lab apiserver', function () {
  this.timeout(180_000);
  let cluster: LabCluster;
  let rendered: K8sObject[];

  const kubectl = (args: string[], input?: string): Promise<KubectlRun> => runKubectl(cluster, args, input, repoRoot);
  async function ok(args: string[], input?: string): Promise<string> {
    const r = await kubectl(args, input);
    assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed: ${r.stderr}`);
    return r.stdout;
  }

  before(async function () {
    cluster = await sharedCluster();
    rendered = parseObjects(await ok(['kustomize', 'kustomize/default']), 'kubectl kustomize kustomize/default');
  });
  after(async function () {
    // Other suites share this apiserver; leave no operator namespace behind.
    if (cluster) await kubectl(['delete', 'namespace', OPERATOR_NAMESPACE, '--ignore-not-found', '--wait=false']);
  });

  it('renders the CRDs, RBAC and the manager, each Role in its own namespace', function () {
    const names = rendered
      .map((o) => `${o.kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`)
      .sort();
    for (const expected of [
      'CustomResourceDefinition/patchplans.kangalpatch.ozalp.dk',
      'CustomResourceDefinition/patchjobs.kangalpatch.ozalp.dk',
      `Namespace/${OPERATOR_NAMESPACE}`,
      `ServiceAccount/${OPERATOR_NAMESPACE}/kangal-patch-controller`,
      'ClusterRole/kangal-patch-controller',
      'ClusterRole/kangal-patch-viewer',
      'ClusterRoleBinding/kangal-patch-controller',
      `Role/${OPERATOR_NAMESPACE}/kangal-patch-controller`,
      'Role/kube-system/kangal-patch-controller',
      'Role/default/kangal-patch-controller-events',
      `Deployment/${OPERATOR_NAMESPACE}/kangal-patch-controller`,
      `ConfigMap/${OPERATOR_NAMESPACE}/kangal-patch-config`,
      `Secret/${OPERATOR_NAMESPACE}/kangal-patch-git`,
    ])
      assert.ok(names.includes(expected), `${expected} in:\n${names.join('\n')}`);
    const image = (
      rendered.find((o) => o.kind === 'Deployment')?.['spec'] as {
        template: { spec: { containers: { image: string }[] } };
      }
    ).template.spec.containers[0]?.image;
    assert.match(image ?? '', /^ghcr\.io\/[^:]+:v\d+\.\d+\.\d+$/);
  });

  it('the rendered RBAC keeps least privilege', function () {
    assert.deepEqual(rbacViolations(rendered), []);
  });

  it('renders with the monitoring component: ServiceMonitor, PrometheusRule and the dashboard ConfigMap', async function () {
    const dir = makeLabDir('kangal-kustomize');
    try {
      writeFileSync(
        join(dir.path, 'kustomization.yaml'),
        stringify({
          apiVersion: 'kustomize.config.k8s.io/v1beta1',
          kind: 'Kustomization',
          // kustomize takes relative paths only.
          resources: [relative(dir.path, join(repoRoot, 'kustomize/default'))],
          components: [relative(dir.path, join(repoRoot, 'kustomize/monitoring'))],
        }),
      );
      const objects = parseObjects(await ok(['kustomize', dir.path]), 'kubectl kustomize (default + monitoring)');
      const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`);
      for (const k of [
        'ServiceMonitor/kangal-patch',
        'PrometheusRule/kangal-patch',
        'ConfigMap/kangal-patch-dashboard',
      ])
        assert.ok(kinds.includes(k), k);
      const dashboard = objects.find((o) => o.metadata.name === 'kangal-patch-dashboard');
      assert.equal(dashboard?.metadata.labels?.['grafana_dashboard'], '1');
      assert.doesNotThrow(() => JSON.parse((dashboard?.['data'] as Record<string, string>)['kangal-patch.json'] ?? ''));
    } finally {
      dir.remove();
    }
  });

  it('a server-side dry-run apply of everything succeeds (strict field validation)', async function () {
    const namespaces = rendered.filter((o) => o.kind === 'Namespace');
    await ok(['apply', '--server-side', '-f', '-'], toYaml(namespaces));
    const out = await ok(['apply', '--server-side', '--dry-run=server', '-f', '-'], toYaml(rendered));
    const applied = out
      .trim()
      .split('\n')
      .filter((l) => /serverside-applied \(server dry run\)$/.test(l));
    assert.equal(applied.length, rendered.length, out);
  });

  it("the controller's pod passes the namespace's Pod Security 'restricted' admission", async function () {
    const deployment = rendered.find((o) => o.kind === 'Deployment') as K8sObject;
    const template = (
      deployment['spec'] as { template: { metadata: Record<string, unknown>; spec: Record<string, unknown> } }
    ).template;
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { ...template.metadata, name: 'kangal-patch-psa-check', namespace: OPERATOR_NAMESPACE },
      spec: template.spec,
    };
    const r = await kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], stringify(pod));
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /violate PodSecurity/);
    // And it does refuse a pod that breaks it, so the check above means something.
    const rootPod = { ...pod, spec: { ...template.spec, securityContext: {} } };
    const refused = await kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], stringify(rootPod));
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /violates PodSecurity "restricted/);
  });

  it('the same dry run refuses a broken object, so the check above can fail', async function () {
    const deployment = structuredClone(rendered.find((o) => o.kind === 'Deployment')) as K8sObject;
    (deployment['spec'] as Record<string, unknown>)['replicaz'] = 2;
    const r = await kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], toYaml([deployment]));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /replicaz/);
  });
});
