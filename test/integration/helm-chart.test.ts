// The Helm chart (charts/kangal-patch) with a real Helm (built from the Go module proxy into the lab
// cache on first use) against a lab control plane of its own: Helm owns cluster-scoped objects (the
// CRDs, ClusterRoles) that the other suites create with kubectl on the shared one. `helm lint
// --strict`; `helm template` with the defaults and with every value set renders objects that a
// server-side dry-run apply accepts; the values schema refuses a wrong value by name; the RBAC equals
// kustomize's rule for rule and keeps least privilege; and the install, upgrade and uninstall commands
// of docs/install.md (the README's quick install shows the same command), run as written, create the
// objects, roll the Deployment's template and leave the CRDs and the plans in place.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { RUN_FLAGS, envName } from '../../controller/config.js';
import { valuesJsonSchema } from '../../schemas/chart.js';
import { chartValues } from '../../schemas/chart-values.js';
import { startCluster, type LabCluster } from '../lab/cluster/index.js';
import { IMAGE_NODE_OPTIONS, heapNodeOptions } from '../lab/image-env.js';
import { helmBinary, helmRunner, type HelmRun } from '../lab/helm.js';
import { makeLabDir, runToEnd, type LabDir, type ProcessRun } from '../lab/process.js';
import { kubectl as runKubectl, type KubectlRun } from '../support/kubectl.js';
import {
  OPERATOR_NAMESPACE,
  parseObjects,
  rbacViolations,
  repoRoot,
  type K8sObject,
  type PolicyRule,
} from '../support/manifests.js';

const CHART = join(repoRoot, 'charts/kangal-patch');
const RELEASE = 'kangal-patch';
const toYaml = (objects: K8sObject[]): string => objects.map((o) => stringify(o)).join('---\n');
const id = (o: K8sObject): string => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
/** The chart's default hooks namespace (hooks.namespace). */
const HOOKS_NAMESPACE = 'kangal-patch-hooks';

/** Kinds of the Prometheus Operator: the lab has no such CRDs, so they are checked here, not dry-run. */
const PROMETHEUS_KINDS = new Set(['ServiceMonitor', 'PrometheusRule']);

/** Every value set to something other than its default (a test below keeps it complete). */
const ALL_OPTIONS = {
  nameOverride: 'kpatch',
  fullnameOverride: 'kp',
  image: {
    repository: 'registry.example/kangal-patch',
    tag: 'v9.9.9',
    digest: `sha256:${'0123456789abcdef'.repeat(4)}`,
    pullPolicy: 'Always',
    pullSecrets: ['regcred'],
  },
  replicas: 3,
  leaderElection: { enabled: true, id: 'kp-leader', leaseDuration: '20s', renewDeadline: '15s', retryPeriod: '3s' },
  resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } },
  heapPercentOfMemoryLimit: 40,
  nodeSelector: { 'kubernetes.io/os': 'linux' },
  tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }] }],
      },
    },
  },
  priorityClassName: 'kangal-patch-critical',
  podSecurityContext: {
    runAsNonRoot: true,
    runAsUser: 1000,
    runAsGroup: 1000,
    fsGroup: 1000,
    seccompProfile: { type: 'RuntimeDefault' },
  },
  securityContext: {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    privileged: false,
    capabilities: { drop: ['ALL'] },
  },
  terminationGracePeriodSeconds: 45,
  logLevel: 'debug',
  maxConcurrentReconciles: 8,
  preflightRetryPeriod: '2m',
  registryMirrors: [
    { host: 'ghcr.io', url: 'https://mirror.example/ghcr' },
    { host: 'factory.talos.dev', url: 'https://mirror.example/factory' },
  ],
  clusterName: 'production-eu-1',
  git: {
    url: 'https://git.example/ops/plans.git',
    branch: 'release',
    path: 'clusters/eu',
    pollInterval: '30s',
    author: 'Patch Bot <bot@example.com>',
    cacheSizeLimit: '2Gi',
  },
  forge: { type: 'gitea', apiUrl: 'https://git.example/api/v1' },
  releases: { apiUrl: 'https://ghe.example/api/v3' },
  gitCredentials: {
    existingSecret: '',
    existingSecretKeys: ['token'],
    token: 'read-token',
    writeToken: 'write-token',
    webhookSecret: 'hook-secret-of-16-bytes-or-more',
    releasesToken: 'releases-token',
  },
  webhook: { enabled: true, port: 9000 },
  notify: {
    existingSecret: '',
    config: { receivers: [{ name: 'ops', type: 'webhook', url: 'https://hooks.example/kp' }] },
  },
  alertmanager: {
    url: 'https://alertmanager.example:9093',
    interval: '30s',
    tokenSecret: { name: 'alertmanager-token', key: 'bearer' },
  },
  reports: { minInterval: '1m', signingKeySecret: { name: 'report-signing', key: 'ed25519.pem' } },
  promotion: { keysConfigMap: 'upstream-report-keys' },
  healthProbe: { port: 9081 },
  metrics: {
    port: 9080,
    service: { enabled: true },
    serviceMonitor: { enabled: true, interval: '1m', labels: { release: 'prometheus' } },
    prometheusRule: { enabled: true, labels: { release: 'prometheus' } },
    dashboard: { enabled: true, labels: { grafana_dashboard: '1', team: 'ops' } },
  },
  talos: { secretNames: ['talos-eu-1', 'talos-eu-2'] },
  hooks: {
    namespace: 'ops-hooks',
    createNamespace: false,
    serviceAccounts: ['ceph-noout'],
    priorityClasses: ['maintenance'],
    imageRegistries: ['ghcr.io/acme', 'registry.k8s.io'],
  },
  healthChecks: {
    read: [
      { apiGroup: 'longhorn.io', resources: ['volumes'], namespace: 'default' },
      { apiGroup: 'ceph.rook.io', resources: ['cephclusters'] },
    ],
  },
  viewerClusterRole: { enabled: true },
  installCRDs: true,
  commonLabels: { team: 'platform' },
  commonAnnotations: { 'example.com/owner': 'platform' },
  podLabels: { tier: 'ops' },
  podAnnotations: { 'example.com/scrape': 'true' },
  extraEnv: [{ name: 'HTTPS_PROXY', value: 'http://proxy.example:3128' }],
  extraVolumes: [{ name: 'ca', configMap: { name: 'corporate-ca' } }],
  extraVolumeMounts: [{ name: 'ca', mountPath: '/etc/ssl/corporate', readOnly: true }],
};
/** Values that keep their default above on purpose. */
const DEFAULT_ON_PURPOSE = new Set([
  'leaderElection.enabled', // replicas: 3 needs it
  'gitCredentials.existingSecret', // the created Secret is the one with every key; existingSecret is rendered in its own test
  'notify.existingSecret', // notify.config is set instead; existingSecret is rendered in its own test
  'metrics.service.enabled', // the ServiceMonitor needs it
  'viewerClusterRole.enabled',
  'installCRDs', // on by default; rendered off in their own test
]);

/** The page that documents installing, upgrading and uninstalling with Helm. */
const INSTALL_PAGE = 'docs/install.md';

/** The ```sh lines of a page, without trailing comments. */
function shLines(page: string): string[] {
  const text = readFileSync(join(repoRoot, page), 'utf8');
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)]
    .flatMap((b) => (b[1] ?? '').split('\n'))
    .map((l) => l.replace(/\s+#\s.*$/, '').trim());
}

/** The install page's ```sh line that starts with `prefix` (the test runs it as written); the README's
 * quick install, where it shows the same step, shows the same command. */
function pageCommand(prefix: string): string {
  const found = shLines(INSTALL_PAGE).filter((l) => l.startsWith(prefix));
  assert.equal(found.length, 1, `one ${INSTALL_PAGE} command starting with "${prefix}"`);
  for (const inReadme of shLines('README.md').filter((l) => l.startsWith(prefix)))
    assert.equal(inReadme, found[0], `README.md shows ${INSTALL_PAGE}'s command`);
  return found[0] as string;
}

/** Leaf paths of a values object as the schema walks them (nested chart objects walked, the rest leaves). */
function leafPaths(schema: Record<string, unknown>, value: unknown, prefix = ''): [string, unknown][] {
  const props = (schema['properties'] as Record<string, Record<string, unknown>> | undefined) ?? {};
  return Object.entries(props).flatMap(([key, sub]): [string, unknown][] => {
    const v = (value as Record<string, unknown> | undefined)?.[key];
    const path = prefix ? `${prefix}.${key}` : key;
    if (sub['properties']) return leafPaths(sub, v, path);
    return v === undefined ? [] : [[path, v]];
  });
}

/** The Prometheus Operator objects (no such CRDs in the lab, so not dry-run): the ServiceMonitor selects
 *  the metrics Service, the alerts and the dashboard are kustomize/monitoring's. */
function checkMonitoring(objects: K8sObject[], prefix: string): void {
  const monitor = objects.find((o) => o.kind === 'ServiceMonitor');
  const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === `${prefix}-metrics`);
  assert.deepEqual(
    (monitor?.['spec'] as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels,
    (service?.['spec'] as { selector: Record<string, string> }).selector,
  );
  const rule = objects.find((o) => o.kind === 'PrometheusRule');
  const kustomizeRule = parse(readFileSync(join(repoRoot, 'kustomize/monitoring/prometheus-rule.yaml'), 'utf8')) as {
    spec: unknown;
  };
  assert.deepEqual(
    rule?.['spec'],
    JSON.parse(
      JSON.stringify(kustomizeRule.spec).replaceAll('job=\\"kangal-patch-metrics\\"', `job=\\"${prefix}-metrics\\"`),
    ),
  );
  const dashboard = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === `${prefix}-dashboard`);
  assert.deepEqual(
    JSON.parse((dashboard?.['data'] as Record<string, string>)['kangal-patch.json'] ?? ''),
    JSON.parse(readFileSync(join(repoRoot, 'kustomize/monitoring/dashboard.json'), 'utf8')),
  );
}

/** The all-options render: every `kangal-patch run` flag set (kubeconfig: in-cluster on purpose), and the pod as the values say. */
function assertEveryFlagSet(objects: K8sObject[], config: Record<string, string>): void {
  const deployment = objects.find((o) => o.kind === 'Deployment') as K8sObject;
  const pod = (
    deployment['spec'] as {
      template: {
        metadata: { labels: Record<string, string>; annotations: Record<string, string> };
        spec: Record<string, unknown> & { containers: { image: string; env: { name: string }[] }[] };
      };
    }
  ).template;
  const env = new Set([...Object.keys(config), ...(pod.spec.containers[0]?.env ?? []).map((e) => e.name)]);
  for (const flag of Object.keys(RUN_FLAGS).filter((f) => f !== 'kubeconfig')) {
    assert.ok(
      env.has(flag === 'nodeName' ? 'NODE_NAME' : envName(flag)),
      `--${flag} (${envName(flag)}) is not set by the chart`,
    );
  }
  assert.equal(
    config['KANGAL_PATCH_REGISTRY_MIRROR'],
    'ghcr.io=https://mirror.example/ghcr,factory.talos.dev=https://mirror.example/factory',
  );
  assert.equal(config['KANGAL_PATCH_FORGE'], 'gitea');
  assert.equal(pod.spec.containers[0]?.image, `registry.example/kangal-patch@sha256:${'0123456789abcdef'.repeat(4)}`);
  assert.equal(
    (pod.spec.containers[0]?.env as { name: string; value?: string }[] | undefined)?.find(
      (e) => e.name === 'NODE_OPTIONS',
    )?.value,
    heapNodeOptions(40),
  );
  assert.equal(pod.metadata.labels['tier'], 'ops');
  assert.equal(pod.spec['priorityClassName'], 'kangal-patch-critical');
}

/** The all-options render: commonLabels and commonAnnotations on every object. */
function assertCommonMetadata(objects: K8sObject[]): void {
  for (const o of objects) {
    // The dashboard's own `team` label wins over commonLabels' (one key, no duplicate).
    assert.equal(
      o.metadata.labels?.['team'],
      o.metadata.name === 'kp-dashboard' ? 'ops' : 'platform',
      `${id(o)} has commonLabels`,
    );
    assert.equal(
      (o.metadata as { annotations?: Record<string, string> }).annotations?.['example.com/owner'],
      'platform',
      `${id(o)} has commonAnnotations`,
    );
  }
}

describe('Helm chart: lint, render, dry-run, install, upgrade and uninstall on the lab', function () {
  this.timeout(120_000);
  let cluster: LabCluster;
  let dir: LabDir;
  let helm: (args: string[], input?: string, cwd?: string) => Promise<HelmRun>;

  const kubectl = (args: string[], input?: string): Promise<KubectlRun> => runKubectl(cluster, args, input, repoRoot);
  async function ok(run: Promise<ProcessRun>, what: string): Promise<string> {
    const r = await run;
    assert.equal(r.code, 0, `${what} failed: ${r.stderr}`);
    return r.stdout;
  }
  const template = async (values: object = {}, release = RELEASE): Promise<K8sObject[]> => {
    const file = join(dir.path, `values-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(file, stringify(values));
    return parseObjects(
      await ok(helm(['template', release, CHART, '--namespace', OPERATOR_NAMESPACE, '-f', file]), 'helm template'),
      'helm template',
    );
  };
  /** Server-side dry run with strict field validation; every object must be accepted. */
  async function dryRun(objects: K8sObject[]): Promise<void> {
    const out = await ok(
      kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], toYaml(objects)),
      'kubectl apply --dry-run=server',
    );
    const applied = out
      .trim()
      .split('\n')
      .filter((l) => /serverside-applied \(server dry run\)$/.test(l));
    assert.equal(applied.length, objects.length, out);
  }
  /** A documented command as written, in a directory with the token files and the chart, helm and kubectl on PATH. */
  async function sh(command: string): Promise<HelmRun> {
    const helmPath = await helmBinary();
    const env = {
      ...process.env,
      KUBECONFIG: cluster.kubeconfigPath,
      HOME: dir.path,
      HELM_CACHE_HOME: join(dir.path, 'cache'),
      HELM_CONFIG_HOME: join(dir.path, 'config'),
      HELM_DATA_HOME: join(dir.path, 'data'),
      PATH: `${dirname(helmPath)}:${dirname(cluster.kubectl)}:${process.env.PATH ?? ''}`,
    };
    return runToEnd('bash', ['-c', command], { cwd: join(dir.path, 'reader'), env });
  }

  before(async function () {
    this.timeout(45 * 60_000); // a cold Helm build: a few minutes on 2 cores
    dir = makeLabDir('kangal-helm');
    const [c] = await Promise.all([startCluster(), helmBinary()]);
    cluster = c;
    helm = await helmRunner(dir.path, cluster.kubeconfigPath);
    // Where a reader runs the install page's commands: a checkout (the chart) with the token files.
    const reader = join(dir.path, 'reader');
    mkdirSync(join(reader, 'charts'), { recursive: true });
    symlinkSync(CHART, join(reader, 'charts/kangal-patch'));
    writeFileSync(join(reader, 'read-token'), 'read-token-value\n');
    writeFileSync(join(reader, 'write-token'), 'write-token-value\n');
    // The operator namespace under Pod Security "restricted", as the install page recommends.
    await ok(kubectl(['create', 'namespace', OPERATOR_NAMESPACE]), 'create namespace');
    await ok(
      kubectl(['label', 'namespace', OPERATOR_NAMESPACE, 'pod-security.kubernetes.io/enforce=restricted']),
      'label namespace',
    );
    // The hooks namespaces the renders below put Roles in (a dry run needs them to exist): ALL_OPTIONS's
    // own (hooks.createNamespace: false), and the default one as the release will own it, so that the
    // install page's helm install takes it over.
    await ok(kubectl(['create', 'namespace', 'ops-hooks']), 'create namespace ops-hooks');
    await ok(kubectl(['create', 'namespace', HOOKS_NAMESPACE]), `create namespace ${HOOKS_NAMESPACE}`);
    await ok(
      kubectl([
        'annotate',
        'namespace',
        HOOKS_NAMESPACE,
        `meta.helm.sh/release-name=${RELEASE}`,
        `meta.helm.sh/release-namespace=${OPERATOR_NAMESPACE}`,
      ]),
      'annotate hooks namespace',
    );
    await ok(
      kubectl(['label', 'namespace', HOOKS_NAMESPACE, 'app.kubernetes.io/managed-by=Helm']),
      'label hooks namespace',
    );
  });
  after(async function () {
    await cluster?.stop();
    dir?.remove();
  });

  it('helm lint --strict is clean with the defaults and with every value set', async function () {
    const file = join(dir.path, 'all.yaml');
    writeFileSync(file, stringify(ALL_OPTIONS));
    for (const args of [[], ['-f', file]]) {
      const out = await ok(helm(['lint', '--strict', CHART, ...args]), `helm lint --strict ${args.join(' ')}`);
      assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
      assert.doesNotMatch(out, /\[(WARNING|ERROR)\]/, out);
    }
  });

  it('ALL_OPTIONS sets every value of the schema to something other than its default', function () {
    const schema = valuesJsonSchema();
    const defaults = new Map(leafPaths(schema, chartValues.parse({})));
    const set = new Map(leafPaths(schema, chartValues.parse(ALL_OPTIONS)));
    for (const [path, def] of defaults) {
      if (DEFAULT_ON_PURPOSE.has(path)) continue;
      assert.notDeepEqual(set.get(path), def, `${path} keeps its default in ALL_OPTIONS`);
    }
  });

  it('the defaults render what kustomize/default installs, under the same names, and a dry-run apply accepts it', async function () {
    const objects = await template();
    const ids = objects.map(id).sort();
    for (const expected of [
      'CustomResourceDefinition//patchplans.kangalpatch.ozalp.dk',
      'CustomResourceDefinition//patchjobs.kangalpatch.ozalp.dk',
      `ServiceAccount/${OPERATOR_NAMESPACE}/kangal-patch-controller`,
      'ClusterRole//kangal-patch-controller',
      'ClusterRole//kangal-patch-viewer',
      'ClusterRoleBinding//kangal-patch-controller',
      `Role/${OPERATOR_NAMESPACE}/kangal-patch-controller`,
      `RoleBinding/${OPERATOR_NAMESPACE}/kangal-patch-controller`,
      `Namespace//${HOOKS_NAMESPACE}`,
      `Role/${HOOKS_NAMESPACE}/kangal-patch-controller`,
      `RoleBinding/${HOOKS_NAMESPACE}/kangal-patch-controller`,
      'Role/kube-system/kangal-patch-controller',
      'Role/default/kangal-patch-controller-events',
      `Deployment/${OPERATOR_NAMESPACE}/kangal-patch-controller`,
      `ConfigMap/${OPERATOR_NAMESPACE}/kangal-patch-config`,
      `Service/${OPERATOR_NAMESPACE}/kangal-patch-metrics`,
    ])
      assert.ok(ids.includes(expected), `${expected} in:\n${ids.join('\n')}`);
    assert.ok(!objects.some((o) => o.kind === 'Secret'), 'no token given: no Secret');
    const container = (
      objects.find((o) => o.kind === 'Deployment')?.['spec'] as {
        template: { spec: { containers: { image: string; env: { name: string; value?: string }[] }[] } };
      }
    ).template.spec.containers[0];
    const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string };
    assert.equal(
      container?.image,
      `ghcr.io/ozalp/kangal-patch:${chart.appVersion}`,
      'image.tag defaults to the appVersion',
    );
    assert.equal(
      container?.env.find((e) => e.name === 'NODE_OPTIONS')?.value,
      IMAGE_NODE_OPTIONS,
      'the heap settings the image ships (test/lab/image-env.ts)',
    );
    assert.deepEqual(rbacViolations(objects), []);
    const hooksNamespace = objects.find((o) => o.kind === 'Namespace' && o.metadata.name === HOOKS_NAMESPACE);
    assert.equal(hooksNamespace?.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
    await dryRun(objects);
  });

  it('the default pod passes Pod Security "restricted" (dry-run of the pod template in the labelled namespace)', async function () {
    const deployment = (await template()).find((o) => o.kind === 'Deployment') as K8sObject;
    const t = (deployment['spec'] as { template: { metadata: Record<string, unknown>; spec: Record<string, unknown> } })
      .template;
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { ...t.metadata, name: 'kangal-patch-psa-check', namespace: OPERATOR_NAMESPACE },
      spec: t.spec,
    };
    const r = await kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], stringify(pod));
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /violate PodSecurity/);
  });

  it('every value set renders, sets every controller flag, and a dry-run apply accepts it', async function () {
    const objects = await template(ALL_OPTIONS, 'kp');
    assert.deepEqual(rbacViolations(objects), []);
    // Every `kangal-patch run` flag reaches the controller (kubeconfig: in-cluster on purpose).
    const config = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'kp-config')?.['data'] as Record<
      string,
      string
    >;
    assertEveryFlagSet(objects, config);
    // hooks: their namespace (not created: createNamespace false), the controller's Job rights there only, the allowlists as flags.
    assert.ok(!objects.some((o) => o.kind === 'Namespace'));
    assert.deepEqual(
      objects
        .filter((o) => o.metadata.namespace === 'ops-hooks')
        .map(id)
        .sort(),
      ['Role/ops-hooks/kp-controller', 'RoleBinding/ops-hooks/kp-controller'],
    );
    assert.deepEqual(
      [
        config['KANGAL_PATCH_HOOKS_NAMESPACE'],
        config['KANGAL_PATCH_HOOK_SERVICE_ACCOUNTS'],
        config['KANGAL_PATCH_HOOK_PRIORITY_CLASSES'],
        config['KANGAL_PATCH_HOOK_IMAGE_REGISTRIES'],
      ],
      ['ops-hooks', 'ceph-noout', 'maintenance', 'ghcr.io/acme,registry.k8s.io'],
    );
    // healthChecks.read: a Role where a namespace is given, a ClusterRole otherwise; read verbs only.
    const rules = (kind: string, name: string): unknown =>
      objects.find((o) => o.kind === kind && o.metadata.name === name)?.['rules'];
    assert.deepEqual(rules('Role', 'kp-controller-health-check-0'), [
      { apiGroups: ['longhorn.io'], resources: ['volumes'], verbs: ['get', 'list', 'watch'] },
    ]);
    assert.equal(
      objects.find((o) => o.kind === 'Role' && o.metadata.name === 'kp-controller-health-check-0')?.metadata.namespace,
      'default',
    );
    assert.deepEqual(rules('ClusterRole', 'kp-controller-health-checks'), [
      { apiGroups: ['ceph.rook.io'], resources: ['cephclusters'], verbs: ['get', 'list', 'watch'] },
    ]);
    assert.ok(
      objects.some((o) => o.kind === 'ClusterRoleBinding' && o.metadata.name === 'kp-controller-health-checks'),
    );
    // Granted to the health-check identity the controller impersonates, never to the controller.
    for (const b of objects.filter(
      (o) =>
        (o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding') &&
        o.metadata.name.startsWith('kp-controller-health-check'),
    )) {
      assert.deepEqual(
        b['subjects'],
        [{ kind: 'ServiceAccount', name: 'kp-health', namespace: 'kangal-patch' }],
        `${id(b)}`,
      );
    }
    assert.equal(config['KANGAL_PATCH_HEALTH_CHECK_SERVICE_ACCOUNT'], 'kp-health');
    // talos.secretNames: the only Secrets the controller may read.
    const secretRules = (rules('Role', 'kp-controller') as { resources?: string[]; resourceNames?: string[] }[]).filter(
      (r) => r.resources?.includes('secrets'),
    );
    assert.deepEqual(
      secretRules.map((r) => r.resourceNames),
      [['talos-eu-1', 'talos-eu-2']],
    );
    assertCommonMetadata(objects);
    checkMonitoring(objects, 'kp');
    await dryRun(objects.filter((o) => !PROMETHEUS_KINDS.has(o.kind)));
  });

  it('installCRDs=false, no viewer role, an existing Secret and notification Secret render and dry-run too', async function () {
    const objects = await template({
      installCRDs: false,
      viewerClusterRole: { enabled: false },
      gitCredentials: { existingSecret: 'my-git', existingSecretKeys: ['token', 'webhook-secret'] },
      webhook: { enabled: true },
      notify: { existingSecret: 'my-notify' },
    });
    assert.ok(
      !objects.some(
        (o) => o.kind === 'CustomResourceDefinition' || o.metadata.name.endsWith('-viewer') || o.kind === 'Secret',
      ),
    );
    const deployment = objects.find((o) => o.kind === 'Deployment') as K8sObject;
    const volumes = (
      deployment['spec'] as { template: { spec: { volumes: { name: string; secret?: { secretName: string } }[] } } }
    ).template.spec.volumes;
    assert.deepEqual(
      volumes.filter((v) => v.secret).map((v) => v.secret?.secretName),
      ['my-git', 'my-notify'],
    );
    const config = objects.find((o) => o.kind === 'ConfigMap')?.['data'] as Record<string, string>;
    assert.equal(config['KANGAL_PATCH_WEBHOOK_SECRET_FILE'], '/etc/kangal-patch/git/webhook-secret');
    assert.equal(config['KANGAL_PATCH_GIT_WRITE_TOKEN_FILE'], undefined, 'write-token is not in existingSecretKeys');
    await dryRun(objects);
  });

  it('the values schema refuses a wrong value with a message naming it', async function () {
    for (const [args, expected] of [
      [['--set', 'replicas=two'], /at '\/replicas': got string, want integer/],
      [['--set', 'imag.tag=v1'], /additional properties 'imag' not allowed/],
      [['--set', 'logLevel=loud'], /at '\/logLevel'/],
      [['--set', 'git.url=ftp://example.com/plans.git'], /at '\/git\/url'/],
      [['--set', 'image.pullPolicy=Sometimes'], /at '\/image\/pullPolicy'/],
      [['--set', 'gitCredentials.webhookSecret=too-short'], /at '\/gitCredentials\/webhookSecret'/],
    ] as [string[], RegExp][]) {
      const r = await helm(['template', RELEASE, CHART, ...args]);
      assert.notEqual(r.code, 0, args.join(' '));
      assert.match(r.stderr, /values don't meet the specifications of the schema/);
      assert.match(r.stderr, expected);
    }
    // A cross-field rule the schema cannot say, with the template's own message.
    const r = await helm(['template', RELEASE, CHART, '--set', 'git.url=https://git.example/plans.git']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /clusterName is required with git\.url/);
    // Health checks never read credentials: the chart refuses to grant Secrets to their identity.
    const secrets = await helm([
      'template',
      RELEASE,
      CHART,
      '--set-json',
      'healthChecks.read=[{"apiGroup":"","resources":["secrets"]}]',
    ]);
    assert.notEqual(secrets.code, 0);
    assert.match(secrets.stderr, /healthChecks\.read must not grant secrets/);
    const same = await helm([
      'template',
      RELEASE,
      CHART,
      '--namespace',
      OPERATOR_NAMESPACE,
      '--set',
      `hooks.namespace=${OPERATOR_NAMESPACE}`,
    ]);
    assert.notEqual(same.code, 0);
    assert.match(same.stderr, /hooks\.namespace must not be the release namespace/);
  });

  it('the RBAC equals kustomize/rbac rule for rule (rendered by the real kubectl), bindings included', async function () {
    const fromKustomize = parseObjects(
      await ok(kubectl(['kustomize', 'kustomize/rbac']), 'kubectl kustomize kustomize/rbac'),
      'kustomize/rbac',
    );
    const fromChart = (await template()).filter(
      (o) => /^(Cluster)?Role(Binding)?$/.test(o.kind) || o.kind === 'ServiceAccount',
    );
    const pick = (o: K8sObject): unknown => ({
      id: id(o),
      rules: o['rules'] as PolicyRule[] | undefined,
      roleRef: o['roleRef'],
      subjects: o['subjects'],
    });
    const byId = (list: K8sObject[]) => new Map(list.map((o) => [id(o), pick(o)]));
    assert.deepEqual(byId(fromChart), byId(fromKustomize));
    // The viewer's aggregation label too.
    const viewer = fromChart.find((o) => o.metadata.name === 'kangal-patch-viewer');
    assert.equal(viewer?.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-view'], 'true');
  });

  it('the CRD templates are the kustomize/crd CRDs, kept on uninstall', async function () {
    const crds = (await template()).filter((o) => o.kind === 'CustomResourceDefinition');
    assert.equal(crds.length, 2);
    for (const crd of crds) {
      const generated = parse(
        readFileSync(
          join(repoRoot, `kustomize/crd/kangalpatch.ozalp.dk_${crd.metadata.name.split('.')[0] ?? ''}.yaml`),
          'utf8',
        ),
      ) as K8sObject;
      assert.deepEqual(crd['spec'], generated['spec']);
      assert.equal(
        (crd.metadata as { annotations?: Record<string, string> }).annotations?.['helm.sh/resource-policy'],
        'keep',
      );
    }
  });

  describe("the install page's commands, as written", function () {
    let firstChecksum: string | undefined;
    const podTemplate = async (): Promise<{ annotations: Record<string, string>; image: string }> => {
      const d = JSON.parse(
        await ok(
          kubectl(['-n', OPERATOR_NAMESPACE, 'get', 'deployment', 'kangal-patch-controller', '-o', 'json']),
          'get deployment',
        ),
      ) as {
        spec: {
          template: { metadata: { annotations: Record<string, string> }; spec: { containers: { image: string }[] } };
        };
      };
      return {
        annotations: d.spec.template.metadata.annotations,
        image: d.spec.template.spec.containers[0]?.image ?? '',
      };
    };

    it('helm install creates the CRDs, RBAC, Secret, ConfigMap, Service and Deployment', async function () {
      const out = await ok(sh(pageCommand('helm install ')), 'helm install');
      assert.match(out, /STATUS: deployed/);
      await ok(
        kubectl([
          'wait',
          '--for=condition=Established',
          '--timeout=60s',
          'crd/patchplans.kangalpatch.ozalp.dk',
          'crd/patchjobs.kangalpatch.ozalp.dk',
        ]),
        'CRDs Established',
      );
      await ok(
        kubectl([
          'get',
          'clusterrole/kangal-patch-controller',
          'clusterrole/kangal-patch-viewer',
          'clusterrolebinding/kangal-patch-controller',
        ]),
        'cluster RBAC',
      );
      await ok(
        kubectl(['-n', 'kube-system', 'get', 'role/kangal-patch-controller', 'rolebinding/kangal-patch-controller']),
        'kube-system Role',
      );
      await ok(
        kubectl([
          '-n',
          'default',
          'get',
          'role/kangal-patch-controller-events',
          'rolebinding/kangal-patch-controller-events',
        ]),
        'events Role',
      );
      await ok(
        kubectl(['-n', HOOKS_NAMESPACE, 'get', 'role/kangal-patch-controller', 'rolebinding/kangal-patch-controller']),
        'hooks namespace Role',
      );
      const hooksNs = JSON.parse(
        await ok(kubectl(['get', 'namespace', HOOKS_NAMESPACE, '-o', 'json']), 'get hooks namespace'),
      ) as { metadata: { labels: Record<string, string> } };
      assert.equal(hooksNs.metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted');
      const secret = JSON.parse(
        await ok(kubectl(['-n', OPERATOR_NAMESPACE, 'get', 'secret', 'kangal-patch-git', '-o', 'json']), 'get secret'),
      ) as { data: Record<string, string> };
      assert.deepEqual(
        Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()])),
        { token: 'read-token-value\n', 'write-token': 'write-token-value\n' },
      );
      const config = JSON.parse(
        await ok(
          kubectl(['-n', OPERATOR_NAMESPACE, 'get', 'configmap', 'kangal-patch-config', '-o', 'json']),
          'get configmap',
        ),
      ) as { data: Record<string, string> };
      assert.equal(config.data['KANGAL_PATCH_GIT_URL'], 'https://github.com/example/talos-plans.git');
      assert.equal(config.data['KANGAL_PATCH_CLUSTER_NAME'], 'production-eu-1');
      await ok(
        kubectl([
          '-n',
          OPERATOR_NAMESPACE,
          'get',
          'service/kangal-patch-metrics',
          'serviceaccount/kangal-patch-controller',
        ]),
        'Service',
      );
      const t = await podTemplate();
      assert.equal(t.image, 'ghcr.io/example/kangal-patch:v0.1.0');
      firstChecksum = t.annotations['checksum/config'];
      assert.match(firstChecksum ?? '', /^[0-9a-f]{64}$/);
      // The page's next command (no kubelet runs pods in the lab: the Deployment is what there is to see).
      assert.equal(
        pageCommand('kubectl -n kangal-patch get deployment,pods'),
        'kubectl -n kangal-patch get deployment,pods',
      );
      assert.match(
        await ok(sh('kubectl -n kangal-patch get deployment,pods'), 'kubectl get'),
        /kangal-patch-controller/,
      );
      // A plan, to see it survive the uninstall.
      await ok(kubectl(['apply', '--server-side', '-f', 'examples/simple-upgrade.yaml']), 'apply a PatchPlan');
    });

    it("helm upgrade with a changed value rolls the Deployment's pod template", async function () {
      const before = await podTemplate();
      await ok(sh(pageCommand('helm upgrade ')), 'helm upgrade (docs/install.md)');
      const afterImage = await podTemplate();
      assert.equal(
        afterImage.image,
        'ghcr.io/example/kangal-patch:v0.1.1',
        '--reuse-values kept image.repository; the tag changed',
      );
      assert.equal(
        afterImage.annotations['checksum/config'],
        before.annotations['checksum/config'],
        'no setting changed',
      );
      // A setting: the ConfigMap changes and its checksum rolls the pods.
      await ok(
        helm([
          'upgrade',
          RELEASE,
          CHART,
          '--namespace',
          OPERATOR_NAMESPACE,
          '--reuse-values',
          '--set',
          'logLevel=debug',
        ]),
        'helm upgrade --set logLevel=debug',
      );
      const config = JSON.parse(
        await ok(
          kubectl(['-n', OPERATOR_NAMESPACE, 'get', 'configmap', 'kangal-patch-config', '-o', 'json']),
          'get configmap',
        ),
      ) as { data: Record<string, string> };
      assert.equal(config.data['KANGAL_PATCH_LOG_LEVEL'], 'debug');
      const afterConfig = await podTemplate();
      assert.notEqual(afterConfig.annotations['checksum/config'], firstChecksum);
      assert.equal(
        config.data['KANGAL_PATCH_GIT_URL'],
        'https://github.com/example/talos-plans.git',
        '--reuse-values kept git.url',
      );
    });

    it('helm uninstall removes the release but leaves the CRDs and the PatchPlan; deleting the CRDs removes them', async function () {
      const out = await ok(sh(pageCommand('helm uninstall ')), 'helm uninstall');
      assert.match(out, /release "kangal-patch" uninstalled/);
      assert.match(out + (await helm(['status', RELEASE, '--namespace', OPERATOR_NAMESPACE])).stderr, /not found/);
      for (const gone of [
        ['-n', OPERATOR_NAMESPACE, 'get', 'deployment/kangal-patch-controller'],
        ['get', 'clusterrole/kangal-patch-controller'],
        ['-n', 'kube-system', 'get', 'role/kangal-patch-controller'],
      ]) {
        const r = await kubectl(gone);
        assert.notEqual(r.code, 0, `${gone.join(' ')} still there`);
        assert.match(r.stderr, /NotFound|not found/);
      }
      await ok(
        kubectl(['get', 'crd/patchplans.kangalpatch.ozalp.dk', 'crd/patchjobs.kangalpatch.ozalp.dk']),
        'the CRDs stay',
      );
      assert.match(
        await ok(kubectl(['get', 'patchplan', 'simple-upgrade', '-o', 'name']), 'the plan stays'),
        /patchplan\.kangalpatch\.ozalp\.dk\/simple-upgrade/,
      );
      // Deliberately, as the install page says.
      await ok(sh(pageCommand('kubectl delete crd ')), 'kubectl delete crd');
      const r = await kubectl(['get', 'patchplan']);
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /the server doesn't have a resource type "patchplan"|could not find the requested resource/,
      );
    });

    it('CRDs installed with kustomize: helm install refuses them until they are handed to the release, as the install page says', async function () {
      // The uninstall above deletes the hooks namespace; a new install creates it again once it is gone.
      await ok(
        kubectl(['wait', '--for=delete', `namespace/${HOOKS_NAMESPACE}`, '--timeout=90s']),
        'hooks namespace deleted',
      );
      await ok(kubectl(['apply', '--server-side', '-k', 'kustomize/crd']), 'kubectl apply -k kustomize/crd');
      const install = ['install', RELEASE, CHART, '--namespace', OPERATOR_NAMESPACE];
      const refused = await helm(install);
      assert.notEqual(refused.code, 0);
      assert.match(
        refused.stderr,
        /CustomResourceDefinition "patch(plans|jobs)\.kangalpatch\.ozalp\.dk" .*exists and cannot be imported into the current release: invalid ownership metadata/,
      );
      const page = readFileSync(join(repoRoot, INSTALL_PAGE), 'utf8');
      for (const verb of ['annotate', 'label']) {
        const command = new RegExp(`\`(kubectl ${verb} crd [^\`]+)\``).exec(page)?.[1];
        assert.ok(command, `${INSTALL_PAGE}'s kubectl ${verb} crd command`);
        await ok(sh(command), command);
      }
      await ok(helm(install), 'helm install over the adopted CRDs');
      await ok(helm(['uninstall', RELEASE, '--namespace', OPERATOR_NAMESPACE]), 'helm uninstall');
      await ok(
        kubectl(['get', 'crd/patchplans.kangalpatch.ozalp.dk', 'crd/patchjobs.kangalpatch.ozalp.dk']),
        'the adopted CRDs stay too',
      );
    });
  });
});
