// Fleet promotion through Git, end to end: two clusters (two apiservers, two simulated fleets, two
// Talos simulators) share one plans repository on one forge; each runs its own `kangal-patch run`
// with its own token, path (clusters/<name>) and cluster name. Staging signs its reports; production
// trusts staging's public key and promotes only what staging completed and soaked. Releases 1.12.5
// then 1.12.6 appear: staging proposes and (merged by the test) rolls out 1.12.5; a forged report
// is rejected with its reason; production proposes nothing until staging's report is merged and the
// soak has passed, then proposes 1.12.5 with the evidence; restarts change no decision; a failed
// staging rollout of 1.12.6 marks production's open proposal blocked; deleting that failed report
// refuses staging's evidence (its signed index lists it) rather than unblocking; staging's rollback to 1.12.4
// then closes it with the reason, and production stays where it was.
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { startJobLab, type Controller, type JobLab } from './support/job-lab.js';
import { factoryImage } from './support/plans.js';
import { runCli } from './support/cli.js';
import { waitFor } from '../lab/wait.js';
import { forgeUserCall } from '../lab/forge/user-api.js';

const FLEET = 'v1.12.4';
const DAY = 86_400_000;
const SOAK_S = 6;
const GROUP = 'kangalpatch.ozalp.dk';

interface Pull {
  number: number;
  state: string;
  draft: boolean;
  merged_at: string | null;
  created_at: string;
  title: string;
  html_url: string;
  head: { ref: string };
  body: string | null;
}
interface Stage {
  cluster: string;
  state: string;
  report?: string;
  eligibleTime?: string;
  message: string;
}
interface Promotion {
  reason: string;
  version?: string;
  eligibleTime?: string;
  commit?: string;
  stages?: Stage[];
  rejectedReports?: { file: string; reason: string }[];
  upstreamSequence?: Record<string, number>;
}
/** Each stage of a promotion as [cluster, state]. */
const stageStates = (p: Promotion | undefined): string[][] | undefined => p?.stages?.map((x) => [x.cluster, x.state]);

type AutoUpdate = {
  lastCheckTime?: string;
  currentVersion?: string;
  lastProposedVersion?: string;
  skippedVersions?: string[];
  promotion?: Promotion;
  lastError?: { reason: string; message: string };
};

const template = (
  endpoint: string,
  promotion: string,
): string => `# nodes: follows upstream Talos patch releases${promotion === '' ? '' : ', once staging has proven them'}.
apiVersion: kangalpatch.ozalp.dk/v1alpha1
kind: PatchPlan
metadata:
  name: nodes
spec:
  target:
    autoUpdate:
      enabled: true
      allow: patch
      checkInterval: 1h
${promotion}    source: factory
    installer: nocloud
  delayBetweenNodes: 0s
  strategy:
    order: [controlPlane, workers]
  talosConfig:
    endpoints: ["${endpoint}"]
    secretRef:
      name: talos-credentials
`;
/** Staging's rollback by hand: a plain plan (not a template) named like the template's child for v1.12.4. */
const rollback = (endpoint: string): string => `apiVersion: kangalpatch.ozalp.dk/v1alpha1
kind: PatchPlan
metadata:
  name: nodes-v1-12-4
spec:
  target:
    talosVersion: v1.12.4
    allowTalosDowngrade: true
    source: factory
    installer: nocloud
  delayBetweenNodes: 0s
  strategy:
    order: [controlPlane, workers]
  talosConfig:
    endpoints: ["${endpoint}"]
    secretRef:
      name: talos-credentials
`;
const PROMOTION = `      promotion:
        after:
          - cluster: staging
            template: nodes
        soak: ${SOAK_S}s
`;

describe('Fleet promotion through Git: production promotes only what staging completed and soaked', function () {
  this.timeout(900_000);
  let staging: JobLab;
  let production: JobLab;
  let stagingCtl: Controller;
  let productionCtl: Controller;
  const scratch = mkdtempSync(join(tmpdir(), 'kangal-promotion-'));
  const keysDir = join(scratch, 'trusted');
  const stagingKey = join(scratch, 'staging-signing.pem');

  const api = <T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> =>
    forgeUserCall<T>(staging.forge!, path, init);
  const pulls = async (prefix: string): Promise<Pull[]> =>
    (await api<Pull[]>('/repos/acme/plans/pulls?state=all&per_page=100')).filter((p) => p.head.ref.startsWith(prefix));
  const proposals = (cluster: string): Promise<Pull[]> => pulls(`kangal-patch/${cluster}/auto-update/nodes-`);
  const merge = async (pr: Pull): Promise<void> => {
    await api(`/repos/acme/plans/pulls/${pr.number}/merge`, { method: 'PUT', body: { merge_method: 'merge' } });
  };
  const autoUpdate = async (lab: JobLab): Promise<AutoUpdate | undefined> =>
    (await lab.plan('nodes'))?.status?.autoUpdate as AutoUpdate | undefined;
  /** production's status.autoUpdate.promotion once it was read from `commit`. */
  const promotionAt = (commit: string): Promise<Promotion> =>
    waitFor(
      async () => {
        const p = (await autoUpdate(production))?.promotion;
        return p?.commit === commit ? p : undefined;
      },
      { timeoutMs: 60_000, description: `production's status read from ${commit}` },
    );
  const poke = async (lab: JobLab): Promise<void> => {
    await lab.kc.makeApiClient(CustomObjectsApi).patchClusterCustomObject(
      {
        group: GROUP,
        version: 'v1alpha1',
        plural: 'patchplans',
        name: 'nodes',
        body: { metadata: { annotations: { [`${GROUP}/reconcile-now`]: String(Date.now()) } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  };
  const release = (tag: string, ageMs: number): void => {
    staging.forge!.addRelease('siderolabs', 'talos', tag, {
      publishedAt: new Date(Date.now() - ageMs).toISOString(),
      body: `Talos ${tag}`,
    });
  };
  /** Waits for the report PR of `plan` on staging to be ready for review (the rollout is terminal), merges it. */
  const mergeReport = async (plan: string): Promise<Pull> => {
    const pr = await waitFor(
      async () => (await pulls(`kangal-patch/staging/report/${plan}-`)).find((p) => p.state === 'open' && !p.draft),
      { timeoutMs: 120_000, description: `staging's report PR of ${plan}, ready for review` },
    );
    await merge(pr);
    return pr;
  };

  const tokenFile = (name: string): string => {
    const f = join(scratch, `${name}-token`);
    writeFileSync(f, `${staging.forge!.issueToken()}\n`, { mode: 0o600 });
    return f;
  };
  /** Production's proposal of 1.12.5, once a failure upstream marked it blocked. */
  let blocked: Pull | undefined;
  let stagingArgs: string[];
  let productionArgs: string[];
  const startStaging = (): Controller => staging.startController({ name: `staging-${Date.now()}`, args: stagingArgs });
  const startProduction = (): Controller =>
    production.startController({
      name: `production-${Date.now()}`,
      args: [...productionArgs, ...production.mirrorArgs],
    });

  before(async function () {
    const images = [FLEET, 'v1.12.5', 'v1.12.6'].map((v) => factoryImage('nocloud', v));
    [staging, production] = await Promise.all([
      startJobLab({ fleet: { nodes: 2, controlPlanes: 1, talosVersion: FLEET }, images, plansRepo: true }),
      startJobLab({ fleet: { nodes: 2, controlPlanes: 1, talosVersion: FLEET, subnet: 11 }, images }),
    ]);
    await staging.forge!.createRepo('siderolabs', 'talos', { files: { 'README.md': 'talos\n' } });
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    writeFileSync(stagingKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    mkdirSync(keysDir);
    writeFileSync(join(keysDir, 'staging.pem'), publicKey.export({ type: 'spki', format: 'pem' }));
    const common = (name: string): string[] => [
      '--cluster-name',
      name,
      '--git-path',
      `clusters/${name}`,
      '--git-token-file',
      tokenFile(name),
      '--forge',
      'github',
      '--forge-api-url',
      staging.forge!.apiUrl,
      '--releases-api-url',
      staging.forge!.apiUrl,
      '--releases-token-file',
      tokenFile(`${name}-releases`),
      '--report-min-interval',
      '1s',
    ];
    // gitArgs: the shared repository's URL and a cache directory; the flags after it override its cluster name, token and forge.
    stagingArgs = staging.gitArgs({
      pollInterval: '1s',
      extra: [...common('staging'), '--report-signing-key-file', stagingKey],
    });
    productionArgs = staging.gitArgs({
      pollInterval: '1s',
      extra: [...common('production'), '--promotion-keys-dir', keysDir],
    });
    release('v1.12.5', 10 * DAY);
  });
  after(async function () {
    await Promise.all([staging?.stop(), production?.stop()]);
    rmSync(scratch, { recursive: true, force: true });
  });

  it('staging proposes 1.12.5; production proposes nothing, says it waits for staging, and rejects a report staging did not sign', async function () {
    await staging.plans!.write('clusters/staging/nodes.yaml', template(staging.talos.endpoint, ''));
    await staging.plans!.write('clusters/production/nodes.yaml', template(production.talos.endpoint, PROMOTION));
    // Someone with push access claims staging completed 1.12.5 a day ago, signing with a key of their own.
    const forged = `apiVersion: kangalpatch.ozalp.dk/v1alpha1\nkind: RolloutReport\ncluster: staging\nplan: { name: nodes-v1-12-5, uid: x }\nphase: Completed\ntarget: { talosVersion: v1.12.5, kubernetesVersion: null }\nstartTime: "${new Date(Date.now() - DAY).toISOString()}"\ncompletionTime: "${new Date(Date.now() - DAY + 60_000).toISOString()}"\nnodes: { total: 2, completed: 2, failed: 0 }\ngroups: []\n`;
    const intruder = generateKeyPairSync('ed25519').privateKey;
    const sig = sign(
      null,
      Buffer.from(`kangal-patch-report-v1\nstatus/staging/nodes-v1-12-5.yaml\n${forged}`),
      intruder,
    ).toString('base64');
    await staging.plans!.write('status/staging/nodes-v1-12-5.yaml', forged);
    await staging.plans!.write(
      'status/staging/nodes-v1-12-5.sig',
      `kangal-patch-report-signature: v1\nsignature: ${sig}\n`,
    );
    await staging.plans!.commitAndPush('two clusters, one template each; and a forged staging report');
    stagingCtl = startStaging();
    productionCtl = startProduction();

    const stagingPr = await waitFor(async () => (await proposals('staging')).find((p) => p.state === 'open'), {
      timeoutMs: 120_000,
      description: 'staging proposes v1.12.5',
    });
    assert.equal(stagingPr.head.ref, 'kangal-patch/staging/auto-update/nodes-v1.12.5');
    const st = await waitFor(
      async () => {
        const s = await autoUpdate(production);
        return s?.promotion?.rejectedReports ? s : undefined;
      },
      { timeoutMs: 90_000, description: "production's status names the forged report" },
    );
    assert.deepEqual(
      st.promotion?.rejectedReports?.map((r) => r.file),
      ['status/staging/nodes-v1-12-5.yaml'],
    );
    assert.match(st.promotion?.rejectedReports?.[0]?.reason ?? '', /does not verify with cluster staging's key/);
    assert.equal(st.promotion?.reason, 'WaitingForPromotion');
    assert.equal(st.promotion?.version, 'v1.12.5');
    assert.deepEqual(
      st.promotion?.stages?.map((s) => [s.cluster, s.state]),
      [['staging', 'NotRolledOut']],
    );
    assert.deepEqual(await proposals('production'), [], 'production proposes nothing on a forged report');

    // The forged files go; staging's real rollout starts from its merged proposal.
    await staging.plans!.remove('status');
    await staging.plans!.commitAndPush('remove the forged report');
    await merge(stagingPr);
  });

  it('staging rolls 1.12.5 out; production waits for its merged report and the soak, then proposes 1.12.5 with the evidence', async function () {
    await staging.waitForPlan(
      'nodes-v1-12-5',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      180_000,
    );
    assert.equal((await staging.plan('nodes-v1-12-5'))?.status.phase, 'Completed');
    assert.deepEqual(await proposals('production'), [], 'nothing while the report is not in Git');
    const report = await mergeReport('nodes-v1-12-5');
    const soaking = await waitFor(
      async () => {
        const s = await autoUpdate(production);
        return s?.promotion?.stages?.[0]?.state === 'Soaking' || s?.promotion?.stages?.[0]?.state === 'Eligible'
          ? s.promotion
          : undefined;
      },
      { timeoutMs: 90_000, description: 'production sees the report and soaks' },
    );
    const eligible = Date.parse(soaking.eligibleTime ?? '');
    assert.ok(Number.isFinite(eligible), JSON.stringify(soaking));
    assert.equal(soaking.stages?.[0]?.report, 'status/staging/nodes-v1-12-5.yaml');
    assert.equal(soaking.rejectedReports, undefined, 'the signed report is accepted');

    const pr = await waitFor(async () => (await proposals('production')).find((p) => p.state === 'open'), {
      timeoutMs: 120_000,
      description: 'production proposes v1.12.5 after the soak',
    });
    assert.ok(
      Date.parse(pr.created_at) >= eligible - 1000,
      `opened ${pr.created_at}, before the soak ended at ${soaking.eligibleTime ?? ''}`,
    );
    assert.equal(pr.head.ref, 'kangal-patch/production/auto-update/nodes-v1.12.5');
    const body = pr.body ?? '';
    assert.match(body, /### Promotion evidence/);
    assert.match(
      body,
      new RegExp(
        `\\[status/staging/nodes-v1-12-5\\.yaml\\]\\(${staging.forge!.url}/acme/plans/blob/${soaking.commit ?? 'x'}/status/staging/nodes-v1-12-5\\.yaml\\)`,
      ),
      'links the report at its commit',
    );
    assert.match(
      body,
      /\| staging\/template nodes \| .* \| 2\/2 \| [^|]+ \| 0 \| [^|]+ \| [^|]+ \| [^|]+ → [^|]+ \|/,
      'nodes, duration, failures, time cordoned, soak window',
    );
    assert.match(body, new RegExp(`soaked there for ${SOAK_S}s`));
    assert.ok(report.number > 0);
    const st = await waitFor(
      async () =>
        (await autoUpdate(production))?.lastProposedVersion === 'v1.12.5' ? autoUpdate(production) : undefined,
      { timeoutMs: 30_000, description: 'production status names its proposal' },
    );
    assert.equal(st?.promotion?.reason, 'Promoted');
  });

  it('restarting both controllers changes no decision', async function () {
    const before = { staging: await proposals('staging'), production: await proposals('production') };
    await Promise.all([stagingCtl.stop(), productionCtl.stop()]);
    const restarted = Date.now();
    stagingCtl = startStaging();
    productionCtl = startProduction();
    const st = await waitFor(
      async () => {
        const s = await autoUpdate(production);
        return s?.lastCheckTime && Date.parse(s.lastCheckTime) > restarted ? s : undefined;
      },
      { timeoutMs: 90_000, description: 'production checked again after the restart' },
    );
    assert.equal(st.promotion?.reason, 'Promoted');
    await waitFor(
      async () => {
        const s = await autoUpdate(staging);
        return s?.lastCheckTime && Date.parse(s.lastCheckTime) > restarted ? s : undefined;
      },
      { timeoutMs: 90_000, description: 'staging checked again after the restart' },
    );
    const after = { staging: await proposals('staging'), production: await proposals('production') };
    assert.deepEqual(
      after.production.map((p) => [p.number, p.state, p.title]),
      before.production.map((p) => [p.number, p.state, p.title]),
    );
    assert.deepEqual(
      after.staging.map((p) => [p.number, p.state]),
      before.staging.map((p) => [p.number, p.state]),
    );
  });

  it("a failed staging rollout of 1.12.6 blocks production's open proposal", async function () {
    release('v1.12.6', 10 * DAY);
    staging.talos.faults.set('cp-1', {
      upgradeError: { code: GrpcStatus.UNKNOWN, message: 'error validating installer image: boom' },
    });
    await poke(staging);
    const next = await waitFor(
      async () => (await proposals('staging')).find((p) => p.state === 'open' && p.head.ref.endsWith('-v1.12.6')),
      { timeoutMs: 90_000, description: 'staging proposes v1.12.6' },
    );
    await merge(next);
    await staging.waitForPlan(
      'nodes-v1-12-6',
      'Failed',
      (s) => s.phase === 'Failed' || s.phase === 'Completed',
      180_000,
    );
    assert.equal((await staging.plan('nodes-v1-12-6'))?.status.phase, 'Failed');
    await mergeReport('nodes-v1-12-6');

    const open = await waitFor(
      async () => (await proposals('production')).find((p) => p.state === 'open' && /blocked/.test(p.title)),
      { timeoutMs: 90_000, description: "production's proposal marked blocked" },
    );
    assert.equal(open.head.ref, 'kangal-patch/production/auto-update/nodes-v1.12.5');
    const comments = await api<{ body: string }[]>(`/repos/acme/plans/issues/${open.number}/comments`);
    assert.ok(
      comments.some((c) => /Blocked by an upstream failure: staging.*nodes-v1-12-6.*failed/.test(c.body)),
      comments.map((c) => c.body).join('\n'),
    );
    // The status is written after the forge calls of the same check.
    const st = await waitFor(
      async () => {
        const s = await autoUpdate(production);
        return s?.promotion?.stages?.[0]?.state === 'Failed' ? s : undefined;
      },
      { timeoutMs: 30_000, description: "production's status: v1.12.6 failed on staging" },
    );
    assert.equal(st.promotion?.version, 'v1.12.6');
    assert.match(st.promotion?.stages?.[0]?.message ?? '', /error validating installer image: boom/);

    blocked = open;
  });

  it("deleting staging's failed report of 1.12.6 does not make 1.12.5 eligible again: staging's signed index refuses the withdrawal, in status", async function () {
    assert.ok(blocked, 'the blocked proposal of the previous case');
    await staging.plans!.git(['pull', '--quiet', '--ff-only', 'origin', 'main']);
    const index = await staging.plans!.git(['show', 'HEAD:status/staging/index.yaml']);
    assert.match(index, /kind: ReportIndex\ncluster: staging\nsequence: \d+\n/);
    assert.match(index, /- path: status\/staging\/nodes-v1-12-6\.yaml\n {4}sequence: \d+\n {4}sha256: [0-9a-f]{64}/);
    const recorded = (await autoUpdate(production))?.promotion?.upstreamSequence?.staging;
    assert.ok(
      recorded !== undefined && recorded >= 2,
      `production recorded staging's index sequence: ${String(recorded)}`,
    );
    // Someone with push access hides the failure: the report, its twin and its signature go.
    for (const ext of ['md', 'yaml', 'sig']) await staging.plans!.remove(`status/staging/nodes-v1-12-6.${ext}`);
    const withdrawn = (await staging.plans!.commitAndPush('status: drop the 1.12.6 report')).trim();
    const st = await promotionAt(withdrawn);
    assert.deepEqual(stageStates(st), [['staging', 'EvidenceRefused']]);
    assert.match(
      st.stages?.[0]?.message ?? '',
      /evidence refused: cluster staging: report status\/staging\/nodes-v1-12-6\.yaml listed at sequence \d+ in status\/staging\/index\.yaml \(sequence \d+\) is missing/,
    );
    assert.equal(st.reason, 'WaitingForPromotion');
    assert.deepEqual(st.upstreamSequence, { staging: recorded }, 'the recorded sequence stays');
    const open = (await proposals('production')).find((p) => p.number === blocked?.number && p.state === 'open');
    assert.match(open?.title ?? 'not open', /\(blocked: upstream failure\)$/, 'still blocked, not unblocked');
    // The report comes back (git revert): the index holds again and the failure counts as before.
    await staging.plans!.git(['revert', '--no-edit', 'HEAD']);
    await staging.plans!.git(['push', '--quiet', 'origin', 'HEAD:main']);
    const restored = (await staging.plans!.git(['rev-parse', 'HEAD'])).trim();
    const back = await promotionAt(restored);
    assert.deepEqual(stageStates(back), [['staging', 'Failed']]);
  });

  it("staging's rollback to 1.12.4 closes production's blocked proposal with the reason; production stays on 1.12.4; preview says why", async function () {
    const open = blocked;
    assert.ok(open, 'the blocked proposal of the previous case');
    // Staging's operator rolls staging back to 1.12.4 (a plan named like the template's children, so
    // the stage counts it): the blocked proposal is closed with the reason, as no skip.
    staging.talos.faults.clear('cp-1');
    await staging.plans!.git(['pull', '--quiet', '--ff-only', 'origin', 'main']);
    await staging.plans!.write('clusters/staging/nodes-v1-12-4.yaml', rollback(staging.talos.endpoint));
    await staging.plans!.commitAndPush('staging: back to v1.12.4');
    await staging.waitForPlan(
      'nodes-v1-12-4',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      180_000,
    );
    assert.equal((await staging.plan('nodes-v1-12-4'))?.status.phase, 'Completed');
    await mergeReport('nodes-v1-12-4');
    await staging.plans!.git(['pull', '--quiet', '--ff-only', 'origin', 'main']);
    const withRollback = (await staging.plans!.git(['rev-parse', 'HEAD'])).trim();
    const closed = await waitFor(
      async () => (await proposals('production')).find((p) => p.number === open.number && p.state === 'closed'),
      { timeoutMs: 90_000, description: "production's proposal closed by the rollback" },
    );
    assert.equal(closed.merged_at, null);
    assert.equal(
      closed.title,
      'KangalPatch [production]: Talos v1.12.5 for nodes (blocked: upstream failure) (rolled back upstream)',
      'both marks: it was blocked, then closed as no skip',
    );
    const why = await api<{ body: string }[]>(`/repos/acme/plans/issues/${open.number}/comments`);
    assert.ok(
      why.some((c) =>
        /KangalPatch closed this proposal: staging\/template nodes rolled back from v1\.12\.5 to v1\.12\.4 \(status\/staging\/nodes-v1-12-4\.yaml\).*v1\.12\.5 is no longer proven upstream/.test(
          c.body,
        ),
      ),
      why.map((c) => c.body).join('\n'),
    );
    assert.equal(
      why.filter((c) => /Blocked by an upstream failure/.test(c.body)).length,
      1,
      'marked blocked once, not again at each later commit',
    );
    const after = await waitFor(
      async () => {
        const s = await autoUpdate(production);
        return s?.promotion?.commit === withRollback ? s : undefined;
      },
      {
        timeoutMs: 30_000,
        description: `production's status read from ${withRollback}, where staging's rollback report is`,
      },
    );
    assert.deepEqual(
      stageStates(after.promotion),
      [['staging', 'Failed']],
      'v1.12.6, the newest, still failed upstream',
    );
    assert.equal(after.currentVersion, FLEET);
    assert.equal(after.promotion?.reason, 'WaitingForPromotion');
    assert.ok(!(after.skippedVersions ?? []).includes('v1.12.5'), 'closed by KangalPatch, not skipped by a human');
    assert.deepEqual(
      (await proposals('production')).map((p) => [p.head.ref, p.state]),
      [['kangal-patch/production/auto-update/nodes-v1.12.5', 'closed']],
      'nothing else proposed',
    );
    // The lab's independent observer: production's nodes never left 1.12.4 and were never cordoned.
    for (const node of ['cp-1', 'worker-1']) {
      const seen = production.observer.node(node);
      assert.match(seen?.osImage ?? '', /v1\.12\.4/, `${node} runs ${seen?.osImage ?? '?'}`);
      assert.equal(seen?.unschedulable, false, `${node} uncordoned`);
    }
    assert.equal(await production.plan('nodes-v1-12-5'), undefined, 'no child plan on production');

    // `kangal-patch preview` on production's template, from a checkout of the repository: nothing to
    // propose, why not v1.12.5 (staging rolled it back) and why not v1.12.6 (staging's rollout of it failed).
    await staging.plans!.git(['pull', '--quiet', '--ff-only', 'origin', 'main']);
    const preview = await runCli([
      'preview',
      join(staging.plans!.dir, 'clusters/production/nodes.yaml'),
      '--kubeconfig',
      production.cluster.kubeconfigPath,
      '--releases-api-url',
      staging.forge!.apiUrl,
      '--releases-token-file',
      tokenFile('preview'),
      '--promotion-keys-dir',
      keysDir,
    ]);
    assert.equal(preview.code, 0, preview.err);
    assert.match(preview.out, /current Talos \(lowest on the selected nodes\): v1\.12\.4/);
    assert.match(preview.out, /would propose now: nothing/);
    assert.match(
      preview.out,
      /v1\.12\.5 +NotPromoted +not yet promoted: staging\/template nodes RolledBack \(staging\/template nodes rolled back from v1\.12\.5 to v1\.12\.4/,
    );
    assert.match(
      preview.out,
      /v1\.12\.6 +NotPromoted +not yet promoted: staging\/template nodes Failed .*error validating installer image: boom/,
    );
  });
});
