// The report's YAML twin is written one node at a time (memory); it must be byte for byte what the
// YAML library writes for the whole document, on every shape of string the statuses can hold.
import assert from 'node:assert/strict';
import { parse, stringify } from 'yaml';
import { reportDocument, type ReportJob, type ReportPlan } from '../../../controller/core/report/index.js';
import { reportYaml } from '../../../controller/gitops/report/render.js';

const WHOLE = { aliasDuplicateObjects: false, lineWidth: 0 } as const;

function plan(groups: string[]): ReportPlan {
  return {
    name: 'p',
    uid: 'u1',
    order: groups,
    specCommit: 'abc',
    sourceCommit: undefined,
    sourcePath: 'plans/p.yaml',
    status: {
      phase: 'Failed',
      reason: 'FailureBudgetExceeded',
      message: 'two nodes failed:\n  worker-1: drain\n\nsee the jobs',
      startTime: '2026-01-01T00:00:00Z',
      totalNodes: 4,
      completedNodes: 1,
      runningNodes: 0,
      pendingNodes: 1,
      failedNodes: 2,
      groups: groups.map((name) => ({
        name,
        concurrency: 2,
        active: 0,
        total: 2,
        pending: 0,
        running: 0,
        completed: 1,
        failed: 1,
      })),
    },
  };
}

function job(node: string, group: string, status: ReportJob['status']): ReportJob {
  return {
    name: `p-${node}`,
    nodeName: node,
    group,
    status,
    before: { talos: 'v1.12.1', kubernetes: undefined },
    targetTalos: 'v1.12.3',
    targetKubernetes: undefined,
  };
}

// Messages as the job reconciler writes them, and the strings YAML must quote or block.
const MESSAGES = [
  'node worker-1 was not back Ready on v1.12.3 within rebootTimeout 10m (last seen Ready=false)',
  'drain timed out:\n  pod default/web-1: PDB web blocks\n\n  pod default/web-2: PDB web blocks\n',
  ' leading space and trailing space ',
  'key: value # not a comment',
  '- looks like a list',
  'true',
  '0123',
  'null',
  '"quoted" and \'single\'',
  'tab\there, ümlaut, 日本語, emoji 🚀',
  'trailing newline\n',
  '',
];

describe('gitops/report: the YAML twin written one node at a time', function () {
  it('is byte for byte the whole-document stringify for every message shape, empty groups and nodes included', function () {
    const jobs = MESSAGES.map((message, i) =>
      job(`worker-${i}`, i % 2 === 0 ? 'workers' : 'controlPlane', {
        phase: 'Failed',
        reason: 'DrainTimeout',
        message,
        startTime: '2026-01-01T00:00:00Z',
        completionTime: '2026-01-01T00:05:00Z',
      }),
    );
    const docs = [
      reportDocument(plan(['controlPlane', 'workers', 'idle']), jobs, {
        cluster: 'east',
        blobUrlBase: 'https://github.com/acme/plans/blob',
      }),
      reportDocument(plan([]), [], { cluster: 'east', blobUrlBase: undefined }),
      reportDocument(plan(['only']), [], { cluster: 'east: west', blobUrlBase: undefined }),
    ];
    assert.ok(
      docs[0]!.groups.some((g) => g.nodes.length === 0),
      'a group without nodes is part of the case',
    );
    for (const doc of docs) {
      const piecewise = reportYaml(doc);
      assert.equal(piecewise, stringify(doc, WHOLE));
      assert.deepEqual(parse(piecewise), JSON.parse(JSON.stringify(doc)));
    }
  });
});
