// The status view (controller/core/status-view): a pure function of plan, job and node views and a
// fixed clock. Content checks per plan (bars, counts, sentences, times in two zones, the summary
// table, the JSON document), every line within the width, and snapshots of text, wide and json for
// the five plans at 60 and 160 columns in status-view.snapshots.ts (UPDATE_SNAPSHOTS=1 rewrites it).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import {
  changedFacts,
  facts,
  fitHeight,
  missingPlans,
  renderStatus,
  sameStatus,
  statusDocument,
  watchOutcome,
  type OutputFormat,
  type StatusDocument,
  type StatusInput,
} from '../../../controller/core/status-view/index.js';
import { bar } from '../../../controller/core/status-view/bars.js';
import { wrapParts } from '../../../controller/core/status-view/fit.js';
import { instant } from '../../../controller/core/status-view/time-text.js';
import {
  ALL,
  at,
  cluster,
  completed,
  failed,
  held,
  only,
  paused,
  running,
  T0,
  template,
} from './status-view-fixtures.js';
import { SNAPSHOTS } from './status-view.snapshots.js';

const BERLIN = 'Europe/Berlin';
/** The viewer's clock and zone: the fixtures' Tuesday in Berlin unless a test says otherwise. */
interface Viewer {
  nowMs?: number;
  zone?: string;
}
const render = (
  input: StatusInput,
  format: OutputFormat,
  width: number,
  { nowMs = T0, zone = BERLIN }: Viewer = {},
): string => renderStatus(statusDocument(input, nowMs), format, { width, zone, nowMs });
const lines = (input: StatusInput, format: OutputFormat, width: number, nowMs = T0): string[] =>
  render(input, format, width, { nowMs }).trimEnd().split('\n');
const doc = (input: StatusInput, nowMs = T0): StatusDocument => statusDocument(input, nowMs);

describe('core/status-view', function () {
  describe('times', function () {
    it("an instant in the viewer's zone and in UTC, and from now; a UTC viewer sees UTC once; another day gets its date (UTC too when its day differs)", function () {
      assert.equal(instant(T0 + 250_000, T0, BERLIN), '11:04:10 GMT+1 (10:04:10 UTC, in 4m10s)');
      assert.equal(instant(T0 + 250_000, T0, 'UTC'), '10:04:10 UTC (in 4m10s)');
      assert.equal(instant(T0 - 3_600_000, T0, 'America/New_York'), '04:00:00 EST (09:00:00 UTC, 1h00m ago)');
      assert.equal(instant(T0 + 86_400_000, T0, BERLIN), '2026-12-02 11:00:00 GMT+1 (10:00:00 UTC, in 1d00h)');
      assert.equal(
        instant(Date.parse('2026-12-01T23:30:00Z'), T0, BERLIN),
        '2026-12-02 00:30:00 GMT+1 (2026-12-01 23:30:00 UTC, in 13h30m)',
      );
      assert.equal(instant(T0, T0, 'Not/AZone'), '10:00:00 UTC (now)', 'an unknown zone falls back to UTC');
    });
  });

  describe('every plan, text and wide, 60 and 160 columns', function () {
    for (const [name, p] of Object.entries(ALL)) {
      for (const format of ['text', 'wide'] as const) {
        for (const width of [60, 160]) {
          it(`${name}, ${format}, ${width}: no line is longer than the width, and it matches its snapshot`, function () {
            const out = lines(only(p), format, width);
            const long = out.filter((l) => l.length > width);
            assert.deepEqual(long, []);
            assert.ok(out[0]?.startsWith(`PatchPlan ${p.plan.name}  ${p.plan.status.phase ?? ''}`), out[0]);
            checkSnapshot(`${name} ${format} ${width}`, out.join('\n'));
          });
        }
      }
      it(`${name}, json: matches its snapshot`, function () {
        checkSnapshot(`${name} json`, render(only(p), 'json', 160));
      });
    }
  });

  describe('a running plan', function () {
    it('says what it waits for and until when, in local time and UTC', function () {
      const out = lines(only(running), 'text', 160);
      assert.equal(
        out[1],
        '  SlotsFull: group workers: both slot(s) busy; next schedule 11:04:10 GMT+1 (10:04:10 UTC, in 4m10s)',
      );
    });

    it('draws a bar per group in schedule order, with completed/total and the counts that are there', function () {
      const out = lines(only(running), 'text', 160);
      assert.match(out[2] ?? '', /^ {2}controlPlane \[#{30}\] 1\/1$/);
      assert.match(out[3] ?? '', /^ {2}workers {6}\[>{15}\.{15}\] 0\/4 {2}running 2 {2}pending 2$/);
    });

    it('a line per active node: phase, time in phase, the PDB that blocks the drain, the deadline; readiness of the Node', function () {
      const out = lines(only(running), 'text', 160);
      const at1 = out.findIndex((l) => l.includes('worker-1'));
      assert.match(
        out[at1] ?? '',
        /^ {4}worker-1 {2}Draining {3}1m15s {2}DrainBlockedByPDB: eviction blocked by PodDisruptionBudget shop\/web/,
      );
      assert.equal(out[at1 + 1], '      Draining gives up 11:03:45 GMT+1 (10:03:45 UTC, in 3m45s)');
      assert.ok(
        out.some((l) => /worker-2 {2}Rebooting {2}20s {4}node NotReady; WaitingForReboot/.test(l)),
        out.join('\n'),
      );
      assert.ok(!out.some((l) => l.includes('cp-1')), 'a finished node has no active line');
      assert.ok(!out.some((l) => /^ {2}node +/.test(l)), 'no summary table while it runs');
    });

    it('wide adds the group, total time and versions to each node, every count and the slots to each group', function () {
      const out = lines(only(running), 'wide', 160);
      assert.ok(
        out.some((l) =>
          /worker-1 {2}workers {2}Draining {3}1m15s {2}1m30s {2}v1\.12\.4 → v1\.13\.2 {2}v1\.35\.2/.test(l),
        ),
        out.join('\n'),
      );
      assert.ok(
        out.some((l) => / 0\/4 {2}running 2 {2}failed 0 {2}held 0 {2}pending 2 {2}skipped 0 {2}slots 2\/2$/.test(l)),
        out.join('\n'),
      );
      assert.match(out[0] ?? '', /running for 8m20s$/);
    });

    it('at 60 columns the sentence and the waits wrap by clause and between words, nothing is lost but the ends of long lines', function () {
      const out = lines(only(running), 'text', 60);
      assert.equal(out[1], '  SlotsFull: group workers: both slot(s) busy');
      assert.equal(out[2], '    next schedule 11:04:10 GMT+1 (10:04:10 UTC, in 4m10s)');
      assert.ok(
        out.some((l) => l.includes('blocked by PodDisruptionBudget shop/web')),
        out.join('\n'),
      );
    });
  });

  describe('a paused plan', function () {
    it('says who paused it, why, and how to resume', function () {
      const out = lines(only(paused), 'text', 160);
      assert.equal(out[1], '  paused by the failure policy: 1 node(s) failed (maxFailures 1): the plan is paused');
      assert.equal(out[2], `    resume: kubectl patch patchplan pausing --type merge -p '{"spec":{"paused":false}}'`);
      assert.ok(
        out.includes('    worker-3  UpgradeFailed: Talos refused the upgrade: error validating installer image'),
      );
      const p = doc(only(paused)).plans[0];
      assert.equal(p?.paused, true);
      assert.equal(p?.pausedBy, 'failurePolicy');
      assert.equal(watchOutcome(doc(only(paused))), 'running', 'a watch stays while a plan is paused');
    });
  });

  describe('a failed plan', function () {
    it('says why it failed, names the failed node with its reason, and ends with the summary table', function () {
      const out = lines(only(failed), 'text', 160);
      assert.equal(out[1], '  failed: FailureBudgetExceeded: 1 node(s) failed, maxFailures 1: the plan stops');
      assert.ok(out.includes('    worker-2  RebootTimeout: worker-2 did not come back on Talos v1.13.2 within 10m'));
      const table = out.slice(out.findIndex((l) => l.startsWith('  node ')));
      assert.deepEqual(table[0]?.trim().split(/\s{2,}/), [
        'node',
        'group',
        'Talos',
        'Kubernetes',
        'cordoned',
        'total',
        'result',
      ]);
      assert.deepEqual(table[3]?.trim().split(/\s{2,}/), [
        'worker-2',
        'workers',
        'v1.12.4 (unchanged)',
        'v1.35.2 (unchanged)',
        '23m10s',
        '23m20s',
        'Failed (left cordoned)',
      ]);
      assert.equal(watchOutcome(doc(only(failed))), 'failed');
    });
  });

  describe('a plan waiting for a held node', function () {
    it('counts held and skipped nodes in the header and the bar, and names them with their reasons', function () {
      const out = lines(only(held), 'text', 160);
      assert.match(out[0] ?? '', /2\/4 nodes \(1 held, 1 skipped\)/);
      assert.match(out[1] ?? '', /^ {2}NodesHeld: group workers waits for 1 held node\(s\): worker-2/);
      assert.ok(
        out.some((l) => /\[#{15}-{8}\.{7}\] 2\/4 {2}held 1 {2}pending 1 {2}skipped 1$/.test(l)),
        out.join('\n'),
      );
      assert.ok(out.includes('    worker-2  held: INC-4711: disk replacement'));
      assert.ok(out.includes('    worker-4  skipped: retiring this week'));
      const p = doc(only(held)).plans[0];
      assert.deepEqual(p?.held, [{ node: 'worker-2', reason: 'INC-4711: disk replacement' }]);
      assert.equal(p?.counts.held, 1);
    });
  });

  describe('a completed plan', function () {
    it('says when it completed and how long it took, and shows the summary table: versions before → after, time cordoned, total, result', function () {
      const out = lines(only(completed), 'text', 160);
      assert.equal(
        out[1],
        '  completed in 56m40s; at 10:00:00 GMT+1 (09:00:00 UTC, 1h00m ago); all 2 node(s) done: 2 completed, 0 failed',
      );
      const table = out.slice(out.findIndex((l) => l.startsWith('  node ')));
      assert.deepEqual(table[2]?.trim().split(/\s{2,}/), [
        'cp-1',
        'controlPlane',
        'v1.12.4 → v1.13.2',
        'v1.35.2 → v1.36.3',
        '19m50s',
        '20m00s',
        'Completed',
      ]);
      assert.equal(watchOutcome(doc(only(completed))), 'completed');
    });

    it('at 60 columns the table leaves out the group and the times before it would cut the result', function () {
      const out = lines(only(completed), 'text', 60);
      const table = out.slice(out.findIndex((l) => l.startsWith('  node ')));
      assert.deepEqual(table[0]?.trim().split(/\s{2,}/), ['node', 'Talos', 'Kubernetes', 'result']);
      assert.deepEqual(table[3]?.trim().split(/\s{2,}/), [
        'worker-1',
        'v1.12.4 → v1.13.2',
        'v1.35.2 → v1.36.3',
        'Completed',
      ]);
    });
  });

  describe('the whole cluster', function () {
    it('without names: every plan, newest first; an auto-update template with its releases, pending proposal and children', function () {
      const d = doc(cluster());
      assert.deepEqual(
        d.plans.map((p) => p.name),
        ['holding', 'pausing', 'rolling', 'halting', 'production-v1-13-2', 'finished', 'production'],
      );
      const out = lines(cluster(['production']), 'text', 160);
      assert.equal(out[0], 'PatchPlan production  Watching  auto-update template');
      assert.ok(
        out.some((l) =>
          l.startsWith(
            '  releases: nodes on v1.12.4, newest v1.13.3; checked 10:55:00 GMT+1 (09:55:00 UTC, 5m00s ago)',
          ),
        ),
        out.join('\n'),
      );
      assert.ok(out.includes('  pending v1.13.3 (too young until 2026-12-02 11:00:00 GMT+1 (10:00:00 UTC, in 1d00h))'));
      assert.ok(out.includes('  proposed v1.13.2: https://forge.example/acme/plans/pull/7'));
      assert.ok(out.includes('  blocked until production-v1-13-2 (v1.13.2, InProgress) completes'));
      assert.ok(out.includes('    production-v1-13-2  InProgress  Talos v1.13.2  3/5 nodes'), out.join('\n'));
      assert.deepEqual(
        doc(cluster(['production'])).plans[0]?.autoUpdate?.children.map((c) => c.name),
        ['production-v1-13-2'],
      );
      assert.equal(doc(cluster()).plans.find((p) => p.name === 'production-v1-13-2')?.proposedBy, 'production');
    });

    it('named plans in the order given, once each; the names no plan has', function () {
      assert.deepEqual(
        doc(cluster(['finished', 'rolling', 'finished'])).plans.map((p) => p.name),
        ['finished', 'rolling'],
      );
      assert.deepEqual(missingPlans(cluster(['finished', 'nope'])), ['nope']);
      assert.equal(render({ plans: [], jobs: [], nodes: [], names: [] }, 'text', 80), 'No PatchPlans.\n');
      const fresh = { ...running.plan, status: {} };
      assert.equal(
        render({ plans: [fresh], jobs: [], nodes: [], names: [] }, 'text', 80),
        'PatchPlan rolling  Pending  Talos v1.13.2\n  Pending: the controller has not picked it up yet\n',
        'no 0/0 count before the controller counted',
      );
    });

    it('a watch ends when every plan shown finished: completed only when all completed without a failed node', function () {
      assert.equal(watchOutcome(doc(cluster(['finished']))), 'completed');
      assert.equal(watchOutcome(doc(cluster(['finished', 'halting']))), 'failed');
      assert.equal(watchOutcome(doc(cluster(['finished', 'rolling']))), 'running');
      assert.equal(watchOutcome(doc(cluster(['production']))), 'running', 'a template watches forever');
      const withFailedNode = { ...completed.plan, status: { ...completed.plan.status, failedNodes: 1 } };
      assert.equal(watchOutcome(doc({ plans: [withFailedNode], jobs: [], nodes: [], names: [] })), 'failed');
    });

    it('without Nodes (the viewer ClusterRole): versions from the jobs, no readiness, and a note', function () {
      const d = doc(only(running, false));
      assert.equal(d.nodesReadable, false);
      assert.equal(d.plans[0]?.nodes.find((n) => n.node === 'worker-2')?.ready, undefined);
      assert.match(render(only(running, false), 'text', 160), /Nodes are not readable with these credentials/);
      const row = lines(only(failed, false), 'text', 160).find((l) => l.trim().startsWith('worker-1 '));
      assert.equal(
        row?.trim().split(/\s{2,}/)[3],
        'unchanged',
        'a version the plan does not move, unreadable on the Node: unchanged',
      );
    });
  });

  describe('json and yaml', function () {
    it('one document with kind and version; yaml says the same; no undefined fields', function () {
      const json = JSON.parse(render(cluster(), 'json', 60)) as StatusDocument;
      assert.equal(json.kind, 'KangalPatchStatus');
      assert.equal(json.version, 'v1');
      assert.equal(json.time, new Date(T0).toISOString());
      assert.deepEqual(parse(render(cluster(), 'yaml', 60)), json);
      assert.deepEqual(
        JSON.parse(JSON.stringify(doc(cluster()))),
        doc(cluster()),
        'nothing is dropped by JSON: no undefined fields',
      );
      const node = json.plans.find((p) => p.name === 'rolling')?.nodes.find((n) => n.node === 'worker-1');
      assert.deepEqual(node, {
        node: 'worker-1',
        job: 'rolling-worker-1',
        group: 'workers',
        phase: 'Draining',
        finished: false,
        wait: {
          reason: 'DrainBlockedByPDB',
          message: 'eviction blocked by PodDisruptionBudget shop/web (0 disruptions allowed)',
          until: at(225),
          untilWhat: 'Draining gives up',
        },
        blockingPDB: 'shop/web',
        startTime: at(-90),
        phaseStartTime: at(-75),
        secondsInPhase: 75,
        secondsCordoned: 75,
        secondsTotal: 90,
        talos: { before: 'v1.12.4', after: 'v1.12.4', target: 'v1.13.2' },
        kubernetes: { before: 'v1.35.2', after: 'v1.35.2' },
        ready: true,
      });
    });

    it('two documents that differ only in what the clock moves are the same status', function () {
      assert.ok(sameStatus(doc(cluster(), T0), doc(cluster(), T0 + 5_000)));
      const moved = {
        ...running,
        jobs: running.jobs.map((j) =>
          j.name === 'rolling-worker-2' ? { ...j, status: { ...j.status, phase: 'UpgradingKubernetes' as const } } : j,
        ),
      };
      assert.ok(!sameStatus(doc(only(running)), doc(only(moved))));
    });
  });

  describe('helpers', function () {
    it('a bar fills exactly its cells: completed, skipped, failed, running, then the rest', function () {
      assert.equal(bar({ total: 4, completed: 1, skipped: 0, failed: 1, running: 1 }, 8), '[##xx>>..]');
      assert.equal(bar({ total: 3, completed: 3, skipped: 0, failed: 0, running: 0 }, 10), '[##########]');
      assert.equal(bar({ total: 0, completed: 0, skipped: 0, failed: 0, running: 0 }, 4), '[    ]');
    });

    it('clauses wrap on as few lines as fit; a long one is split between words', function () {
      assert.deepEqual(wrapParts('  ', ['one', 'two'], { sep: '; ', width: 40, indent: '    ' }), ['  one; two']);
      assert.deepEqual(wrapParts('  ', ['a'.repeat(20), 'b'.repeat(20)], { sep: '; ', width: 30, indent: '    ' }), [
        `  ${'a'.repeat(20)}`,
        `    ${'b'.repeat(20)}`,
      ]);
      assert.deepEqual(
        wrapParts('', ['the quick brown fox jumps over the lazy dog again and again'], {
          sep: '; ',
          width: 30,
          indent: '  ',
        }),
        ['the quick brown fox jumps over', '  the lazy dog again and again'],
      );
    });

    it('a frame taller than the screen is cut, saying how much is left out', function () {
      assert.deepEqual(fitHeight(['a', 'b', 'c', 'd'], 3), [
        'a',
        'b',
        '… 2 more line(s): a taller terminal, or name one plan',
      ]);
      assert.deepEqual(fitHeight(['a'], 3), ['a']);
    });

    it('the plain log prints a fact again only when its phase, reason or counts change', function () {
      const o = { wide: false, width: Infinity, zone: 'UTC', nowMs: T0 };
      const seen = new Map<string, string>();
      const first = changedFacts(seen, facts(doc(only(running)), o));
      assert.ok(
        first.includes(
          'plan rolling: node worker-1 (workers): Draining — DrainBlockedByPDB: eviction blocked by PodDisruptionBudget shop/web (0 disruptions allowed)',
        ),
        first.join('\n'),
      );
      assert.ok(
        first.some((l) => l.startsWith('plan rolling: InProgress 1/5 nodes — SlotsFull')),
        first.join('\n'),
      );
      assert.deepEqual(
        changedFacts(seen, facts(doc(only(running), T0 + 30_000), { ...o, nowMs: T0 + 30_000 })),
        [],
        'the clock alone prints nothing',
      );
      const moved = {
        ...running,
        jobs: running.jobs.map((j) =>
          j.name === 'rolling-worker-2'
            ? {
                ...j,
                status: { ...j.status, phase: 'UpgradingKubernetes' as const, reason: 'ApplyingConfig', message: 'x' },
              }
            : j,
        ),
      };
      assert.deepEqual(changedFacts(seen, facts(doc(only(moved)), o)), [
        'plan rolling: node worker-2 (workers): UpgradingKubernetes — ApplyingConfig: x',
      ]);
    });

    it("a template's plain log: its release check and its promotion, again only when they say something new", function () {
      const o = { wide: false, width: Infinity, zone: 'UTC', nowMs: T0 };
      const promotion = {
        reason: 'WaitingForPromotion',
        version: 'v1.13.3',
        stages: [{ cluster: 'staging', state: 'Soaking' as const, eligibleTime: at(600), message: 'soaking' }],
      };
      const soaking = {
        ...template.plan,
        status: { ...template.plan.status, autoUpdate: { ...template.plan.status.autoUpdate, promotion } },
      };
      const input = (p: typeof soaking): StatusInput => ({
        plans: [p, template.child],
        jobs: [],
        nodes: [],
        names: ['production'],
      });
      const seen = new Map<string, string>();
      const first = changedFacts(seen, facts(doc(input(soaking)), o));
      assert.ok(
        first.includes(
          'plan production: releases: nodes on v1.12.4, newest v1.13.3, pending v1.13.3, proposed v1.13.2 (https://forge.example/acme/plans/pull/7)',
        ),
        first.join('\n'),
      );
      assert.ok(
        first.includes(`plan production: promotion: WaitingForPromotion v1.13.3 (staging Soaking until ${at(600)})`),
        first.join('\n'),
      );
      const checkedAgain = {
        ...soaking,
        status: {
          ...soaking.status,
          autoUpdate: { ...soaking.status.autoUpdate, lastCheckTime: at(60), nextCheckTime: at(3660) },
        },
      };
      assert.deepEqual(changedFacts(seen, facts(doc(input(checkedAgain)), o)), []);
    });
  });
});

// ---- snapshots: status-view.snapshots.ts, rewritten with UPDATE_SNAPSHOTS=1 ----

const fresh: Record<string, string> = {};

function checkSnapshot(key: string, actual: string): void {
  fresh[key] = actual;
  if (process.env['UPDATE_SNAPSHOTS']) return;
  assert.ok(
    key in SNAPSHOTS,
    `no snapshot "${key}": run UPDATE_SNAPSHOTS=1 npx mocha test/unit/core/status-view.test.ts`,
  );
  assert.equal(actual, SNAPSHOTS[key]);
}

after(function () {
  if (!process.env['UPDATE_SNAPSHOTS']) return;
  // Template literals, so a snapshot reads as the terminal shows it.
  const literal = (v: string): string =>
    `\`${v.replace(/\\/g, '\\\\').replace(/`/g, '\\`').replace(/\$\{/g, '\\${')}\``;
  const body = Object.entries(fresh)
    .map(([k, v]) => `  ${JSON.stringify(k)}: ${literal(v)},`)
    .join('\n');
  const header =
    '// Snapshots of the status view for status-view.test.ts (the five plans of status-view-fixtures.ts,\n// text and wide at 60 and 160 columns, json). Written by UPDATE_SNAPSHOTS=1 npx mocha test/unit/core/status-view.test.ts.\n';
  writeFileSync(
    fileURLToPath(new URL('./status-view.snapshots.ts', import.meta.url)),
    `${header}export const SNAPSHOTS: Record<string, string> = {\n${body}\n};\n`,
  );
});

describe('core/status-view: the report pull request', function () {
  const url = 'https://forge.example/acme/plans/pull/12';
  const withReport = {
    ...completed,
    plan: { ...completed.plan, annotations: { 'kangalpatch.ozalp.dk/report-url': url } },
  };

  it("shows the report's pull request the controller annotated the plan with, in text and in the document; nothing without it", function () {
    assert.ok(lines(only(withReport), 'text', 160).includes(`  report: ${url}`));
    assert.equal(statusDocument(only(withReport), T0).plans[0]?.reportUrl, url);
    assert.equal(statusDocument(only(completed), T0).plans[0]?.reportUrl, undefined);
    assert.ok(!lines(only(completed), 'text', 160).some((l) => l.startsWith('  report:')));
  });
});
