// The two ways to poll the plans repository before the next interval, through the real
// `kangal-patch run` process: a signed GitHub push webhook and the reconcile-now annotation on a
// plan. The poll interval is 10 minutes, so a pushed plan that appears within seconds was fetched
// because of the trigger. Unsigned, wrongly signed and other-branch deliveries trigger nothing.
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { waitFor } from '../lab/wait.js';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { labPlan, type PlanDoc } from './support/plans.js';

const GROUP = 'kangalpatch.ozalp.dk';
const TRIGGERED_WITHIN_MS = 30_000;

describe('GitOps end to end: webhook and reconcile-now trigger a poll', function () {
  this.timeout(300_000);
  let lab: JobLab;
  let controller: Controller;
  let webhookUrl: string;
  const secret = randomBytes(24).toString('hex');

  /** A plan that selects no node: it is applied and never rolls anything out. */
  const idlePlan = (name: string): PlanDoc =>
    labPlan(
      {
        apiVersion: `${GROUP}/v1alpha1`,
        kind: 'PatchPlan',
        metadata: { name },
        spec: {
          target: { talosVersion: 'v1.13.2', source: 'factory', installer: 'nocloud' },
          nodeSelector: { matchLabels: { environment: 'nowhere' } },
        },
      },
      lab.talos.endpoint,
    );
  const pushPlan = async (name: string): Promise<string> => {
    await lab.plans!.write(`plans/${name}.yaml`, stringify(idlePlan(name)));
    return lab.plans!.commitAndPush(`add ${name}`);
  };
  const deliver = async (
    event: string,
    payload: unknown,
    signWith: string | null = secret,
  ): Promise<{ status: number; text: string }> => {
    const body = JSON.stringify(payload);
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-github-event': event };
    if (signWith !== null)
      headers['x-hub-signature-256'] = `sha256=${createHmac('sha256', signWith).update(body).digest('hex')}`;
    const res = await fetch(webhookUrl, { method: 'POST', headers, body });
    return { status: res.status, text: (await res.text()).trim() };
  };
  const appliedCommit = async (name: string): Promise<string | undefined> =>
    ((await lab.plan(name))?.metadata.annotations as Record<string, string> | undefined)?.[`${GROUP}/source-commit`];
  const pollsTriggered = (): number => controller.logs().filter((l) => l.msg === 'GitOps poll triggered').length;

  before(async function () {
    lab = await startJobLab({ fleet: { nodes: 1, controlPlanes: 1, talosVersion: 'v1.12.4' }, plansRepo: true });
    await pushPlan('first');
    const secretFile = join(lab.cluster.dir, 'webhook-secret');
    writeFileSync(secretFile, `${secret}\n`, { mode: 0o600 });
    controller = lab.startController({
      args: lab.gitArgs({
        pollInterval: '10m',
        extra: ['--webhook-bind-address', '127.0.0.1:0', '--webhook-secret-file', secretFile],
      }),
    });
    const listening = await waitFor(() => controller.logs().find((l) => l.msg === 'webhook listening'), {
      timeoutMs: 60_000,
      description: 'the webhook to listen',
    });
    webhookUrl = `http://127.0.0.1:${String(listening.port)}/`;
    // The first poll at start loads what Git had then.
    await waitFor(async () => appliedCommit('first'), {
      timeoutMs: 60_000,
      description: 'the first plan applied by the initial poll',
    });
  });
  after(async function () {
    await lab?.stop();
  });

  it('a signed push webhook for the branch fetches at once, without listing the refs first, and applies the pushed plan', async function () {
    const sha = await pushPlan('by-webhook');
    assert.deepEqual(await deliver('ping', { zen: 'hi' }), { status: 200, text: 'pong' });
    const gitBefore = lab.forge!.gitRequests.length;
    assert.deepEqual(await deliver('push', { ref: 'refs/heads/main' }), { status: 202, text: 'poll triggered' });
    await waitFor(async () => (await appliedCommit('by-webhook')) === sha || undefined, {
      timeoutMs: TRIGGERED_WITHIN_MS,
      description: 'the plan pushed before the webhook applied',
    });
    const requests = lab.forge!.gitRequests.slice(gitBefore);
    const git = requests.map((r) =>
      `${r.method} ${r.path.split('?')[0] ?? ''} ${r.command ?? ''} ${r.refPrefixes?.join(' ') ?? ''}`.trim(),
    );
    // The rollout report of the applied plan may be written meanwhile (--forge none: a branch), and
    // its writer lists its own report branch; the poll's listing is the one of the watched branch.
    const branchListings = requests.filter(
      (r) => r.command === 'ls-refs' && r.refPrefixes?.includes('refs/heads/main') === true,
    );
    assert.equal(branchListings.length, 0, `no listing of refs/heads/main before the fetch: ${git.join(', ')}`);
    assert.ok(
      git.some((r) => r.startsWith('POST') && r.includes('git-upload-pack')),
      `fetched: ${git.join(', ')}`,
    );
  });

  it('refuses unsigned and wrongly signed deliveries and ignores other branches and events', async function () {
    const before = pollsTriggered();
    assert.deepEqual(await deliver('push', { ref: 'refs/heads/main' }, null), {
      status: 401,
      text: 'signature mismatch',
    });
    assert.deepEqual(await deliver('push', { ref: 'refs/heads/main' }, randomBytes(24).toString('hex')), {
      status: 401,
      text: 'signature mismatch',
    });
    assert.deepEqual(await deliver('push', { ref: 'refs/heads/feature' }), {
      status: 202,
      text: 'ignored: another branch',
    });
    assert.deepEqual(await deliver('issues', { action: 'opened' }), { status: 202, text: 'ignored: not a push' });
    const res = await fetch(webhookUrl);
    assert.equal(res.status, 405);
    await res.body?.cancel();
    const refusals = controller.logs().filter((l) => l.msg === 'webhook: signature mismatch (X-Hub-Signature-256)');
    assert.equal(refusals.length, 2, 'each refused delivery is logged');
    assert.ok(!controller.logs().some((l) => JSON.stringify(l).includes(secret)), 'the webhook secret is never logged');
    assert.equal(pollsTriggered(), before, 'no refused or ignored delivery triggered a poll');
  });

  it('changing the reconcile-now annotation of a plan polls at once', async function () {
    const sha = await pushPlan('by-annotation');
    const custom = lab.kc.makeApiClient(CustomObjectsApi);
    await custom.patchClusterCustomObject(
      {
        group: GROUP,
        version: 'v1alpha1',
        plural: 'patchplans',
        name: 'first',
        body: { metadata: { annotations: { [`${GROUP}/reconcile-now`]: new Date().toISOString() } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor(async () => (await appliedCommit('by-annotation')) === sha || undefined, {
      timeoutMs: TRIGGERED_WITHIN_MS,
      description: 'the plan pushed before the annotation applied',
    });
    assert.ok(
      controller
        .logs()
        .some((l) => l.plan === 'first' && l.msg === 'reconcile-now annotation changed: polling the plans repository'),
    );
  });
});
