// The Deployment and its settings: what an operator relies on (two replicas with leader election,
// a hardened pod, probes and ports matching the controller's flags, settings by environment).
import assert from 'node:assert/strict';
import { DEFAULT_HOOKS_NAMESPACE, DEFAULT_OPERATOR_NAMESPACE } from '../../../schemas/api.js';
import { RUN_FLAGS, envName } from '../../../controller/config.js';
import { manifestFiles, OPERATOR_NAMESPACE, SERVICE_ACCOUNT, type K8sObject } from '../../support/manifests.js';

/** Flags another change adds (GitOps loop, forge); the manifests already set them by environment. */
const PENDING_FLAGS = [
  'gitUrl',
  'gitBranch',
  'gitPath',
  'pollInterval',
  'gitTokenFile',
  'gitWriteTokenFile',
  'forge',
  'forgeApiUrl',
  'clusterName',
  'webhookSecretFile',
  'gitCacheDir',
];

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}
interface Container {
  args: string[];
  env: EnvVar[];
  envFrom: { configMapRef?: { name: string } }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  resources: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext: Record<string, unknown> & { capabilities?: { drop?: string[] } };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  serviceAccountName: string;
  securityContext: Record<string, unknown>;
  affinity: {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: {
        podAffinityTerm: { topologyKey: string; labelSelector: { matchLabels: Record<string, string> } };
      }[];
    };
  };
  containers: Container[];
  volumes: { name: string; emptyDir?: object; secret?: { secretName: string } }[];
}

describe('kustomize: manager', function () {
  const objects = manifestFiles('manager').map((m) => m.object);
  const one = (kind: string): K8sObject => {
    const found = objects.filter((o) => o.kind === kind);
    assert.equal(found.length, 1, `one ${kind}`);
    return found[0] as K8sObject;
  };
  const deployment = one('Deployment');
  const spec = deployment['spec'] as {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
  const pod = spec.template.spec;
  const container = pod.containers[0] as Container;
  const configMap = one('ConfigMap');
  const env = (name: string): EnvVar | undefined => container.env.find((e) => e.name === name);
  const port = (flag: 'metricsBindAddress' | 'healthProbeBindAddress'): number =>
    Number(RUN_FLAGS[flag].default.slice(1));

  it('installs into the controller default operator namespace', function () {
    assert.equal(OPERATOR_NAMESPACE, DEFAULT_OPERATOR_NAMESPACE);
    const namespaces = objects.filter((o) => o.kind === 'Namespace');
    assert.deepEqual(namespaces.map((n) => n.metadata.name).sort(), [
      DEFAULT_OPERATOR_NAMESPACE,
      DEFAULT_HOOKS_NAMESPACE,
    ]);
    for (const o of objects.filter((x) => x.kind !== 'Namespace'))
      assert.equal(o.metadata.namespace, DEFAULT_OPERATOR_NAMESPACE, `${o.kind} ${o.metadata.name}`);
    assert.deepEqual(env('KANGAL_PATCH_NAMESPACE')?.valueFrom, { fieldRef: { fieldPath: 'metadata.namespace' } });
  });

  it('creates the hooks namespace under Pod Security restricted, holding nothing of the controller', function () {
    const hooks = objects.find((o) => o.kind === 'Namespace' && o.metadata.name === DEFAULT_HOOKS_NAMESPACE);
    assert.equal(hooks?.metadata.labels?.['pod-security.kubernetes.io/enforce'], 'restricted');
    assert.equal(
      (configMap['data'] as Record<string, string>)['KANGAL_PATCH_HOOKS_NAMESPACE'],
      DEFAULT_HOOKS_NAMESPACE,
    );
    assert.equal(RUN_FLAGS.hooksNamespace.default, DEFAULT_HOOKS_NAMESPACE);
    assert.deepEqual(
      ['manager', 'rbac']
        .flatMap((d) => manifestFiles(d))
        .map((m) => m.object)
        .filter((o) => o.metadata.namespace === DEFAULT_HOOKS_NAMESPACE)
        .map((o) => o.kind)
        .sort(),
      ['Role', 'RoleBinding'],
      'no Secret, ConfigMap or ServiceAccount of ours in the hooks namespace',
    );
  });

  it('two replicas, leader election, spread over nodes', function () {
    assert.equal(spec.replicas, 2);
    assert.ok(container.args.includes('--leader-elect'), container.args.join(' '));
    assert.equal(container.args[0], 'run');
    assert.equal(pod.serviceAccountName, SERVICE_ACCOUNT);
    const [term] = pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution;
    assert.equal(term?.podAffinityTerm.topologyKey, 'kubernetes.io/hostname');
    assert.deepEqual(term?.podAffinityTerm.labelSelector.matchLabels, spec.selector.matchLabels);
  });

  it('NODE_NAME and POD_NAME come from the downward API', function () {
    assert.deepEqual(env('NODE_NAME')?.valueFrom, { fieldRef: { fieldPath: 'spec.nodeName' } });
    assert.deepEqual(env('POD_NAME')?.valueFrom, { fieldRef: { fieldPath: 'metadata.name' } });
    assert.deepEqual(env('POD_SERVICE_ACCOUNT')?.valueFrom, { fieldRef: { fieldPath: 'spec.serviceAccountName' } });
  });

  it('non-root, read-only root filesystem with emptyDirs for writes, no capabilities, RuntimeDefault seccomp', function () {
    assert.equal(pod.securityContext['runAsNonRoot'], true);
    assert.equal(pod.securityContext['runAsUser'], 65532);
    assert.deepEqual(pod.securityContext['seccompProfile'], { type: 'RuntimeDefault' });
    assert.equal(container.securityContext['readOnlyRootFilesystem'], true);
    assert.equal(container.securityContext['allowPrivilegeEscalation'], false);
    assert.deepEqual(container.securityContext.capabilities?.drop, ['ALL']);
    const writable = container.volumeMounts.filter((m) => !m.readOnly);
    assert.deepEqual(writable.map((m) => m.mountPath).sort(), ['/tmp', '/var/cache/kangal-patch']);
    for (const m of writable)
      assert.ok(pod.volumes.find((v) => v.name === m.name)?.emptyDir, `${m.mountPath} is an emptyDir`);
  });

  it('probes on the health port, metrics on the metrics port, both as the flags default them', function () {
    const byName = Object.fromEntries(container.ports.map((p) => [p.name, p.containerPort]));
    assert.deepEqual(byName, { metrics: port('metricsBindAddress'), health: port('healthProbeBindAddress') });
    assert.deepEqual(container.livenessProbe.httpGet, { path: '/healthz', port: 'health' });
    assert.deepEqual(container.readinessProbe.httpGet, { path: '/readyz', port: 'health' });
    assert.ok(
      container.resources.requests?.['cpu'] &&
        container.resources.requests['memory'] &&
        container.resources.limits?.['memory'],
    );
  });

  it('every KANGAL_PATCH_ variable names a flag (or one being added), tokens only as files from the Secret', function () {
    const known = new Set([...Object.keys(RUN_FLAGS), ...PENDING_FLAGS].map(envName));
    const data = configMap['data'] as Record<string, string>;
    const names = [...container.env.map((e) => e.name), ...Object.keys(data)].filter((n) =>
      n.startsWith('KANGAL_PATCH_'),
    );
    assert.ok(names.length > 10);
    for (const n of names) assert.ok(known.has(n), `${n} is envName() of a flag`);
    assert.deepEqual(container.envFrom, [{ configMapRef: { name: configMap.metadata.name } }]);

    const secret = one('Secret');
    const mount = container.volumeMounts.find(
      (m) => pod.volumes.find((v) => v.name === m.name)?.secret?.secretName === secret.metadata.name,
    );
    assert.equal(mount?.readOnly, true);
    const keys = Object.keys(secret['stringData'] as Record<string, string>).sort();
    const files = Object.entries(data).filter(([k]) => k.endsWith('_FILE'));
    assert.deepEqual(files.map(([, path]) => path.replace(`${mount?.mountPath ?? '?'}/`, '')).sort(), keys);
    for (const [k, v] of Object.entries(data))
      assert.ok(!/TOKEN|SECRET/.test(k) || k.endsWith('_FILE'), `${k}=${v}: a credential in a ConfigMap`);
  });
});
