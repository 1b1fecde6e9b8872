// Auto-update templates end to end through the real `kangal-patch run`: a scripted Talos release
// feed on the lab forge (checked against GitHub's OpenAPI description), two templates on a v1.13.2
// fleet. `allow: patch` proposes exactly v1.13.3 (v1.13.4 too young), `allow: minor` v1.14.0; the
// proposed file passes `kangal-patch validate` and keeps the template's comments; a newer release
// supersedes the open PR (never two open); merging leads to the child plan rolling out and the next
// proposal waits for it; closing without merge skips the version across a restart; a rate-limited
// feed, a 304 feed and an unreachable releases API each show in status.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { factoryImage } from './support/plans.js';
import { runCli } from './support/cli.js';
import { waitFor } from '../lab/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../lab/webhook-receiver.js';
import { forgeUserCall } from '../lab/forge/user-api.js';

const FLEET = 'v1.13.2';
const POLL_MS = 2000;
const DAY = 86_400_000;
const GROUP = 'kangalpatch.ozalp.dk';

interface Pull {
  number: number;
  state: string;
  merged_at: string | null;
  title: string;
  html_url: string;
  head: { ref: string };
  body: string | null;
  labels: { name: string }[];
}
type AutoUpdate = Record<string, unknown> & {
  lastError?: { reason: string; message: string };
  skippedVersions?: string[];
  blockedBy?: { name: string };
};

const template = (
  name: string,
  allow: 'patch' | 'minor',
  endpoint: string,
): string => `# ${name}: follows upstream Talos ${allow} releases; each one is proposed as a pull request.
apiVersion: kangalpatch.ozalp.dk/v1alpha1
kind: PatchPlan
metadata:
  name: ${name}
spec:
  target:
    autoUpdate:
      enabled: true
      allow: ${allow} # patch | minor
      checkInterval: 1m
      minReleaseAge: 72h # let a release age three days before using it
    source: factory # copied to every child
    installer: nocloud
  delayBetweenNodes: 0s
  strategy:
    order: [controlPlane, workers]
  talosConfig:
    endpoints: ["${endpoint}"]
    secretRef:
      name: talos-credentials
`;

/** A loopback front of the releases API that can be switched off (connections reset). */
async function releasesProxy(target: string): Promise<{ url: string; down: boolean; server: Server }> {
  const state = { url: '', down: false, server: undefined as unknown as Server };
  state.server = createServer((req, res) => {
    if (state.down) {
      req.socket.destroy();
      return;
    }
    const headers: Record<string, string> = {};
    for (const h of ['authorization', 'accept', 'if-none-match', 'x-github-api-version', 'user-agent']) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    fetch(`${target}${req.url ?? '/'}`, { headers }).then(
      async (r) => {
        const out: Record<string, string> = {};
        r.headers.forEach((v, k) => {
          if (!['content-encoding', 'content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(k))
            out[k] = v;
        });
        res.writeHead(r.status, out);
        res.end(Buffer.from(await r.arrayBuffer()));
      },
      () => req.socket.destroy(),
    );
  });
  await new Promise<void>((r) => state.server.listen(0, '127.0.0.1', () => r()));
  state.url = `http://127.0.0.1:${(state.server.address() as AddressInfo).port}`;
  return state;
}

describe('GitOps end to end: auto-update templates propose Talos releases as pull requests', function () {
  this.timeout(600_000);
  let lab: JobLab;
  let controller: Controller;
  let proxy: Awaited<ReturnType<typeof releasesProxy>>;
  let custom: CustomObjectsApi;
  let tokenFile: string;
  /** Receives the proposal.opened notifications (--notify-config-file). */
  let receiver: WebhookReceiver;
  let notifyConfig: string;
  const scratch = mkdtempSync(join(tmpdir(), 'kangal-auto-update-'));
  const prefix = (t: string): string => `kangal-patch/lab/auto-update/${t}-`;

  const api = <T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> =>
    forgeUserCall<T>(lab.forge!, path, init);
  const pulls = async (t: string): Promise<Pull[]> =>
    (await api<Pull[]>('/repos/acme/plans/pulls?state=all&per_page=100')).filter((p) =>
      p.head.ref.startsWith(prefix(t)),
    );
  const autoUpdate = async (name: string): Promise<AutoUpdate | undefined> =>
    (await lab.plan(name))?.status?.autoUpdate as AutoUpdate | undefined;
  const releaseRequests = (): number[] =>
    lab.forge!.requests.filter((r) => r.path === '/repos/siderolabs/talos/releases').map((r) => r.status);
  /** Wakes a template now (the reconcile-now annotation changes its inputs), instead of waiting for checkInterval. */
  const poke = async (name: string): Promise<void> => {
    await custom.patchClusterCustomObject(
      {
        group: GROUP,
        version: 'v1alpha1',
        plural: 'patchplans',
        name,
        body: { metadata: { annotations: { [`${GROUP}/reconcile-now`]: String(Date.now()) } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };
  const release = (tag: string, ageMs: number, opts: { prerelease?: boolean; draft?: boolean } = {}): void => {
    lab.forge!.addRelease('siderolabs', 'talos', tag, {
      publishedAt: new Date(Date.now() - ageMs).toISOString(),
      body: `Talos ${tag}`,
      ...opts,
    });
  };
  const start = (env: Record<string, string> = {}): Controller =>
    lab.startController({
      env,
      args: lab.gitArgs({
        pollInterval: `${POLL_MS / 1000}s`,
        extra: [
          '--forge',
          'github',
          '--forge-api-url',
          lab.forge!.apiUrl,
          '--releases-api-url',
          proxy.url,
          '--releases-token-file',
          tokenFile,
          '--notify-config-file',
          notifyConfig,
        ],
      }),
    });

  before(async function () {
    const images = ['v1.13.3', 'v1.13.5', 'v1.13.6', 'v1.14.0'].map((v) => factoryImage('nocloud', v));
    lab = await startJobLab({ fleet: { nodes: 3, controlPlanes: 1, talosVersion: FLEET }, images, plansRepo: true });
    custom = lab.kc.makeApiClient(CustomObjectsApi);
    await lab.forge!.createRepo('siderolabs', 'talos', { files: { 'README.md': 'talos\n' } });
    proxy = await releasesProxy(lab.forge!.apiUrl);
    tokenFile = join(scratch, 'releases-token');
    writeFileSync(tokenFile, `${lab.forge!.token}\n`, { mode: 0o600 });
    receiver = await startWebhookReceiver();
    notifyConfig = join(scratch, 'notify.yaml');
    writeFileSync(
      notifyConfig,
      `receivers:\n  - { name: proposals, type: webhook, url: "${receiver.url()}", events: [proposal.opened] }\n`,
      { mode: 0o600 },
    );
    release('v1.13.3', 10 * DAY);
    release('v1.13.4', 3_600_000); // too young for minReleaseAge 72h
    release('v1.14.0', 10 * DAY);
    release('v1.14.1-beta.0', 10 * DAY, { prerelease: true });
    release('v1.15.0', 10 * DAY, { draft: true });
  });
  after(async function () {
    await new Promise<void>((r) => (proxy?.server ? proxy.server.close(() => r()) : r()));
    await lab?.stop();
    await receiver?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('allow: patch proposes exactly v1.13.3 and allow: minor v1.14.0; the file validates and keeps the comments; the feed answers 304', async function () {
    controller = start();
    await waitFor(() => controller.logs().some((l) => l.msg === 'GitOps loop started') || undefined, {
      timeoutMs: 60_000,
      description: 'the GitOps loop to start',
    });
    await lab.plans!.write('plans/patch-tpl.yaml', template('patch-tpl', 'patch', lab.talos.endpoint));
    await lab.plans!.write('plans/minor-tpl.yaml', template('minor-tpl', 'minor', lab.talos.endpoint));
    await lab.plans!.commitAndPush('add two auto-update templates');

    // Labels are a second call after the PR is created.
    const patchPr = await waitFor(async () => (await pulls('patch-tpl')).find((p) => p.labels.length > 0), {
      timeoutMs: 90_000,
      description: 'the labelled patch-tpl proposal',
    });
    assert.equal((await pulls('patch-tpl')).length, 1, 'exactly one proposal');
    assert.equal(patchPr.head.ref, 'kangal-patch/lab/auto-update/patch-tpl-v1.13.3');
    assert.equal(patchPr.state, 'open');
    assert.match(patchPr.title, /\[lab\].*v1\.13\.3/);
    const labels = patchPr.labels.map((l) => l.name);
    assert.ok(labels.includes('cluster/lab') && labels.includes('talos/v1.13.3'), labels.join(', '));
    const body = patchPr.body ?? '';
    assert.match(body, /releases\/tag\/v1\.13\.3/, 'links the release notes');
    assert.match(body, /patch release, v1\.13\.2 → v1\.13\.3/);
    for (const node of ['cp-1', 'worker-1', 'worker-2']) assert.ok(body.includes(node), `${node} in the rollout`);
    assert.match(body, /nocloud-installer\/[0-9a-f]+:v1\.13\.3/, 'installer image per node');
    assert.match(body, /Estimated duration/);
    assert.match(body, /InstallerImages|installer image/i, 'the installer image preflight');

    await lab.plans!.git(['fetch', '--quiet', 'origin', patchPr.head.ref]);
    const text = await lab.plans!.git(['show', 'FETCH_HEAD:plans/patch-tpl-v1-13-3.yaml']);
    assert.match(text, /^# patch-tpl: follows upstream Talos patch releases/, 'the head comment');
    assert.match(text, /installer: nocloud/);
    assert.match(text, /source: factory # copied to every child/, 'an inline comment');
    assert.match(text, /talosVersion: "v1\.13\.3"/);
    assert.doesNotMatch(text, /autoUpdate/);
    const file = join(scratch, 'patch-tpl-v1-13-3.yaml');
    writeFileSync(file, text);
    const validated = await runCli(['validate', file]);
    assert.equal(validated.code, 0, `kangal-patch validate: ${validated.out}${validated.err}`);

    const minorPr = await waitFor(async () => (await pulls('minor-tpl'))[0], {
      timeoutMs: 60_000,
      description: 'the minor-tpl proposal',
    });
    assert.equal(minorPr.head.ref, 'kangal-patch/lab/auto-update/minor-tpl-v1.14.0');
    assert.match(minorPr.body ?? '', /crosses a minor version \(v1\.13 → v1\.14\)/);
    assert.match(minorPr.body ?? '', /staged/);

    const st = await waitFor(
      async () => {
        const s = await autoUpdate('patch-tpl');
        return s?.lastProposedVersion === 'v1.13.3' ? s : undefined;
      },
      { timeoutMs: 30_000, description: 'status.autoUpdate of patch-tpl' },
    );
    assert.equal(st.currentVersion, FLEET);
    assert.equal(st.latestVersion, 'v1.14.0', 'newest stable: not the pre-release, not the draft');
    assert.equal(st.pendingVersion, 'v1.13.4');
    assert.ok(
      typeof st.pendingEligibleTime === 'string' && Date.parse(st.pendingEligibleTime) > Date.now() + 70 * 3_600_000,
      JSON.stringify(st),
    );
    assert.equal(st.lastProposalURL, patchPr.html_url);
    const statuses = releaseRequests();
    assert.equal(statuses.filter((s) => s === 200).length, 1, `one full list, then 304s: ${statuses.join(',')}`);
    assert.ok(statuses.includes(304), `a 304 for the unchanged feed: ${statuses.join(',')}`);

    // Each opened proposal is told once, with its pull request.
    const told = await waitFor(
      () => {
        const b = receiver.bodies();
        return b.length >= 2 ? b : undefined;
      },
      { timeoutMs: 30_000, description: 'two proposal.opened notifications' },
    );
    const byPlan = new Map(told.map((b) => [b['plan'], b]));
    assert.equal(told.length, 2, JSON.stringify(told));
    assert.deepEqual(
      [
        byPlan.get('patch-tpl')?.['type'],
        byPlan.get('patch-tpl')?.['targetTalosVersion'],
        byPlan.get('patch-tpl')?.['url'],
      ],
      ['proposal.opened', 'v1.13.3', patchPr.html_url],
    );
    assert.deepEqual(
      [byPlan.get('minor-tpl')?.['targetTalosVersion'], byPlan.get('minor-tpl')?.['url']],
      ['v1.14.0', minorPr.html_url],
    );
  });

  it('a newer eligible release supersedes the open proposal: the old PR is closed, one new PR is open', async function () {
    release('v1.13.5', 5 * DAY);
    await poke('patch-tpl');
    const open = await waitFor(
      async () => {
        const ps = await pulls('patch-tpl');
        const o = ps.filter((p) => p.state === 'open');
        return o.length === 1 &&
          o[0]?.head.ref.endsWith('-v1.13.5') &&
          ps.some((p) => p.head.ref.endsWith('-v1.13.3') && p.state === 'closed')
          ? o[0]
          : undefined;
      },
      { timeoutMs: 60_000, description: 'v1.13.5 replacing v1.13.3' },
    );
    const all = await pulls('patch-tpl');
    assert.equal(all.filter((p) => p.state === 'open').length, 1, 'never two open');
    const old = all.find((p) => p.head.ref.endsWith('-v1.13.3'));
    assert.ok(old && old.merged_at === null && /superseded/.test(old.title), old?.title);
    assert.match(open.body ?? '', new RegExp(`replaces #${old.number}`));
    // The comment linking the replacement follows the new PR.
    await waitFor(
      async () =>
        (await api<{ body: string }[]>(`/repos/acme/plans/issues/${old.number}/comments`)).some((c) =>
          c.body.includes(`#${open.number}`),
        ) || undefined,
      { timeoutMs: 30_000, description: 'the closed PR points at its replacement' },
    );
    const st = await waitFor(
      async () => {
        const s = await autoUpdate('patch-tpl');
        return s?.lastProposedVersion === 'v1.13.5' ? s : undefined;
      },
      { timeoutMs: 30_000, description: 'status names v1.13.5' },
    );
    assert.equal(st.skippedVersions, undefined, 'a superseded proposal is no skip');
  });

  it('merging the proposal rolls the child plan out; the next proposal waits until it is Completed', async function () {
    const pr = (await pulls('patch-tpl')).find((p) => p.state === 'open')!;
    await api(`/repos/acme/plans/pulls/${pr.number}/merge`, { method: 'PUT', body: { merge_method: 'merge' } });
    release('v1.13.6', 5 * DAY);
    await poke('patch-tpl');
    const child = 'patch-tpl-v1-13-5';
    // While the child is not Completed there is no v1.13.6 proposal (the PR list is read before the phase).
    let sawBlocked = false;
    const done = await waitFor(
      async () => {
        const proposed = (await pulls('patch-tpl')).some((p) => p.head.ref.endsWith('-v1.13.6'));
        const phase = (await lab.plan(child))?.status?.phase;
        assert.ok(!proposed || phase === 'Completed', `v1.13.6 proposed while ${child} is ${String(phase)}`);
        const s = await autoUpdate('patch-tpl');
        if (s?.blockedBy?.name === child) sawBlocked = true;
        return phase === 'Completed' || phase === 'Failed' ? phase : undefined;
      },
      { timeoutMs: 300_000, intervalMs: 200, description: `child plan ${child} finished` },
    );
    assert.equal(done, 'Completed');
    const childPlan = await lab.plan(child);
    assert.equal((childPlan?.metadata.labels as Record<string, string>)[`${GROUP}/auto-update-template`], 'patch-tpl');
    assert.ok(
      sawBlocked || controller.logs().some((l) => l['reason'] === 'ChildNotCompleted'),
      'a check saw the child blocking',
    );
    for (const node of ['cp-1', 'worker-1', 'worker-2'])
      assert.equal((await lab.job(`${child}-${node}`))?.status.phase, 'Completed');
    const next = await waitFor(
      async () => (await pulls('patch-tpl')).find((p) => p.state === 'open' && p.head.ref.endsWith('-v1.13.6')),
      { timeoutMs: 90_000, description: 'the v1.13.6 proposal after the child completed' },
    );
    assert.match(next.body ?? '', /v1\.13\.5 → v1\.13\.6/, 'from the version the child rolled out');
    // The PR opens before the check writes its status.
    const st = await waitFor(
      async () => {
        const s = await autoUpdate('patch-tpl');
        return s?.lastProposedVersion === 'v1.13.6' ? s : undefined;
      },
      { timeoutMs: 30_000, description: 'status names the v1.13.6 proposal' },
    );
    assert.equal(st.blockedBy, undefined, 'no longer blocked');
    assert.equal(st.currentVersion, 'v1.13.5');
  });

  it('closing a proposal without merge skips that version, also after a controller restart', async function () {
    const pr = (await pulls('minor-tpl')).find((p) => p.state === 'open' && p.head.ref.endsWith('-v1.14.0'))!;
    await api(`/repos/acme/plans/pulls/${pr.number}`, { method: 'PATCH', body: { state: 'closed' } });
    await poke('minor-tpl');
    await waitFor(
      async () => ((await autoUpdate('minor-tpl'))?.skippedVersions ?? []).includes('v1.14.0') || undefined,
      { timeoutMs: 60_000, description: 'v1.14.0 skipped' },
    );
    await controller.kill();
    const checkedBefore = String((await autoUpdate('minor-tpl'))?.lastCheckTime);
    controller = start();
    const st = await waitFor(
      async () => {
        const s = await autoUpdate('minor-tpl');
        return s && String(s.lastCheckTime) !== checkedBefore ? s : undefined;
      },
      { timeoutMs: 90_000, description: 'a check by the restarted controller' },
    );
    assert.ok(st.skippedVersions?.includes('v1.14.0'), JSON.stringify(st));
    const v14 = (await pulls('minor-tpl')).filter((p) => p.head.ref.endsWith('-v1.14.0'));
    assert.deepEqual(
      v14.map((p) => p.state),
      ['closed'],
      'not proposed again',
    );
  });

  it('a rate-limited feed says so with the reset time; an unreachable releases API is a lastError that recovers', async function () {
    const reset = Math.floor(Date.now() / 1000) + 90;
    lab.forge!.setRateLimit({ remaining: 0, reset });
    await poke('patch-tpl');
    const limited = await waitFor(
      async () => {
        const s = await autoUpdate('patch-tpl');
        return s?.lastError?.reason === 'RateLimited' ? s : undefined;
      },
      { timeoutMs: 60_000, description: 'RateLimited in status' },
    );
    const resetIso = new Date(reset * 1000).toISOString();
    assert.ok(limited.lastError?.message.includes(resetIso), limited.lastError?.message);
    assert.ok(
      Math.abs(Date.parse(String(limited.nextCheckTime)) - reset * 1000) <= 2000,
      `next check at the reset: ${String(limited.nextCheckTime)}`,
    );
    lab.forge!.setRateLimit({ remaining: 5000, reset: Math.floor(Date.now() / 1000) + 3600 });

    proxy.down = true;
    await poke('patch-tpl');
    const down = await waitFor(
      async () => {
        const s = await autoUpdate('patch-tpl');
        return s?.lastError?.reason === 'NetworkError' ? s : undefined;
      },
      { timeoutMs: 60_000, description: 'NetworkError in status' },
    );
    assert.match(down.lastError?.message ?? '', /releases/);
    proxy.down = false;
    const healed = await waitFor(
      async () => {
        const s = await autoUpdate('patch-tpl');
        return s && s.lastError === undefined ? s : undefined;
      },
      { timeoutMs: 120_000, description: 'lastError cleared after the API is back' },
    ).catch(async (err: unknown) => {
      throw new Error(
        `${String(err)}; status ${JSON.stringify(await autoUpdate('patch-tpl'))}\n${controller
          .logs()
          .filter((l) => l['loop'] === 'auto-update')
          .slice(-15)
          .map((l) => JSON.stringify(l))
          .join('\n')}`,
      );
    });
    assert.equal(healed.latestVersion, 'v1.14.0');
    assert.deepEqual(lab.forge!.violations, [], "every forge request matched GitHub's OpenAPI description");
  });

  it('deleting a template closes its open proposal with a comment', async function () {
    const open = (await pulls('patch-tpl')).find((p) => p.state === 'open')!;
    // The merged proposal moved main: start from the remote's tip.
    await lab.plans!.git(['pull', '--quiet', '--ff-only', 'origin', 'main']);
    await lab.plans!.remove('plans/patch-tpl.yaml');
    await lab.plans!.commitAndPush('remove the patch-tpl template');
    await waitFor(async () => (await pulls('patch-tpl')).every((p) => p.state === 'closed') || undefined, {
      timeoutMs: 90_000,
      description: 'the proposal closed',
    });
    const comments = await api<{ body: string }[]>(`/repos/acme/plans/issues/${open.number}/comments`);
    assert.ok(
      comments.some((c) => c.body.includes('deleted')),
      JSON.stringify(comments),
    );
    const closed = (await pulls('patch-tpl')).find((p) => p.number === open.number);
    assert.ok(
      closed?.title.endsWith(' (template deleted)'),
      `marked as closed by KangalPatch, no skip: ${String(closed?.title)}`,
    );
    const token = lab.forge!.token;
    assert.ok(!controller.logs().some((l) => JSON.stringify(l).includes(token)), 'no token in the log');
    assert.deepEqual(lab.forge!.violations, []);
  });

  it('a too-young release is pending until minReleaseAge has passed, then proposed (controller clock shifted past it)', async function () {
    release('v1.13.7', 3_600_000);
    await poke('minor-tpl');
    const pending = await waitFor(
      async () => {
        const s = await autoUpdate('minor-tpl');
        return s?.pendingVersion === 'v1.13.7' ? s : undefined;
      },
      { timeoutMs: 60_000, description: 'v1.13.7 pending' },
    );
    const eligibleAt = Date.parse(String(pending.pendingEligibleTime));
    assert.ok(
      Math.abs(eligibleAt - (Date.now() - 3_600_000 + 72 * 3_600_000)) < 60_000,
      String(pending.pendingEligibleTime),
    );
    assert.ok(!(await pulls('minor-tpl')).some((p) => p.head.ref.endsWith('-v1.13.7')), 'not proposed while too young');
    await controller.kill();
    controller = start({ KANGAL_PATCH_DEBUG_CLOCK_OFFSET: String(eligibleAt - Date.now() + 60_000) });
    const pr = await waitFor(
      async () => (await pulls('minor-tpl')).find((p) => p.state === 'open' && p.head.ref.endsWith('-v1.13.7')),
      { timeoutMs: 90_000, description: 'v1.13.7 proposed once old enough' },
    );
    const open = (await pulls('minor-tpl')).filter((p) => p.state === 'open');
    assert.deepEqual(
      open.map((p) => p.number),
      [pr.number],
      'it replaced the open proposal',
    );
    assert.deepEqual(lab.forge!.violations, []);
  });

  it('a template deleted while no controller ran: the next start closes its open proposal after the first sync', async function () {
    const open = (await pulls('minor-tpl')).filter((p) => p.state === 'open');
    assert.equal(open.length, 1, 'the proposal of the last test is open');
    await controller.kill();
    await lab.plans!.git(['pull', '--quiet', '--ff-only', 'origin', 'main']);
    await lab.plans!.remove('plans/minor-tpl.yaml');
    await lab.plans!.commitAndPush('remove the minor-tpl template');
    // Gone from the cluster too, past its finalizer, as a human forcing it would.
    await custom.patchClusterCustomObject(
      {
        group: GROUP,
        version: 'v1alpha1',
        plural: 'patchplans',
        name: 'minor-tpl',
        body: { metadata: { finalizers: null } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await custom.deleteClusterCustomObject({
      group: GROUP,
      version: 'v1alpha1',
      plural: 'patchplans',
      name: 'minor-tpl',
    });
    await waitFor(async () => (await lab.plan('minor-tpl')) === undefined || undefined, {
      timeoutMs: 30_000,
      description: 'minor-tpl gone from the cluster',
    });

    controller = start();
    await waitFor(async () => (await pulls('minor-tpl')).every((p) => p.state === 'closed') || undefined, {
      timeoutMs: 90_000,
      description: 'the orphaned proposal closed',
    });
    const closed = (await pulls('minor-tpl')).find((p) => p.number === open[0]!.number);
    assert.ok(closed?.title.endsWith(' (template deleted)'), String(closed?.title));
    assert.equal(closed?.merged_at, null);
    const comments = await api<{ body: string }[]>(`/repos/acme/plans/issues/${open[0]!.number}/comments`);
    assert.ok(
      comments.some((c) => c.body.includes('`minor-tpl` was deleted')),
      JSON.stringify(comments),
    );
    assert.ok(
      controller
        .logs()
        .some((l) => l.plan === 'minor-tpl' && String(l.msg).includes('neither the cluster nor Git has')),
      'the sweep says why',
    );
    assert.deepEqual(lab.forge!.violations, []);
  });
});
