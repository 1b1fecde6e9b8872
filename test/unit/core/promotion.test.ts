// Promotion across clusters (controller/core/promotion): a version's verdict per upstream stage from
// its reports, the soak, later failures and rollbacks; the auto-update decision gated by it.
import assert from 'node:assert/strict';
import { autoUpdateSpec, promotionSpec } from '../../../schemas/target.js';
import { promotionStatus } from '../../../schemas/patchplan.js';
import { decideAutoUpdate } from '../../../controller/core/auto-update/decide.js';
import { explainTemplate } from '../../../controller/core/auto-update/explain.js';
import type { Release } from '../../../controller/core/auto-update/releases.js';
import { statusAfterCheck } from '../../../controller/core/auto-update/status.js';
import { decidePromotion, proposalFate, versionVerdict } from '../../../controller/core/promotion/decide.js';
import { reportsOfStage, stageVerdict } from '../../../controller/core/promotion/stage.js';
import type { UpstreamReport } from '../../../controller/core/promotion/types.js';

const M = 60_000;
const H = 60 * M;
const T0 = Date.parse('2026-12-05T10:00:00Z');
const SOAK = '24h';

const report = (
  plan: string,
  version: string | undefined,
  start: number,
  more: Partial<UpstreamReport> = {},
): UpstreamReport => ({
  file: `status/${more.cluster ?? 'staging'}/${plan}.yaml`,
  cluster: 'staging',
  plan,
  phase: 'Completed',
  talosVersion: version,
  kubernetesVersion: undefined,
  startTime: start,
  completionTime: start + 20 * M,
  nodes: { total: 3, completed: 3, failed: 0 },
  cordonedSeconds: 90,
  failures: [],
  ...more,
});
const failed = (plan: string, version: string, start: number): UpstreamReport =>
  report(plan, version, start, {
    phase: 'Failed',
    nodes: { total: 3, completed: 1, failed: 1 },
    failures: ['w1: booted its old partition'],
  });
const spec = (more: Record<string, unknown> = {}) =>
  promotionSpec.parse({ after: [{ cluster: 'staging' }], soak: SOAK, ...more });
const STAGE = { cluster: 'staging' };

describe('core/promotion: stage verdicts', function () {
  const done = T0 + 20 * M;
  const cases: {
    name: string;
    reports: UpstreamReport[];
    now: number;
    state: string;
    eligibleAt?: number;
    match: RegExp;
  }[] = [
    {
      name: 'no report of the version: NotRolledOut',
      reports: [report('a', 'v1.12.4', T0)],
      now: T0 + 48 * H,
      state: 'NotRolledOut',
      match: /no rollout report of v1\.12\.5/,
    },
    {
      name: 'a report still running: InProgress',
      reports: [report('a', 'v1.12.5', T0, { phase: 'InProgress', completionTime: undefined })],
      now: T0 + H,
      state: 'InProgress',
      match: /is InProgress, not Completed/,
    },
    {
      name: 'a failed rollout of the version: Failed, with the node failure',
      reports: [failed('a', 'v1.12.5', T0)],
      now: T0 + 48 * H,
      state: 'Failed',
      match: /failed: w1: booted its old partition/,
    },
    {
      name: 'Completed but a node failed (Continue policy): not evidence',
      reports: [
        report('a', 'v1.12.5', T0, { nodes: { total: 3, completed: 2, failed: 1 }, failures: ['w2: timeout'] }),
      ],
      now: T0 + 48 * H,
      state: 'Failed',
      match: /w2: timeout/,
    },
    {
      name: 'completed, soak not over: Soaking until completion + soak',
      reports: [report('a', 'v1.12.5', T0)],
      now: done + 23 * H,
      state: 'Soaking',
      eligibleAt: done + 24 * H,
      match: /soaking until 2026-12-06T10:20:00\.000Z/,
    },
    {
      name: 'completed and soaked: Eligible at exactly completion + soak',
      reports: [report('a', 'v1.12.5', T0)],
      now: done + 24 * H,
      state: 'Eligible',
      eligibleAt: done + 24 * H,
      match: /completed v1\.12\.5/,
    },
    {
      name: 'a later rollout of another version inside the soak: SoakInterrupted',
      reports: [report('a', 'v1.12.5', T0), report('b', 'v1.12.6', T0 + 2 * H)],
      now: T0 + 48 * H,
      state: 'SoakInterrupted',
      match: /moved from v1\.12\.5 to v1\.12\.6/,
    },
    {
      name: 'a later rollout of another version after the soak: still Eligible',
      reports: [report('a', 'v1.12.5', T0), report('b', 'v1.12.6', T0 + 30 * H)],
      now: T0 + 48 * H,
      state: 'Eligible',
      eligibleAt: done + 24 * H,
      match: /soaked/,
    },
    {
      name: 'a later Kubernetes-only rollout inside the soak: not moving off Talos',
      reports: [report('a', 'v1.12.5', T0), report('k', undefined, T0 + 2 * H, { kubernetesVersion: 'v1.34.2' })],
      now: T0 + 48 * H,
      state: 'Eligible',
      eligibleAt: done + 24 * H,
      match: /soaked/,
    },
    {
      name: 'a later failed rollout (of a newer version): LaterFailure',
      reports: [report('a', 'v1.12.5', T0), failed('b', 'v1.12.6', T0 + 30 * H)],
      now: T0 + 48 * H,
      state: 'LaterFailure',
      match: /later rollout \(b, v1\.12\.6.*failed after v1\.12\.5 completed: w1: booted/,
    },
    {
      name: 'a later failure followed by a clean rollout: the failure no longer holds',
      reports: [report('a', 'v1.12.5', T0), failed('b', 'v1.12.6', T0 + 30 * H), report('c', 'v1.12.6', T0 + 40 * H)],
      now: T0 + 48 * H,
      state: 'Eligible',
      eligibleAt: done + 24 * H,
      match: /soaked/,
    },
    {
      name: 'a later rollout to a lower version: RolledBack',
      reports: [report('a', 'v1.12.5', T0), report('back', 'v1.12.4', T0 + 30 * H)],
      now: T0 + 48 * H,
      state: 'RolledBack',
      match: /rolled back from v1\.12\.5 to v1\.12\.4/,
    },
    {
      name: 'a failure before a clean rollout of the version does not count against it',
      reports: [failed('a', 'v1.12.5', T0 - 5 * H), report('a2', 'v1.12.5', T0)],
      now: T0 + 48 * H,
      state: 'Eligible',
      eligibleAt: done + 24 * H,
      match: /soaked/,
    },
    {
      name: "another cluster's report is not this stage's evidence",
      reports: [report('a', 'v1.12.5', T0, { cluster: 'lab' })],
      now: T0 + 48 * H,
      state: 'NotRolledOut',
      match: /staging has no rollout report/,
    },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const v = stageVerdict(STAGE, c.reports, { version: 'v1.12.5', soakMs: 24 * H, now: c.now });
      assert.equal(v.state, c.state, v.message);
      assert.equal(v.eligibleAt, c.eligibleAt);
      assert.match(v.message, c.match);
    });
  }

  it("a stage naming a template counts only that template's child plans; one naming a plan only that plan", function () {
    const reports = [
      report('nodes-v1-12-5', 'v1.12.5', T0),
      report('other-v1-12-5', 'v1.12.5', T0),
      report('pinned', 'v1.12.5', T0),
    ];
    assert.deepEqual(
      reportsOfStage({ cluster: 'staging', template: 'nodes' }, reports).map((r) => r.plan),
      ['nodes-v1-12-5'],
    );
    assert.deepEqual(
      reportsOfStage({ cluster: 'staging', plan: 'pinned' }, reports).map((r) => r.plan),
      ['pinned'],
    );
    assert.equal(reportsOfStage(STAGE, reports).length, 3);
  });
});

describe('core/promotion: versions, status and open proposals', function () {
  const two = spec({ after: [{ cluster: 'staging' }, { cluster: 'lab' }], soak: '1h' });
  const reports = [
    report('a', 'v1.12.5', T0),
    report('a', 'v1.12.5', T0 + 30 * M, { cluster: 'lab', file: 'status/lab/a.yaml' }),
  ];

  it("a version is eligible when the last stage's soak ends (the max over stages)", function () {
    const v = versionVerdict({ now: T0, spec: two, reports }, 'v1.12.5');
    assert.equal(v.eligibleAt, T0 + 50 * M + H);
  });

  it('one stage missing: not eligible until Git changes, and the status names the missing stage', function () {
    const out = decidePromotion({
      now: T0 + 5 * H,
      spec: two,
      versions: ['v1.12.5', 'v1.12.6'],
      reports,
      rejected: [{ file: 'status/staging/forged.yaml', reason: 'no signature' }],
      commit: 'c0ffee',
    });
    assert.deepEqual(
      out.verdicts.map((v) => [v.version, v.eligibleAt]),
      [
        ['v1.12.6', undefined],
        ['v1.12.5', T0 + 50 * M + H],
      ],
    );
    assert.equal(out.status.reason, 'WaitingForPromotion');
    assert.equal(out.status.version, 'v1.12.6');
    assert.equal(out.status.eligibleTime, undefined);
    assert.deepEqual(
      out.status.stages?.map((s) => [s.cluster, s.state]),
      [
        ['staging', 'NotRolledOut'],
        ['lab', 'NotRolledOut'],
      ],
    );
    assert.deepEqual(out.status.rejectedReports, [{ file: 'status/staging/forged.yaml', reason: 'no signature' }]);
    assert.equal(out.status.commit, 'c0ffee');
  });

  it('lists at most 20 rejected reports, then "and N more"', function () {
    const rejected = Array.from({ length: 2500 }, (_, i) => ({
      file: `status/staging/forged-${i}.yaml`,
      reason: 'no signature',
    }));
    const out = decidePromotion({ now: T0, spec: two, versions: ['v1.12.5'], reports, rejected, commit: 'c0ffee' });
    assert.equal(out.status.rejectedReports?.length, 20);
    assert.deepEqual(out.status.rejectedReports?.at(-1), {
      file: 'status/staging/forged-19.yaml',
      reason: 'no signature',
    });
    assert.equal(out.status.moreRejectedReports, 2480);
    assert.equal(promotionStatus.safeParse(out.status).success, true, 'within the schema');
    const few = decidePromotion({
      now: T0,
      spec: two,
      versions: ['v1.12.5'],
      reports,
      rejected: rejected.slice(0, 20),
      commit: 'c0ffee',
    });
    assert.equal(few.status.rejectedReports?.length, 20);
    assert.equal(few.status.moreRejectedReports, undefined);
  });

  it('soaking: the status carries the exact eligible time; once past it, Promoted', function () {
    const soaking = decidePromotion({
      now: T0 + H,
      spec: two,
      versions: ['v1.12.5'],
      reports,
      rejected: [],
      commit: undefined,
    });
    assert.equal(soaking.status.reason, 'WaitingForPromotion');
    assert.equal(soaking.status.eligibleTime, new Date(T0 + 50 * M + H).toISOString());
    assert.deepEqual(
      soaking.status.stages?.map((s) => s.state),
      ['Soaking', 'Soaking'],
    );
    const done = decidePromotion({
      now: T0 + 50 * M + H,
      spec: two,
      versions: ['v1.12.5'],
      reports,
      rejected: [],
      commit: undefined,
    });
    assert.equal(done.status.reason, 'Promoted');
    assert.deepEqual(
      done.status.stages?.map((s) => [s.state, s.report]),
      [
        ['Eligible', 'status/staging/a.yaml'],
        ['Eligible', 'status/lab/a.yaml'],
      ],
    );
  });

  it('an open proposal: blocked by a later failure (once), unblocked after a clean rollout, closed by a rollback', function () {
    const s = spec();
    const base = [report('a', 'v1.12.5', T0)];
    const ok = versionVerdict({ now: T0 + 48 * H, spec: s, reports: base }, 'v1.12.5');
    assert.equal(proposalFate(ok, false).type, 'keep');
    assert.equal(proposalFate(ok, true).type, 'unblock');
    const bad = versionVerdict(
      { now: T0 + 48 * H, spec: s, reports: [...base, failed('b', 'v1.12.6', T0 + 30 * H)] },
      'v1.12.5',
    );
    const fate = proposalFate(bad, false);
    assert.equal(fate.type, 'block');
    assert.equal(fate.type === 'block' ? fate.because.culprit?.plan : undefined, 'b');
    assert.equal(proposalFate(bad, true).type, 'keep');
    const back = versionVerdict(
      { now: T0 + 48 * H, spec: s, reports: [...base, report('back', 'v1.12.4', T0 + 30 * H)] },
      'v1.12.5',
    );
    assert.equal(proposalFate(back, true).type, 'close');
  });
});

describe('core/promotion: the auto-update decision gated by promotion', function () {
  const rel = (tagName: string, ageHours: number): Release => ({
    tagName,
    draft: false,
    prerelease: false,
    publishedAt: T0 - ageHours * H,
    htmlUrl: `https://example/${tagName}`,
  });
  const feed = [rel('v1.12.6', 10), rel('v1.12.5', 100)];
  const auto = autoUpdateSpec.parse({
    enabled: true,
    allow: 'patch',
    checkInterval: '1h',
    minReleaseAge: '0s',
    promotion: { after: [{ cluster: 'staging' }], soak: '24h' },
  });
  const decide = (gate: Map<string, number | undefined>) =>
    decideAutoUpdate({
      now: T0,
      spec: auto,
      installerSource: 'factory',
      currentVersion: 'v1.12.4',
      releases: feed,
      skippedVersions: [],
      children: [],
      promotionGate: gate,
    });

  it('nothing promoted: no proposal, WaitingForPromotion, next wake at the next check', function () {
    const d = decide(new Map());
    assert.equal(d.action.type, 'none');
    assert.equal(d.reason, 'WaitingForPromotion');
    assert.match(d.message, /v1\.12\.6 is not yet promoted/);
    assert.equal(d.nextWakeAt, T0 + H);
  });

  it('soaking upstream: wake exactly at the eligible time when it comes before the next check', function () {
    const d = decide(new Map([['v1.12.5', T0 + 20 * M]]));
    assert.equal(d.reason, 'WaitingForPromotion');
    assert.equal(d.pending?.heldBy, 'promotion');
    assert.equal(d.nextWakeAt, T0 + 20 * M);
    assert.match(d.message, /v1\.12\.5 soaks upstream until 2026-12-05T10:20:00\.000Z/);
    const status = statusAfterCheck(undefined, d, { now: T0, skippedVersions: [] });
    assert.equal(status.pendingHeldBy, 'Promotion', 'the status says the soak holds it, not its age');
    assert.equal(status.pendingEligibleTime, '2026-12-05T10:20:00.000Z');
  });

  it('promoted: proposes it, never the newer unpromoted one', function () {
    const d = decide(
      new Map([
        ['v1.12.5', T0 - M],
        ['v1.12.6', undefined],
      ]),
    );
    assert.equal(d.action.type === 'propose' ? d.action.proposal.version : d.action.type, 'v1.12.5');
  });
});

describe('core/auto-update: explainTemplate (kangal-patch preview on a template)', function () {
  const rel = (tagName: string, ageHours: number): Release => ({
    tagName,
    draft: false,
    prerelease: false,
    publishedAt: T0 - ageHours * H,
    htmlUrl: `https://example/${tagName}`,
  });
  const feed = [rel('v1.13.0', 500), rel('v1.12.7', 1), rel('v1.12.6', 100), rel('v1.12.5', 100)];
  const auto = autoUpdateSpec.parse({
    enabled: true,
    allow: 'patch',
    checkInterval: '1h',
    minReleaseAge: '24h',
    promotion: { after: [{ cluster: 'staging' }], soak: '24h' },
  });

  it('what it would propose now, and for each newer release why not', function () {
    const reports = [report('a', 'v1.12.5', T0 - 60 * H), report('b', 'v1.12.6', T0 - 10 * H)];
    const verdicts = ['v1.12.7', 'v1.12.6', 'v1.12.5'].map((v) =>
      versionVerdict({ now: T0, spec: auto.promotion!, reports }, v),
    );
    const e = explainTemplate(
      {
        now: T0,
        spec: auto,
        installerSource: 'factory',
        currentVersion: 'v1.12.4',
        releases: feed,
        skippedVersions: [],
        children: [],
      },
      verdicts,
    );
    assert.equal(e.proposal, 'v1.12.5');
    assert.deepEqual(
      e.versions.map((v) => [v.version, v.state]),
      [
        ['v1.13.0', 'NotAllowedStep'],
        ['v1.12.7', 'TooYoung'],
        ['v1.12.6', 'SoakingUpstream'],
        ['v1.12.5', 'Proposed'],
      ],
    );
    assert.match(e.versions[2]?.message ?? '', /soaking upstream until 2026-12-06T00:20:00\.000Z/);
    const none = explainTemplate(
      {
        now: T0,
        spec: auto,
        installerSource: 'factory',
        currentVersion: 'v1.12.4',
        releases: feed,
        skippedVersions: [],
        children: [],
      },
      ['v1.12.7', 'v1.12.6', 'v1.12.5'].map((v) => versionVerdict({ now: T0, spec: auto.promotion!, reports: [] }, v)),
    );
    assert.equal(none.proposal, undefined);
    assert.match(
      none.versions.find((v) => v.version === 'v1.12.5')?.message ?? '',
      /not yet promoted: staging NotRolledOut/,
    );
  });
});
