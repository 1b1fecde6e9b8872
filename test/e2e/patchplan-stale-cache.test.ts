// Issue 19, the plan's side: the controller's kube-proxy DaemonSet watch goes silent with its
// connection open (half-open: a NAT or load balancer dropped its state, no FIN), so its cache never
// sees kube-proxy roll out to the target. The watchdog would notice only after the watch's server
// timeout plus 30 s (5.5-10.5 min); kubernetesUpgradeTimeout passes first. The plan must read the
// DaemonSet from the apiserver before failing with KubeProxyUpgradeTimeout, go on to the workers,
// and re-list the stale cache. The oracle is the lab: the interposer's record of the controller's
// requests and the observer's own watches.
import assert from 'node:assert/strict';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { labPlan } from './support/plans.js';
import { waitFor } from '../lab/wait.js';

const FROM = 'v1.35.2';
const TO = 'v1.36.3';
const DS_PATH = '/apis/apps/v1/namespaces/kube-system/daemonsets';
const isDsWatch = (path: string): boolean => path.startsWith(`${DS_PATH}?`) && /[?&]watch=true\b/.test(path);
const isDsList = (path: string): boolean => path.startsWith(`${DS_PATH}?`) && !/[?&]watch=/.test(path);

describe('PatchPlan end to end: a silent kube-proxy DaemonSet watch (half-open) does not fail a plan whose kube-proxy rolled out', function () {
  this.timeout(240_000);
  let lab: JobLab;
  let controller: Controller;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 2, controlPlanes: 1, talosVersion: 'v1.13.2', kubernetesVersion: FROM },
      kubeProxy: true,
      interposer: true,
    });
    controller = lab.startController();
  });
  after(async function () {
    await lab?.stop();
  });

  it('confirms on a fresh read of the DaemonSet at kubernetesUpgradeTimeout, moves the workers and re-lists the DaemonSet cache', async function () {
    const interposer = lab.interposer;
    assert.ok(interposer);
    // The watch is made silent before the plan starts: the cache keeps kube-proxy on its old image.
    await waitFor(() => interposer.silenceWatches(isDsWatch) === 1 || undefined, {
      timeoutMs: 60_000,
      description: "the controller's DaemonSet watch, made silent",
    });
    const silencedAt = interposer.exchanges.length;

    await lab.applyPlan(
      labPlan(
        {
          apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
          kind: 'PatchPlan',
          metadata: { name: 'stale-proxy' },
          spec: {
            target: { kubernetesVersion: TO },
            strategy: { order: ['controlPlane', 'workers'] },
            failurePolicy: { type: 'Halt', maxFailures: 1 },
            kubernetesUpgradeTimeout: '45s',
          },
        },
        lab.talos.endpoint,
      ),
    );
    const status = await lab.waitForPlan(
      'stale-proxy',
      'Completed or Failed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      200_000,
    );
    assert.equal(status.phase, 'Completed', `not failed on the stale cache: ${JSON.stringify(status)}`);
    assert.equal(status.kubeProxyUpgraded, true);
    for (const n of ['cp-1', 'worker-1']) assert.equal(lab.observer.node(n)?.kubeletVersion, TO, `${n} kubelet`);

    // The DaemonSet had rolled out in the apiserver before the deadline passed on the silent cache.
    const deadline = Date.parse(String((status.kubeProxy as { deadline?: string } | undefined)?.deadline));
    const after = interposer.exchanges.slice(silencedAt);
    const read = after.find((e) => e.method === 'GET' && e.path.split('?')[0] === `${DS_PATH}/kube-proxy`);
    assert.ok(
      read,
      `a fresh GET of the DaemonSet: ${JSON.stringify(after.map((e) => `${e.method} ${e.path}`).slice(-40))}`,
    );
    assert.ok(read.at >= deadline, 'read once the deadline had passed, not on every pass');
    assert.equal(
      after.filter((e) => e.method === 'GET' && e.path.split('?')[0] === `${DS_PATH}/kube-proxy`).length,
      1,
      'one read for the verdict',
    );
    // The worker's kubelet moved after that read: the workers waited for kube-proxy.
    const workerMoved = lab.observer.of('worker-1', ['componentVersion']).find((e) => e.detail.endsWith(TO));
    assert.ok(workerMoved && workerMoved.at >= read.at, 'worker-1 moved after kube-proxy was confirmed');

    await waitFor(
      () =>
        interposer.exchanges
          .slice(silencedAt)
          .some((e) => e.method === 'GET' && isDsList(e.path) && e.status === 200) || undefined,
      { timeoutMs: 20_000, description: 'the DaemonSet cache re-listed' },
    );
    const warning = controller
      .logs()
      .find((l) => l['level'] === 40 && l['resource'] === 'daemonset kube-system/kube-proxy');
    assert.ok(warning, 'a warning naming the stale DaemonSet');
    assert.match(String(warning['msg']), /kube-proxy daemonset cache is stale/);
  });
});
