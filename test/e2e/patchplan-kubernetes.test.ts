// Kubernetes upgrades through the real `kangal-patch run` process: a 3 control-plane + 3 worker
// fleet moves one minor, a Talos 1.14 fleet whose configs carry component documents, a combined
// Talos + Kubernetes plan, and each fault. The oracle is the lab:
// the observer's Node and Pod watches (versions, cordons, boots) and the Talos simulator's record
// of every ApplyConfiguration with the image paths it changed.
import assert from 'node:assert/strict';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { AppsV1Api } from '@kubernetes/client-node';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { labPlan, type PlanDoc } from './support/plans.js';
import { MULTI_DOC_KINDS } from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';

const FROM = 'v1.35.2';
const TO = 'v1.36.3';
const ORDER = [
  'cluster.apiServer.image',
  'cluster.controllerManager.image',
  'cluster.scheduler.image',
  'machine.kubelet.image',
];

const planDoc = (name: string, target: Record<string, unknown>, spec: Record<string, unknown> = {}): PlanDoc => ({
  apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
  kind: 'PatchPlan',
  metadata: { name },
  spec: {
    target,
    strategy: { order: ['controlPlane', 'workers'] },
    failurePolicy: { type: 'Halt', maxFailures: 1 },
    ...spec,
  },
});

/** Paths an ApplyConfiguration changed, per node, in call order (from the simulator's record). */
function appliedPaths(lab: JobLab, node: string): string[] {
  return lab.talos
    .node(node)
    .calls.filter((c) => c.method === 'MachineService.ApplyConfiguration' && c.result === 'ok')
    .flatMap((c) => (c.imageChanges ?? []).map((ch) => ch.path));
}

describe('PatchPlan end to end: Kubernetes upgrades', function () {
  this.timeout(300_000);

  describe('one minor on 3 control-plane + 3 worker nodes', function () {
    let lab: JobLab;
    before(async function () {
      lab = await startJobLab({
        fleet: { nodes: 6, controlPlanes: 3, talosVersion: 'v1.13.2', kubernetesVersion: FROM },
        kubeProxy: true,
        workloads: [{ namespace: 'shop', name: 'web', kind: 'replicaset', replicas: 3, pdb: { maxUnavailable: 1 } }],
      });
    });
    after(async function () {
      await lab?.stop();
    });

    it('moves the control plane first, then kube-proxy, then the workers: no kubelet ever newer than a kube-apiserver, no cordon, drain or reboot', async function () {
      const controller = lab.startController();
      await lab.applyPlan(labPlan(planDoc('k8s-minor', { kubernetesVersion: TO }), lab.talos.endpoint));
      const status = await lab.waitForPlan(
        'k8s-minor',
        'Completed',
        (s) => s.phase === 'Completed' || s.phase === 'Failed',
        240_000,
      );
      assert.equal(status.phase, 'Completed', JSON.stringify(status));
      assert.equal(status.completedNodes, 6);
      assert.equal(status.kubeProxyUpgraded, true);

      const nodes = ['cp-1', 'cp-2', 'cp-3', 'worker-1', 'worker-2', 'worker-3'];
      for (const n of nodes) assert.equal(lab.observer.node(n)?.kubeletVersion, TO, `${n} kubelet`);
      // Skew, from the observer's own Node and Pod watches.
      assert.deepEqual(lab.observer.skewViolations, []);
      // Per control-plane node: apiserver → controller-manager → scheduler → kubelet (the simulator's record) ...
      for (const cp of ['cp-1', 'cp-2', 'cp-3']) {
        assert.deepEqual(
          appliedPaths(lab, cp).filter((p) => ORDER.includes(p)),
          ORDER,
          `${cp} component order`,
        );
        // ... and each static pod ran the target before the next component's config changed (observer).
        const seen = lab.observer
          .of(cp, ['componentVersion'])
          .filter((e) => e.detail.endsWith(TO))
          .map((e) => e.detail.split(' ')[0]);
        assert.deepEqual(
          seen,
          ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet'],
          `${cp} versions seen in order`,
        );
      }
      for (const w of ['worker-1', 'worker-2', 'worker-3'])
        assert.deepEqual(appliedPaths(lab, w), ['machine.kubelet.image'], `${w} moves only its kubelet`);
      // Every target image pre-pulled before the node's first ApplyConfiguration (static pods into cri, the kubelet into system).
      for (const n of nodes) {
        const calls = lab.talos.node(n).calls;
        const firstApply = calls.find((c) => c.method === 'MachineService.ApplyConfiguration')?.seq ?? -1;
        const pulls = calls
          .filter((c) => c.method === 'ImageService.Pull' && c.result === 'ok' && c.seq < firstApply)
          .map((c) => `${c.image?.split('/').pop() ?? ''} ${c.containerdNamespace ?? ''}`);
        const want = n.startsWith('cp-')
          ? [
              `kube-apiserver:${TO} NS_CRI`,
              `kube-controller-manager:${TO} NS_CRI`,
              `kube-scheduler:${TO} NS_CRI`,
              `kubelet:${TO} NS_SYSTEM`,
            ]
          : [`kubelet:${TO} NS_SYSTEM`];
        assert.deepEqual(pulls, want, `${n} pre-pulled its images first`);
      }
      // kube-proxy: set in every control-plane config after all three control planes, before any worker's kubelet.
      const all = nodes.flatMap((n) =>
        lab.talos.node(n).calls.filter((c) => c.method === 'MachineService.ApplyConfiguration' && c.result === 'ok'),
      );
      const seqOf = (pred: (path: string, node: string) => boolean): number[] =>
        all.filter((c) => (c.imageChanges ?? []).some((ch) => pred(ch.path, c.node))).map((c) => c.seq);
      const proxy = seqOf((p) => p === 'cluster.proxy.image');
      assert.equal(proxy.length, 3, 'kube-proxy set in the three control-plane configs');
      assert.ok(
        Math.min(...proxy) > Math.max(...seqOf((p, n) => n.startsWith('cp-') && p === 'machine.kubelet.image')),
        'after every control-plane node',
      );
      assert.ok(
        Math.max(...proxy) < Math.min(...seqOf((p, n) => n.startsWith('worker-') && p === 'machine.kubelet.image')),
        'before any worker kubelet',
      );
      // No cordon, drain or reboot; no Talos upgrade.
      for (const n of nodes) {
        assert.deepEqual(lab.observer.of(n, ['cordoned', 'booted']), [], `${n} not cordoned or rebooted`);
        assert.equal(lab.talos.node(n).reboots, 0);
        assert.equal(lab.talos.node(n).upgradesStarted, 0);
      }
      assert.deepEqual(
        lab.observer.events.filter((e) => e.kind === 'podDeleting' && e.detail.startsWith('shop/')),
        [],
        'no workload pod evicted',
      );
      assert.ok(lab.observer.maxConcurrentLeasesInGroup('k8s-minor', 'controlPlane') <= 1);
      assert.ok(lab.observer.maxConcurrentLeasesInGroup('k8s-minor', 'workers') <= 1);
      const job = await lab.job('k8s-minor-cp-1');
      assert.deepEqual(job?.status.kubernetesUpgraded, ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler']);
      await controller.stop();
    });

    it('a controller killed in the middle resumes the same plan without applying any component twice', async function () {
      const next = 'v1.36.4';
      const first = lab.startController();
      await lab.applyPlan(labPlan(planDoc('k8s-patch', { kubernetesVersion: next }), lab.talos.endpoint));
      await waitFor(
        () => lab.talos.node('cp-2').calls.some((c) => c.method === 'MachineService.ApplyConfiguration') || undefined,
        { timeoutMs: 120_000, description: 'cp-2 started moving' },
      );
      await first.kill();
      const second = lab.startController();
      const status = await lab.waitForPlan(
        'k8s-patch',
        'Completed',
        (s) => s.phase === 'Completed' || s.phase === 'Failed',
        240_000,
      );
      assert.equal(status.phase, 'Completed', JSON.stringify(status));
      for (const n of ['cp-1', 'cp-2', 'cp-3', 'worker-1', 'worker-2', 'worker-3']) {
        const moves = lab.talos
          .node(n)
          .calls.filter((c) => c.method === 'MachineService.ApplyConfiguration' && c.result === 'ok')
          .flatMap((c) => (c.imageChanges ?? []).filter((ch) => ch.to?.endsWith(next) === true).map((ch) => ch.path));
        assert.equal(new Set(moves).size, moves.length, `${n}: each component applied once (${moves.join(', ')})`);
        assert.equal(lab.observer.node(n)?.kubeletVersion, next);
      }
      assert.deepEqual(lab.observer.skewViolations, []);
      await second.stop();
    });

    it('an image the node cannot pull fails the job with ImagePullFailed and leaves its machine config untouched', async function () {
      const next = 'v1.36.5';
      const kubelet = `ghcr.io/siderolabs/kubelet:${next}`;
      lab.talos.node('worker-1').faults.missingImages = [kubelet];
      const controller = lab.startController();
      const appliesBefore = lab.talos
        .node('worker-1')
        .calls.filter((c) => c.method === 'MachineService.ApplyConfiguration').length;
      await lab.createJob({
        node: 'worker-1',
        plan: 'pull-fault',
        group: 'workers',
        slot: 0,
        target: { kubernetesVersion: next },
      });
      const s = await lab.waitForPhase('pull-fault-worker-1', ['Failed', 'Completed'], 60_000);
      assert.equal(s.phase, 'Failed', JSON.stringify(s));
      assert.equal(s.reason, 'ImagePullFailed', String(s.message));
      assert.match(
        String(s.message),
        /pre-pulling ghcr\.io\/siderolabs\/kubelet:v1\.36\.5 on node worker-1 failed: .*not found; nothing was changed on the node/,
      );
      const calls = lab.talos.node('worker-1').calls;
      assert.ok(
        calls.some((c) => c.method === 'ImageService.Pull' && c.image === kubelet && c.result !== 'ok'),
        'the simulator refused the pull',
      );
      assert.equal(
        calls.filter((c) => c.method === 'MachineService.ApplyConfiguration').length,
        appliesBefore,
        'no ApplyConfiguration was sent',
      );
      assert.equal(lab.observer.node('worker-1')?.kubeletVersion, 'v1.36.4', 'the kubelet still runs what it ran');
      lab.talos.node('worker-1').faults.missingImages = undefined;
      await controller.stop();
    });
  });

  describe('Talos 1.14 configs with component documents (KubeletConfig, KubeAPIServerConfig, ...)', function () {
    const DOCUMENT_ORDER = [
      'KubeAPIServerConfig.image',
      'KubeControllerManagerConfig.image',
      'KubeSchedulerConfig.image',
      'KubeletConfig.image',
    ];
    const V1ALPHA1_PATHS = [...ORDER, 'cluster.proxy.image'];
    let lab: JobLab;
    /** A node's ApplyConfiguration calls moved document image keys from FROM to TO, never a v1alpha1 field, which stays stale. */
    const assertDocumentsMoved = (n: string): void => {
      const calls = lab.talos.node(n).calls.filter((c) => c.method === 'MachineService.ApplyConfiguration');
      const wrong = calls.flatMap((c) => (c.imageChanges ?? []).filter((ch) => V1ALPHA1_PATHS.includes(ch.path)));
      assert.deepEqual(wrong, [], `${n}: no ApplyConfiguration touched a v1alpha1 image field`);
      for (const ch of calls.flatMap((c) => c.imageChanges ?? []))
        assert.ok(
          ch.from?.endsWith(`:${FROM}`) === true && ch.to?.endsWith(`:${TO}`) === true,
          `${n}: ${JSON.stringify(ch)}`,
        );
      // The node's config now: the v1alpha1 document still names the old images (stale, ignored by Talos).
      const v1alpha1 = lab.talos.node(n).config.split('\n---\n')[0] ?? '';
      assert.match(v1alpha1, new RegExp(`kubelet:${FROM}`));
      assert.doesNotMatch(v1alpha1, new RegExp(TO.replace(/\./g, '\\.')));
    };
    before(async function () {
      lab = await startJobLab({
        fleet: { nodes: 2, controlPlanes: 1, talosVersion: 'v1.14.0', kubernetesVersion: FROM },
        kubeProxy: true,
        multiDocs: MULTI_DOC_KINDS,
      });
    });
    after(async function () {
      await lab?.stop();
    });

    it("a Kubernetes-only plan moves the documents' image keys, never the stale v1alpha1 fields, and the nodes run the target", async function () {
      const controller = lab.startController();
      await lab.applyPlan(labPlan(planDoc('k8s-multidoc', { kubernetesVersion: TO }), lab.talos.endpoint));
      const status = await lab.waitForPlan(
        'k8s-multidoc',
        'Completed',
        (s) => s.phase === 'Completed' || s.phase === 'Failed',
        240_000,
      );
      assert.equal(status.phase, 'Completed', JSON.stringify(status));
      assert.equal(status.completedNodes, 2);
      assert.equal(status.kubeProxyUpgraded, true);

      // The simulator's record: each ApplyConfiguration moved exactly one document's image key.
      assert.deepEqual(
        appliedPaths(lab, 'cp-1'),
        [...DOCUMENT_ORDER, 'KubeProxyConfig.image'],
        'cp-1: documents in component order, then kube-proxy',
      );
      assert.deepEqual(
        appliedPaths(lab, 'worker-1'),
        ['KubeletConfig.image'],
        'worker-1 moves only its kubelet document',
      );
      for (const n of ['cp-1', 'worker-1']) assertDocumentsMoved(n);

      // The observer's independent view: the Node's kubeletVersion and the mirror pods' images.
      for (const n of ['cp-1', 'worker-1']) assert.equal(lab.observer.node(n)?.kubeletVersion, TO, `${n} kubelet`);
      const seen = lab.observer
        .of('cp-1', ['componentVersion'])
        .filter((e) => e.detail.endsWith(TO))
        .map((e) => e.detail.split(' ')[0]);
      assert.deepEqual(
        seen,
        ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet'],
        'cp-1 components seen at the target in order',
      );
      assert.deepEqual(lab.observer.skewViolations, []);
      const ds = await lab.kc
        .makeApiClient(AppsV1Api)
        .readNamespacedDaemonSet({ namespace: 'kube-system', name: 'kube-proxy' });
      assert.equal(
        ds.spec?.template.spec?.containers[0]?.image,
        `registry.k8s.io/kube-proxy:${TO}`,
        'the kube-proxy DaemonSet rendered from the KubeProxyConfig document',
      );
      for (const n of ['cp-1', 'worker-1']) assert.equal(lab.talos.node(n).reboots, 0);
      await controller.stop();
    });
  });

  describe('combined plans, faults and preflight', function () {
    let lab: JobLab;
    before(async function () {
      lab = await startJobLab({
        fleet: { nodes: 5, controlPlanes: 1, talosVersion: 'v1.12.4', kubernetesVersion: FROM },
        images: ['siderolabs/installer:v1.13.2'],
      });
    });
    after(async function () {
      await lab?.stop();
    });

    it('a combined plan runs the Talos phases, then the Kubernetes phases, per node', async function () {
      const controller = lab.startController();
      const nodes = {
        nodeSelector: {
          matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['cp-1', 'worker-1'] }],
        },
      };
      await lab.applyPlan(
        labPlan(planDoc('combined', { talosVersion: 'v1.13.2', kubernetesVersion: TO }, nodes), lab.talos.endpoint),
      );
      const status = await lab.waitForPlan(
        'combined',
        'Completed',
        (s) => s.phase === 'Completed' || s.phase === 'Failed',
        240_000,
      );
      assert.equal(status.phase, 'Completed', JSON.stringify(status));
      for (const n of ['cp-1', 'worker-1']) {
        const phases = lab.observer.events
          .filter((e) => e.kind === 'jobPhase' && e.node === n)
          .map((e) => e.detail.split(' ')[1]);
        const order = [
          'Pending',
          'Draining',
          'Upgrading',
          'Rebooting',
          'UpgradingKubernetes',
          'ValidatingKubernetes',
          'Completed',
        ];
        assert.deepEqual(
          phases.filter((p) => order.includes(p ?? '')),
          order,
          `${n} phases in order`,
        );
        assert.equal(lab.observer.node(n)?.osImage, 'Talos (v1.13.2)');
        assert.equal(lab.observer.node(n)?.kubeletVersion, TO);
        assert.equal(lab.observer.node(n)?.unschedulable, false);
        const booted = lab.observer.of(n, ['booted']).at(-1)?.at ?? Infinity;
        const firstApply =
          lab.talos.node(n).calls.find((c) => c.method === 'MachineService.ApplyConfiguration')?.at ?? 0;
        assert.ok(firstApply > booted, `${n}: Kubernetes moved after the reboot`);
      }
      assert.deepEqual(lab.observer.skewViolations, []);
      await controller.stop();
    });

    it('each fault fails its job with a specific reason before the timeout plus a margin', async function () {
      const controller = lab.startController();
      const timeout = '15s';
      const cases: [string, () => void, string][] = [
        [
          'worker-2',
          () =>
            (lab.talos.node('worker-2').faults.applyConfigError = {
              code: GrpcStatus.INVALID_ARGUMENT,
              message: 'config validation failed: unknown field',
            }),
          'ApplyConfigRejected',
        ],
        [
          'worker-3',
          () =>
            (lab.talos.node('worker-3').faults.configReadError = {
              code: GrpcStatus.PERMISSION_DENIED,
              message: 'not authorized',
            }),
          'ConfigUnreadable',
        ],
      ];
      const started = Date.now();
      for (const [node, fault] of cases) {
        fault();
        await lab.createJob({
          node,
          plan: 'faults',
          group: 'workers',
          slot: cases.findIndex(([n]) => n === node),
          target: { kubernetesVersion: TO },
          spec: { kubernetesUpgradeTimeout: timeout },
        });
      }
      for (const [node, , reason] of cases) {
        const s = await lab.waitForPhase(`faults-${node}`, ['Failed', 'Completed'], 60_000);
        assert.equal(s.phase, 'Failed', JSON.stringify(s));
        assert.equal(s.reason, reason, String(s.message));
        assert.match(String(s.message), new RegExp(node));
      }
      assert.ok(
        Date.now() - started < 15_000 + 10_000,
        'rejected config and unreadable config fail at once, long before the timeout',
      );
      await controller.stop();
    });

    it('a static pod that never becomes Ready fails the job with StaticPodNotReady, and the Halt policy stops the plan', async function () {
      lab.talos.node('cp-1').faults.staticPodNeverReady = 'kube-apiserver';
      const controller = lab.startController();
      const only = {
        nodeSelector: {
          matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['cp-1', 'worker-1'] }],
        },
        kubernetesUpgradeTimeout: '10s',
      };
      await lab.applyPlan(labPlan(planDoc('never-ready', { kubernetesVersion: 'v1.36.4' }, only), lab.talos.endpoint));
      const started = Date.now();
      const status = await lab.waitForPlan(
        'never-ready',
        'Failed',
        (s) => s.phase === 'Failed' || s.phase === 'Completed',
        120_000,
      );
      assert.equal(status.phase, 'Failed', JSON.stringify(status));
      assert.equal(status.reason, 'FailureBudgetExceeded');
      const job = await lab.job('never-ready-cp-1');
      assert.equal(job?.status.reason, 'StaticPodNotReady', String(job?.status.message));
      const failedAt = Date.parse(String(job?.status.completionTime));
      const jobStarted = Date.parse(String(job?.status.startTime));
      assert.ok(failedAt - started < 10_000 + 20_000, 'failed within the timeout plus a margin');
      assert.ok(failedAt >= jobStarted + 10_000 - 500, 'not before its kubernetesUpgradeTimeout');
      assert.equal(await lab.job('never-ready-worker-1'), undefined, 'the worker never started');
      lab.talos.node('cp-1').faults.staticPodNeverReady = undefined;
      await controller.stop();
    });

    it('preflight refuses a Kubernetes downgrade and a two-minor jump with messages that say what to do', async function () {
      const controller = lab.startController();
      await lab.applyPlan(labPlan(planDoc('downgrade', { kubernetesVersion: 'v1.34.1' }), lab.talos.endpoint));
      await lab.applyPlan(labPlan(planDoc('two-minors', { kubernetesVersion: 'v1.38.0' }), lab.talos.endpoint));
      const message = async (name: string): Promise<string> => {
        const s = await lab.waitForPlan(name, 'preflight failed', (st) => st.phase === 'Failed', 60_000);
        return String(
          (s.conditions as { type: string; message: string }[]).find((c) => c.type === 'PreflightPassed')?.message,
        );
      };
      assert.match(
        await message('downgrade'),
        /NoKubernetesDowngrade: target\.kubernetesVersion v1\.34\.1 is older than .*never downgraded/,
      );
      assert.match(
        await message('two-minors'),
        /UpgradePath: .*skips 1\.36, 1\.37: Kubernetes moves at most one minor version per upgrade/,
      );
      assert.deepEqual(
        lab.observer.events.filter((e) => e.kind === 'jobPhase' && /^(downgrade|two-minors)-/.test(e.detail)),
        [],
        'no PatchJob created',
      );
      await controller.stop();
    });
  });
});
