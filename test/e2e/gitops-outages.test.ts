// Outages through the real `kangal-patch run` process: the git server unreachable for a while (a
// plan pushed meanwhile is applied once it is back, and only once), and the forge API down while a
// rollout finishes (the report PR still ends with the final content, marked ready, no second PR).
// The controller reaches the lab forge through switchable proxies; the test pushes directly.
import assert from 'node:assert/strict';
import { parse, stringify } from 'yaml';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { examplePlan, factoryImage, labPlan, SMALL_CUSTOM_GROUPS_LABELS } from './support/plans.js';
import { switchableProxy, type SwitchableProxy } from '../lab/proxy.js';
import { waitFor } from '../lab/wait.js';

const TARGET = 'v1.13.2';

interface Pull {
  number: number;
  draft: boolean;
  head: { ref: string };
}

describe('GitOps end to end: outages', function () {
  this.timeout(400_000);
  let lab: JobLab;
  let git: SwitchableProxy;
  let api: SwitchableProxy;
  let controller: Controller;

  const pulls = async (): Promise<Pull[]> => {
    const res = await fetch(`${lab.forge!.apiUrl}/repos/acme/plans/pulls?state=all`, {
      headers: { authorization: `token ${lab.forge!.token}` },
    });
    return ((await res.json()) as Pull[]).filter((p) =>
      p.head.ref.startsWith('kangal-patch/lab/report/custom-groups-'),
    );
  };
  const failedPolls = (): number => controller.logs().filter((l) => l.msg === 'GitOps poll failed').length;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 4, controlPlanes: 1, talosVersion: 'v1.12.4' },
      labels: SMALL_CUSTOM_GROUPS_LABELS,
      images: [factoryImage('nocloud', TARGET)],
      plansRepo: true,
    });
    const args = lab.gitArgs({ pollInterval: '2s' });
    const cloneUrl = args[args.indexOf('--git-url') + 1] ?? '';
    git = await switchableProxy(cloneUrl);
    api = await switchableProxy(lab.forge!.apiUrl);
    controller = lab.startController({
      args: [...args, '--git-url', git.rewrite(cloneUrl), '--forge', 'github', '--forge-api-url', api.url],
    });
    await waitFor(() => controller.logs().some((l) => l.msg === 'GitOps loop started') || undefined, {
      timeoutMs: 60_000,
      description: 'the GitOps loop to start',
    });
  });
  after(async function () {
    await git?.close();
    await api?.close();
    await lab?.stop();
  });

  it('a plan pushed while the git server is unreachable is applied once it is back, exactly once', async function () {
    git.down = true;
    const example = examplePlan('custom-groups.yaml');
    const target: Record<string, unknown> = {
      ...(example.spec.target as Record<string, unknown>),
      talosVersion: TARGET,
    };
    delete target.kubernetesVersion;
    await lab.plans!.write(
      'plans/custom-groups.yaml',
      stringify(labPlan(example, lab.talos.endpoint, { target, paused: true })),
    );
    const sha = await lab.plans!.commitAndPush('add the custom-groups plan (paused)');
    const before = failedPolls();
    await waitFor(() => failedPolls() >= before + 3 || undefined, {
      timeoutMs: 60_000,
      description: 'three failed polls while the git server is down',
    });
    assert.equal(await lab.plan('custom-groups'), undefined, 'nothing applied while unreachable');
    const lastFailure = controller
      .logs()
      .filter((l) => l.msg === 'GitOps poll failed')
      .at(-1);
    assert.ok(lastFailure?.kind === 'Transient', `a transient failure, retried: ${JSON.stringify(lastFailure)}`);
    git.down = false;
    const applied = await waitFor(async () => lab.plan('custom-groups'), {
      timeoutMs: 15_000,
      description: 'the plan applied after the git server came back',
    });
    assert.equal((applied.metadata.annotations as Record<string, string>)['kangalpatch.ozalp.dk/source-commit'], sha);
    assert.equal(applied.metadata.generation, 1, 'applied once');
  });

  it('with the forge API down while the rollout ends, the report PR still ends with the final content, marked ready, and no second PR', async function () {
    await lab.plans!.write(
      'plans/custom-groups.yaml',
      (await lab.plans!.git(['show', 'HEAD:plans/custom-groups.yaml'])).replace('paused: true', 'paused: false'),
    );
    await lab.plans!.commitAndPush('resume the custom-groups plan');
    const draft = await waitFor(async () => (await pulls())[0], {
      timeoutMs: 120_000,
      description: 'a draft report PR',
    });
    assert.equal(draft.draft, true);
    api.down = true;
    const status = await lab.waitForPlan(
      'custom-groups',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      240_000,
    );
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    // Still down: the report cannot be marked ready yet; the controller keeps trying.
    await waitFor(
      () => controller.logs().some((l) => l.loop === 'report' && (l.level === 40 || l.level === 50)) || undefined,
      { timeoutMs: 60_000, description: 'the reporter saying the forge is unreachable' },
    );
    assert.equal((await pulls())[0]?.draft, true);
    api.down = false;
    const ready = await waitFor(
      async () => {
        const list = await pulls();
        return list.length === 1 && list[0]?.draft === false ? list[0] : undefined;
      },
      { timeoutMs: 120_000, description: 'the report PR marked ready after the forge came back' },
    );
    assert.equal(ready.number, draft.number);
    await lab.plans!.git(['fetch', '--quiet', 'origin', ready.head.ref]);
    const twin = parse(await lab.plans!.git(['show', 'FETCH_HEAD:status/lab/custom-groups.yaml'])) as unknown;
    assert.match(JSON.stringify(twin), /"Completed"/);
    assert.deepEqual(lab.forge!.violations, []);
    // Minutes of polls later, the spec changed exactly once more (paused: false): nothing was applied twice.
    assert.equal((await lab.plan('custom-groups'))?.metadata.generation, 2);
  });
});
