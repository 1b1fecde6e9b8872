// The auto-update decision (controller/core/auto-update), table-driven with a fixed clock.
import assert from 'node:assert/strict';
import { autoUpdateSpec } from '../../../schemas/target.js';
import { allowedStep, decideAutoUpdate, type AutoUpdateInput } from '../../../controller/core/auto-update/decide.js';
import { lowestVersion, stableReleases, type Release } from '../../../controller/core/auto-update/releases.js';

const H = 3_600_000;
const T0 = Date.parse('2026-12-05T10:00:00Z');
const rel = (tagName: string, ageHours: number, more: Partial<Release> = {}): Release => ({
  tagName,
  draft: false,
  prerelease: false,
  publishedAt: T0 - ageHours * H,
  htmlUrl: `https://github.com/siderolabs/talos/releases/tag/${tagName}`,
  ...more,
});
// The scenario: a 1.13.2 fleet; 1.13.3 old enough, 1.13.4 too young (72h), 1.14.0 old enough.
const FEED: Release[] = [
  rel('v1.14.0', 200),
  rel('v1.13.4', 10),
  rel('v1.13.3', 100),
  rel('v1.13.2', 900),
  rel('v1.15.0', 500),
  rel('v1.14.1-beta.0', 100, { prerelease: true }),
  rel('v1.14.9', 100, { draft: true, publishedAt: undefined }),
];
const spec = (allow: 'patch' | 'minor', more: Record<string, unknown> = {}) =>
  autoUpdateSpec.parse({ enabled: true, allow, checkInterval: '1h', minReleaseAge: '72h', ...more });
const input = (more: Partial<AutoUpdateInput>): AutoUpdateInput => ({
  now: T0,
  spec: spec('patch'),
  installerSource: 'factory',
  currentVersion: 'v1.13.2',
  releases: FEED,
  skippedVersions: [],
  children: [],
  ...more,
});

describe('core/auto-update: decideAutoUpdate', function () {
  const cases: {
    name: string;
    in: Partial<AutoUpdateInput>;
    action: string;
    version?: string;
    reason: string;
    pending?: string;
    wake: number;
  }[] = [
    {
      name: 'allow patch: the highest eligible patch; the younger one pending, wake at its eligibility if before the next check',
      in: {},
      action: 'propose',
      version: 'v1.13.3',
      reason: 'Proposed',
      pending: 'v1.13.4',
      wake: T0 + H,
    },
    {
      name: 'allow patch, 1h check: eligibility of 1.13.4 (62h away) is after the next check',
      in: { spec: spec('patch', { checkInterval: '100h' }) },
      action: 'propose',
      version: 'v1.13.3',
      reason: 'Proposed',
      pending: 'v1.13.4',
      wake: T0 + 62 * H,
    },
    {
      name: 'allow patch, once 1.13.4 is old enough: it is the proposal',
      in: { now: T0 + 62 * H, checkedAt: T0 + 62 * H },
      action: 'propose',
      version: 'v1.13.4',
      reason: 'Proposed',
      wake: T0 + 63 * H,
    },
    {
      name: 'allow minor: the next minor wins, 1.15 is never skipped to, the younger patch below it is not pending',
      in: { spec: spec('minor') },
      action: 'propose',
      version: 'v1.14.0',
      reason: 'Proposed',
      wake: T0 + H,
    },
    {
      name: 'allow minor on a stepwise template: the newest eligible release of any newer minor (1.15.0), its child walking 1.14 on the way',
      in: { spec: spec('minor'), stepwise: true },
      action: 'propose',
      version: 'v1.15.0',
      reason: 'Proposed',
      wake: T0 + H,
    },
    {
      name: 'allow minor, minReleaseAge 0: still never 1.15',
      in: { spec: spec('minor', { minReleaseAge: '0s' }) },
      action: 'propose',
      version: 'v1.14.0',
      reason: 'Proposed',
      wake: T0 + H,
    },
    {
      name: 'a skipped version is not proposed again; the next lower one is',
      in: { skippedVersions: ['v1.13.3'] },
      action: 'none',
      reason: 'ReleaseTooYoung',
      pending: 'v1.13.4',
      wake: T0 + H,
    },
    {
      name: 'skipping 1.14.0 with allow minor falls back to the best patch',
      in: { spec: spec('minor'), skippedVersions: ['v1.14.0'] },
      action: 'propose',
      version: 'v1.13.3',
      reason: 'Proposed',
      pending: 'v1.13.4',
      wake: T0 + H,
    },
    {
      name: 'an open proposal for the same version stays',
      in: { openProposal: { version: 'v1.13.3', url: 'https://x/pr/1' } },
      action: 'none',
      reason: 'ProposalOpen',
      pending: 'v1.13.4',
      wake: T0 + H,
    },
    {
      name: 'a newer eligible version supersedes the open proposal',
      in: { now: T0 + 70 * H, checkedAt: T0 + 70 * H, openProposal: { version: 'v1.13.3' } },
      action: 'supersede',
      version: 'v1.13.4',
      reason: 'Superseded',
      wake: T0 + 71 * H,
    },
    {
      name: 'a child plan not Completed blocks new proposals',
      in: { children: [{ name: 'prod-v1-13-3', version: 'v1.13.3', phase: 'InProgress' }] },
      action: 'none',
      reason: 'ChildNotCompleted',
      wake: T0 + H,
    },
    {
      name: 'a Failed child blocks too',
      in: { children: [{ name: 'prod-v1-13-3', version: 'v1.13.3', phase: 'Failed' }] },
      action: 'none',
      reason: 'ChildNotCompleted',
      wake: T0 + H,
    },
    {
      name: 'a Completed child: its version is not proposed again',
      in: { children: [{ name: 'prod-v1-13-3', version: 'v1.13.3', phase: 'Completed' }] },
      action: 'none',
      reason: 'ReleaseTooYoung',
      pending: 'v1.13.4',
      wake: T0 + H,
    },
    {
      name: 'current on the newest allowed: up to date',
      in: { currentVersion: 'v1.13.4' },
      action: 'none',
      reason: 'UpToDate',
      wake: T0 + H,
    },
    {
      name: 'no current version: nothing',
      in: { currentVersion: undefined },
      action: 'none',
      reason: 'NoCurrentVersion',
      wake: T0 + H,
    },
    {
      name: 'checkedAt earlier than now: the next check counts from it',
      in: { checkedAt: T0 - 30 * 60_000 },
      action: 'propose',
      version: 'v1.13.3',
      reason: 'Proposed',
      pending: 'v1.13.4',
      wake: T0 + 30 * 60_000,
    },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const d = decideAutoUpdate(input(c.in));
      assert.equal(d.action.type, c.action, d.message);
      assert.equal(d.action.type === 'none' ? undefined : d.action.proposal.version, c.version);
      assert.equal(d.reason, c.reason);
      assert.equal(d.pending?.version, c.pending);
      assert.equal(d.nextWakeAt, c.wake);
      assert.equal(d.latestVersion, 'v1.15.0');
    });
  }

  it('pending carries the time the version becomes eligible; the step says patch or minor', function () {
    const d = decideAutoUpdate(input({}));
    assert.equal(d.pending?.eligibleAt, T0 - 10 * H + 72 * H);
    assert.match(d.message, /v1\.13\.4 is younger than minReleaseAge 72h until 2026-12-08T00:00:00\.000Z/);
    const m = decideAutoUpdate(input({ spec: spec('minor') }));
    assert.equal(m.action.type === 'propose' ? m.action.proposal.step : undefined, 'minor');
    assert.equal(
      m.action.type === 'propose' ? m.action.proposal.release.htmlUrl : undefined,
      'https://github.com/siderolabs/talos/releases/tag/v1.14.0',
    );
    const b = decideAutoUpdate(input({ children: [{ name: 'c', version: 'v1.13.3', phase: 'Failed' }] }));
    assert.equal(b.blockedBy?.name, 'c');
    assert.match(b.message, /child plan c \(v1\.13\.3\) is Failed, not Completed/);
  });
});

describe('core/auto-update: a ghcr template and Talos 1.14', function () {
  it('is never proposed a release ghcr publishes no installer for; the up-to-date message says why and what to set', function () {
    const d = decideAutoUpdate(
      input({ spec: spec('minor', { minReleaseAge: '0s' }), installerSource: 'ghcr', currentVersion: 'v1.13.4' }),
    );
    assert.equal(d.action.type, 'none', d.message);
    assert.equal(d.reason, 'UpToDate');
    assert.match(
      d.message,
      /v1\.14\.0 is not proposed: ghcr\.io\/siderolabs\/installer is not published from Talos 1\.14, set target\.source: factory/,
    );
  });

  it('still gets the patches of its own minor, and the same template on factory gets 1.14', function () {
    const ghcr = decideAutoUpdate(input({ spec: spec('minor', { minReleaseAge: '0s' }), installerSource: 'ghcr' }));
    assert.equal(ghcr.action.type === 'propose' ? ghcr.action.proposal.version : undefined, 'v1.13.4', ghcr.message);
    const factory = decideAutoUpdate(
      input({ spec: spec('minor', { minReleaseAge: '0s' }), installerSource: 'factory' }),
    );
    assert.equal(
      factory.action.type === 'propose' ? factory.action.proposal.version : undefined,
      'v1.14.0',
      factory.message,
    );
  });
});

describe('core/auto-update: releases and steps', function () {
  it('stable releases only: no drafts, pre-releases, unpublished or odd tags', function () {
    const odd = [
      rel('v1.14.1-rc.1', 1),
      rel('1.14.2', 1),
      rel('v1.14.03', 1),
      rel('v1.14.4+build', 1),
      rel('v1.14', 1),
      rel('talos-v1.14.5', 1),
      rel('v1.14.6', 1, { publishedAt: undefined }),
    ];
    assert.deepEqual(
      stableReleases([...FEED, ...odd]).map((r) => r.tagName),
      ['v1.15.0', 'v1.14.0', 'v1.13.4', 'v1.13.3', 'v1.13.2'],
    );
  });

  const steps: [string, string, 'patch' | 'minor', string | undefined][] = [
    ['v1.13.2', 'v1.13.3', 'patch', 'patch'],
    ['v1.13.2', 'v1.14.0', 'patch', undefined],
    ['v1.13.2', 'v1.14.0', 'minor', 'minor'],
    ['v1.13.2', 'v1.15.0', 'minor', undefined],
    ['v1.13.2', 'v2.0.0', 'minor', undefined],
    ['v1.13.2', 'v1.13.2', 'minor', undefined],
    ['v1.13.2', 'v1.13.1', 'patch', undefined],
    ['v1.9.5', 'v1.10.0', 'minor', 'minor'],
  ];
  for (const [from, to, allow, step] of steps) {
    it(`${from} → ${to} with allow ${allow}: ${step ?? 'not allowed'}`, function () {
      assert.equal(allowedStep(from, to, { allow }), step);
    });
  }

  it('a stepwise template (target.path: stepwise) with allow minor may take any newer minor of the major, its child walking the path; allow patch stays a patch', function () {
    assert.equal(allowedStep('v1.11.5', 'v1.13.2', { allow: 'minor', stepwise: true }), 'minor');
    assert.equal(allowedStep('v1.11.5', 'v1.13.2', { allow: 'minor' }), undefined);
    assert.equal(allowedStep('v1.11.5', 'v1.13.2', { allow: 'patch', stepwise: true }), undefined);
    assert.equal(allowedStep('v1.11.5', 'v2.0.0', { allow: 'minor', stepwise: true }), undefined);
  });

  it('the current version is the lowest across nodes (semver, not text)', function () {
    assert.equal(lowestVersion(['v1.13.10', 'v1.13.9', undefined, 'garbage', 'v1.14.0']), 'v1.13.9');
    assert.equal(lowestVersion([undefined]), undefined);
  });
});

describe('core/auto-update: status.autoUpdate', function () {
  it('a check records current, latest, pending with its time, the proposal and skipped versions; an error keeps them', async function () {
    const { statusAfterCheck, statusAfterError } = await import('../../../controller/core/auto-update/status.js');
    const { patchPlanStatus } = await import('../../../schemas/patchplan.js');
    const d = decideAutoUpdate(input({ skippedVersions: ['v1.13.1'] }));
    const s = statusAfterCheck(
      { lastError: { reason: 'NetworkError', message: 'x', time: new Date(T0).toISOString() } },
      d,
      { now: T0, skippedVersions: ['v1.13.1'], proposal: { version: 'v1.13.3', url: 'https://forge/pull/7' } },
    );
    assert.deepEqual(s, {
      lastCheckTime: '2026-12-05T10:00:00.000Z',
      nextCheckTime: '2026-12-05T11:00:00.000Z',
      currentVersion: 'v1.13.2',
      latestVersion: 'v1.15.0',
      pendingVersion: 'v1.13.4',
      pendingEligibleTime: '2026-12-08T00:00:00.000Z',
      pendingHeldBy: 'MinReleaseAge',
      lastProposedVersion: 'v1.13.3',
      lastProposalURL: 'https://forge/pull/7',
      skippedVersions: ['v1.13.1'],
    });
    const e = statusAfterError(
      s,
      { reason: 'RateLimited', message: 'rate limit exhausted until …' },
      T0 + H,
      T0 + 2 * H,
    );
    assert.equal(e.lastError?.reason, 'RateLimited');
    assert.equal(e.nextCheckTime, '2026-12-05T12:00:00.000Z');
    assert.equal(e.lastProposedVersion, 'v1.13.3');
    const blocked = statusAfterCheck(
      s,
      decideAutoUpdate(input({ children: [{ name: 'c', version: 'v1.13.3', phase: 'Failed' }] })),
      { now: T0, skippedVersions: [] },
    );
    assert.deepEqual(blocked.blockedBy, { name: 'c', version: 'v1.13.3', phase: 'Failed' });
    assert.equal(blocked.pendingVersion, undefined);
    for (const status of [s, e, blocked])
      assert.ok(patchPlanStatus.safeParse({ autoUpdate: status }).success, 'valid under the schema');
  });
});
