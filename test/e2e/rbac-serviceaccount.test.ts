// The RBAC in kustomize/ is enough to run a rollout: `kangal-patch run` authenticates with a token
// of the kangal-patch-controller ServiceAccount (TokenRequest API), not as the lab admin, and rolls
// a plan across a small fleet with leader election, a drain whose PDB blocks (respectPDBs: false
// deletes the pod), Events and status writes. Any 403 in its log fails the test.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CoreV1Api, EventsV1Api } from '@kubernetes/client-node';
import { tokenKubeconfigYaml } from '../lab/cluster/http.js';
import { waitFor } from '../lab/wait.js';
import {
  HEALTH_SERVICE_ACCOUNT,
  OPERATOR_NAMESPACE,
  parseObjects,
  repoRoot,
  SERVICE_ACCOUNT,
} from '../support/manifests.js';
import { startJobLab, HOOKS_NAMESPACE, OPERATOR_NAMESPACE as LAB_NAMESPACE, type JobLab } from './support/job-lab.js';
import { examplePlan, factoryImage, labPlan } from './support/plans.js';
import { installVolumeCrd } from '../support/longhorn.js';

const TARGET = 'v1.13.2';
/** The target of the plan whose Talos Secret is in the wrong namespace (any order of the cases). */
const OTHER_TARGET = 'v1.13.3';
const RBAC_KINDS = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];

describe('RBAC end to end: the controller runs a rollout with its ServiceAccount token', function () {
  this.timeout(300_000);
  let lab: JobLab;
  let kubeconfig: string;
  const kubectl = (args: string[], input?: string, config?: string): string =>
    execFileSync(lab.cluster.kubectl, ['--kubeconfig', config ?? lab.cluster.kubeconfigPath, ...args], {
      encoding: 'utf8',
      input,
      cwd: repoRoot,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  const canI = (args: string[]): string => {
    try {
      return kubectl(['auth', 'can-i', ...args], undefined, kubeconfig).trim();
    } catch (err) {
      // can-i exits 1 when the answer is no.
      return String((err as { stdout?: string }).stdout ?? '').trim();
    }
  };

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 3, controlPlanes: 1, talosVersion: 'v1.12.4' },
      images: [factoryImage('nocloud', TARGET), factoryImage('nocloud', OTHER_TARGET)],
      workloads: [
        { namespace: 'shop', name: 'web', kind: 'replicaset', replicas: 2, pdb: { maxUnavailable: 1 } },
        // Never disruptable: with respectPDBs false the drain deletes its pod (pods delete).
        { namespace: 'shop', name: 'ledger', kind: 'replicaset', replicas: 1, pdb: { minAvailable: 1 } },
      ],
    });
    assert.equal(LAB_NAMESPACE, OPERATOR_NAMESPACE, 'the e2e lab uses the namespace the manifests install into');
    const rendered = parseObjects(kubectl(['kustomize', 'kustomize/default']), 'kubectl kustomize kustomize/default');
    const rbac = rendered.filter((o) => RBAC_KINDS.includes(o.kind));
    kubectl(['apply', '--server-side', '-f', '-'], rbac.map((o) => stringify(o)).join('---\n'));

    const core = lab.kc.makeApiClient(CoreV1Api);
    const token = await core.createNamespacedServiceAccountToken({
      name: SERVICE_ACCOUNT,
      namespace: OPERATOR_NAMESPACE,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    kubeconfig = join(lab.cluster.dir, 'controller-sa.kubeconfig');
    writeFileSync(
      kubeconfig,
      tokenKubeconfigYaml(lab.cluster.server, lab.cluster.caPem, token.status?.token ?? '', SERVICE_ACCOUNT),
      { mode: 0o600 },
    );
  });
  after(async function () {
    await lab?.stop();
  });

  it('the kubeconfig is the ServiceAccount, with no more rights than the manifests give', function () {
    assert.match(
      kubectl(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'], undefined, kubeconfig),
      new RegExp(`^system:serviceaccount:${OPERATOR_NAMESPACE}:${SERVICE_ACCOUNT}$`),
    );
    // The Talos Secret by name (get, and list/watch for its field-selected watch: kube/secrets.ts), here only.
    assert.equal(canI(['get', 'secrets/talos-credentials', '-n', OPERATOR_NAMESPACE]), 'yes');
    assert.equal(canI(['watch', 'secrets/talos-credentials', '-n', OPERATOR_NAMESPACE]), 'yes');
    assert.equal(
      canI(['get', 'secrets', '-n', OPERATOR_NAMESPACE]),
      'no',
      'not every Secret of the operator namespace',
    );
    assert.equal(canI(['watch', 'secrets', '-n', OPERATOR_NAMESPACE]), 'no');
    assert.equal(canI(['get', 'secrets', '-n', 'shop']), 'no');
    assert.equal(canI(['list', 'secrets', '-n', 'shop']), 'no');
    assert.equal(canI(['watch', 'secrets', '--all-namespaces']), 'no');
    assert.equal(canI(['create', 'namespaces']), 'no');
    assert.equal(canI(['update', 'nodes']), 'no');
    // Hook Jobs: in the hooks namespace only, never beside the controller's Secrets; no Secret read there.
    assert.equal(canI(['create', 'jobs.batch', '-n', HOOKS_NAMESPACE]), 'yes');
    assert.equal(canI(['watch', 'jobs.batch', '-n', HOOKS_NAMESPACE]), 'yes');
    assert.equal(canI(['create', 'jobs.batch', '-n', OPERATOR_NAMESPACE]), 'no');
    assert.equal(canI(['list', 'jobs.batch', '-n', OPERATOR_NAMESPACE]), 'no');
    assert.equal(canI(['get', 'secrets', '-n', HOOKS_NAMESPACE]), 'no');
  });

  it('rolls out a plan to Completed with no 403 in the controller log', async function () {
    const controller = lab.startController({ kubeconfig, args: ['--leader-elect'] });
    const example = examplePlan('simple-upgrade.yaml');
    const target = { ...(example.spec.target as Record<string, unknown>), talosVersion: TARGET };
    await lab.applyPlan(labPlan(example, lab.talos.endpoint, { target, respectPDBs: false, drainTimeout: '2m' }));
    const status = await lab.waitForPlan(
      'simple-upgrade',
      'Completed or Failed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      240_000,
    );
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    assert.equal(status.completedNodes, 3);
    await waitFor(
      () =>
        (lab.observer.liveLeases().length === 0 &&
          ['cp-1', 'worker-1', 'worker-2'].every((n) => lab.observer.node(n)?.unschedulable === false)) ||
        undefined,
      {
        timeoutMs: 30_000,
        description: 'every slot Lease released and every node uncordoned',
      },
    );
    for (const n of ['cp-1', 'worker-1', 'worker-2'])
      assert.equal(lab.observer.node(n)?.osImage, `Talos (${TARGET})`, n);

    // Events were written (the default-namespace Role), as the controller's own identity. The
    // plan's Completed Event follows its status write, so wait for it before stopping the controller.
    const eventsApi = lab.kc.makeApiClient(EventsV1Api);
    const events = await waitFor(
      async () => {
        const list = await eventsApi.listNamespacedEvent({ namespace: 'default' });
        return list.items.some(
          (e) =>
            e.reportingController === 'kangal-patch' && e.regarding?.kind === 'PatchPlan' && e.reason === 'Completed',
        )
          ? list
          : undefined;
      },
      { timeoutMs: 30_000, description: "the PatchPlan's Completed Event" },
    );
    assert.ok(
      events.items.some((e) => e.reportingController === 'kangal-patch' && e.regarding?.kind === 'PatchJob'),
      'Events about PatchJobs',
    );

    // SIGTERM releases the leader Lease (update) and exits 0.
    assert.equal(
      await controller.stop(),
      0,
      `the controller did not exit 0 within 30 s of SIGTERM (the chart's grace period); its last lines:\n${controller.process.tail(30)}`,
    );
    const log = readFileSync(controller.process.logPath, 'utf8');
    const denied = log.split('\n').filter((l) => /\b403\b|forbidden|Unauthorized/i.test(l));
    assert.deepEqual(denied, [], 'no request of the controller was refused');
    const unwritten = controller.logs().filter((l) => l['msg'] === 'cannot write Event');
    assert.deepEqual(unwritten, [], 'every Event written');
    assert.ok(
      controller.logs().some((l) => String(l['msg']).startsWith('leading')),
      'it led',
    );
  });

  it('a plan naming a talosconfig Secret in another namespace: that Secret is never read (no request, so no 403), the plan stops with the reason, no node cordoned', async function () {
    // A Secret with the very credentials, in a namespace the plan may name but the controller must not use.
    const core = lab.kc.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace: 'shop',
      body: { metadata: { name: 'talos-credentials' }, stringData: lab.talos.secretData },
    });
    assert.equal(canI(['get', 'secrets', '-n', 'shop']), 'no');
    assert.equal(canI(['get', 'secrets', '--all-namespaces']), 'no');
    const controller = lab.startController({ kubeconfig });
    const example = examplePlan('simple-upgrade.yaml');
    const target = { ...(example.spec.target as Record<string, unknown>), talosVersion: OTHER_TARGET };
    const talosConfig = {
      endpoints: [lab.talos.endpoint],
      secretRef: { name: 'talos-credentials', namespace: 'shop' },
    };
    // kubectl, not Git: the admission rules accept it (validate and the GitOps loader refuse it earlier).
    const firstEvent = lab.observer.events.length;
    await lab.applyPlan(
      labPlan({ ...example, metadata: { name: 'elsewhere' } }, lab.talos.endpoint, { target, talosConfig }),
    );
    // The plan's preflight connects to every node first, through the same connector the jobs use: it refuses there.
    const refused = await lab.waitForPlan(
      'elsewhere',
      'preflight refused the credentials',
      (st) => st.reason === 'PreflightTalosCredentials',
      90_000,
    );
    assert.match(
      String(refused.message),
      /cp-1: talosConfig\.secretRef points at namespace shop; the Talos credentials Secret must live in the operator namespace kangal-patch/,
    );
    for (const node of ['cp-1', 'worker-1', 'worker-2'])
      assert.equal(await lab.job(`elsewhere-${node}`), undefined, `no PatchJob for ${node}`);
    assert.equal(
      await controller.stop(),
      0,
      `the controller did not exit 0 within 30 s of SIGTERM (the chart's grace period); its last lines:\n${controller.process.tail(30)}`,
    );
    const log = readFileSync(controller.process.logPath, 'utf8').split('\n');
    assert.deepEqual(
      log.filter((l) => /\b403\b|forbidden|Unauthorized/i.test(l)),
      [],
      'no request for the Secret in shop was even made',
    );
    assert.deepEqual(
      lab.observer.events.slice(firstEvent).filter((e) => e.kind === 'cordoned'),
      [],
      'no node was cordoned for a job that cannot reach Talos',
    );
  });

  it('a plan naming a Secret of the operator namespace the install did not grant: refused by the apiserver, the plan stops naming the grant, no node cordoned, the watch not retried', async function () {
    // The very credentials, under a name the Role does not list (as the Git token Secret is not).
    const core = lab.kc.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace: OPERATOR_NAMESPACE,
      body: { metadata: { name: 'not-granted' }, stringData: lab.talos.secretData },
    });
    assert.equal(canI(['get', 'secrets/not-granted', '-n', OPERATOR_NAMESPACE]), 'no');
    assert.equal(canI(['list', 'secrets', '-n', OPERATOR_NAMESPACE]), 'no', "no list of the namespace's Secrets");
    assert.equal(canI(['get', 'secrets/talos-credentials', '-n', OPERATOR_NAMESPACE]), 'yes');
    const controller = lab.startController({ kubeconfig, args: ['--preflight-retry-period', '2s'] });
    const example = examplePlan('simple-upgrade.yaml');
    const target = { ...(example.spec.target as Record<string, unknown>), talosVersion: OTHER_TARGET };
    const firstEvent = lab.observer.events.length;
    await lab.applyPlan(
      labPlan({ ...example, metadata: { name: 'ungranted' } }, lab.talos.endpoint, {
        target,
        talosConfig: { endpoints: [lab.talos.endpoint], secretRef: { name: 'not-granted' } },
      }),
    );
    const refused = await lab.waitForPlan(
      'ungranted',
      'preflight refused the credentials',
      (st) => st.reason === 'PreflightTalosCredentials',
      90_000,
    );
    assert.match(
      String(refused.message),
      /may not read Secret kangal-patch\/not-granted \(talosConfig\.secretRef\).*add not-granted to talos\.secretNames/,
    );
    for (const node of ['cp-1', 'worker-1', 'worker-2'])
      assert.equal(await lab.job(`ungranted-${node}`), undefined, `no PatchJob for ${node}`);
    assert.deepEqual(
      lab.observer.events.slice(firstEvent).filter((e) => e.kind === 'cordoned'),
      [],
      'no node cordoned',
    );
    assert.equal(
      await controller.stop(),
      0,
      `the controller did not exit 0 within 30 s of SIGTERM; its last lines:\n${controller.process.tail(30)}`,
    );
    assert.ok(
      controller.logs().some((l) => String(l['msg']).startsWith('stopped watching Secret kangal-patch/not-granted')),
      'the refused watch was stopped',
    );
    kubectl(['delete', 'patchplan', 'ungranted', '--wait']);
  });

  it("a health check reads as the health-check ServiceAccount: over a kind it cannot read, preflight names the grant to it; granted, the plan runs with no 403; the controller's own rights (pods everywhere) never serve a check", async function () {
    installVolumeCrd(lab.cluster.kubectl, lab.cluster.kubeconfigPath);
    kubectl(['create', 'namespace', 'longhorn-system']);
    kubectl(
      ['apply', '-f', '-'],
      stringify({
        apiVersion: 'longhorn.io/v1beta2',
        kind: 'Volume',
        metadata: { name: 'pvc-1', namespace: 'longhorn-system' },
        status: { robustness: 'healthy' },
      }),
    );
    const controller = lab.startController({ kubeconfig, args: ['--preflight-retry-period', '2s'] });
    const example = examplePlan('simple-upgrade.yaml');
    const target = { ...(example.spec.target as Record<string, unknown>), talosVersion: TARGET };
    // The controller lists pods in every namespace to drain; a check over pods is refused all the same.
    const podCheck = { name: 'pods', apiVersion: 'v1', kind: 'Pod', expr: 'true' };
    await lab.applyPlan(
      labPlan({ ...example, metadata: { name: 'pods-gated' } }, lab.talos.endpoint, {
        target,
        healthChecks: [podCheck],
      }),
    );
    const podsRefused = await lab.waitForPlan(
      'pods-gated',
      'preflight failed',
      (s) => s.reason === 'PreflightHealthCheckAccess',
      60_000,
    );
    assert.match(
      String(podsRefused.message),
      new RegExp(
        `grant get/list/watch on pods to ServiceAccount ${OPERATOR_NAMESPACE}/${HEALTH_SERVICE_ACCOUNT} \\(check pods; denied: get, list, watch\\)`,
      ),
    );
    kubectl(['delete', 'patchplan', 'pods-gated', '--wait']);
    const check = {
      name: 'volumes',
      apiVersion: 'longhorn.io/v1beta2',
      kind: 'Volume',
      namespace: 'longhorn-system',
      expr: 'has(status.robustness) && status.robustness == "healthy"',
    };
    await lab.applyPlan(
      labPlan({ ...example, metadata: { name: 'gated' } }, lab.talos.endpoint, { target, healthChecks: [check] }),
    );
    const refused = await lab.waitForPlan(
      'gated',
      'preflight failed',
      (s) => s.reason === 'PreflightHealthCheckAccess',
      60_000,
    );
    assert.match(
      String(refused.message),
      new RegExp(
        `grant get/list/watch on volumes\\.longhorn\\.io in namespace longhorn-system to ServiceAccount ${OPERATOR_NAMESPACE}/${HEALTH_SERVICE_ACCOUNT} \\(check volumes; denied: get, list, watch\\)`,
      ),
    );

    // The recipe of docs/health-gates.md, namespaced: a Role and a RoleBinding in the checked namespace.
    kubectl([
      '-n',
      'longhorn-system',
      'create',
      'role',
      'kangal-patch-health-checks',
      '--verb=get,list,watch',
      '--resource=volumes.longhorn.io',
    ]);
    kubectl([
      '-n',
      'longhorn-system',
      'create',
      'rolebinding',
      'kangal-patch-health-checks',
      '--role=kangal-patch-health-checks',
      `--serviceaccount=${OPERATOR_NAMESPACE}:${HEALTH_SERVICE_ACCOUNT}`,
    ]);
    const done = await lab.waitForPlan('gated', 'Completed', (s) => s.phase === 'Completed', 120_000);
    assert.equal(done.phase, 'Completed');
    assert.equal(
      await controller.stop(),
      0,
      `the controller did not exit 0 within 30 s of SIGTERM (the chart's grace period); its last lines:\n${controller.process.tail(30)}`,
    );
    const denied = readFileSync(controller.process.logPath, 'utf8')
      .split('\n')
      .filter((l) => /\b403\b|forbidden|Unauthorized/i.test(l));
    assert.deepEqual(denied, [], 'the watch started only once preflight passed: no request refused');
  });
});
