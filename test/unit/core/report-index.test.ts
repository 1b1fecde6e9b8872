// The signed report index, pure (core/promotion/report-index.ts): each write advances the sequence
// and stamps the written report's entry, entries are never removed, an unchanged report changes
// nothing; the reader's checks refuse a missing or changed report, a gap and a replayed older index,
// and list the report files the index does not.
import assert from 'node:assert/strict';
import {
  checkReportIndex,
  nextReportIndex,
  type ReportIndex,
} from '../../../controller/core/promotion/report-index.js';

const D = (c: string): string => c.repeat(64);
const A = 'status/staging/a.yaml';
const B = 'status/staging/b.yaml';

function build(...writes: [string, string][]): ReportIndex {
  let index: ReportIndex | undefined;
  for (const [path, sha256] of writes) index = nextReportIndex(index, 'staging', { path, sha256 }) ?? index;
  assert.ok(index);
  return index;
}

describe('core/promotion: report index', function () {
  it('the writer: one more per write, the written entry at that sequence, sorted, append-only', function () {
    const first = nextReportIndex(undefined, 'staging', { path: B, sha256: D('1') });
    assert.deepEqual(first, {
      apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
      kind: 'ReportIndex',
      cluster: 'staging',
      sequence: 1,
      reports: [{ path: B, sequence: 1, sha256: D('1') }],
    });
    const second = nextReportIndex(first, 'staging', { path: A, sha256: D('2') });
    assert.deepEqual(
      second?.reports.map((e) => [e.path, e.sequence]),
      [
        [A, 2],
        [B, 1],
      ],
    );
    const third = nextReportIndex(second, 'staging', { path: B, sha256: D('3') });
    assert.equal(third?.sequence, 3);
    assert.deepEqual(
      third?.reports,
      [
        { path: A, sequence: 2, sha256: D('2') },
        { path: B, sequence: 3, sha256: D('3') },
      ],
      'a rewritten report moves to the new sequence and digest',
    );
    assert.equal(
      nextReportIndex(third, 'staging', { path: B, sha256: D('3') }),
      undefined,
      'the same report again: nothing to write',
    );
    assert.equal(first?.sequence, 1, 'the previous index is not changed');
  });

  it('the reader: an index that matches its files holds; unlisted files are named', function () {
    const index = build([A, D('a')], [B, D('b')]);
    assert.deepEqual(
      checkReportIndex({
        cluster: 'staging',
        index,
        present: new Map([
          [A, D('a')],
          [B, D('b')],
        ]),
        seen: 2,
      }),
      { ok: true, sequence: 2, unindexed: [] },
    );
    const extra = 'status/staging/old.yaml';
    assert.deepEqual(
      checkReportIndex({
        cluster: 'staging',
        index,
        present: new Map([
          [A, D('a')],
          [B, D('b')],
          [extra, D('c')],
        ]),
        seen: undefined,
      }),
      { ok: true, sequence: 2, unindexed: [extra] },
    );
  });

  it('the reader refuses, naming the cluster, the file and the sequence: withdrawn, changed, gap, replayed, foreign', function () {
    const index = build([A, D('a')], [B, D('b')]);
    const all = new Map([
      [A, D('a')],
      [B, D('b')],
    ]);
    const refused = (i: ReportIndex, present: ReadonlyMap<string, string>, seen?: number): string => {
      const r = checkReportIndex({ cluster: 'staging', index: i, present, seen });
      return r.ok ? 'accepted' : r.reason;
    };
    assert.match(
      refused(index, new Map([[A, D('a')]])),
      /^cluster staging: report status\/staging\/b\.yaml listed at sequence 2 in status\/staging\/index\.yaml \(sequence 2\) is missing/,
    );
    assert.match(
      refused(
        index,
        new Map([
          [A, D('a')],
          [B, D('f')],
        ]),
      ),
      /^cluster staging: report status\/staging\/b\.yaml listed at sequence 2 .* changed: its SHA-256 is ffffffffffff…, the index says bbbbbbbbbbbb…/,
    );
    assert.match(
      refused({ ...index, sequence: 3 }, all),
      /sequence 3\) has a gap: its highest report entry is at sequence 2, not 3/,
    );
    assert.match(
      refused({ ...index, reports: index.reports.map((e) => ({ ...e, sequence: 2 })) }, all),
      /has a gap: status\/staging\/a\.yaml and status\/staging\/b\.yaml both claim sequence 2/,
    );
    assert.match(
      refused(index, all, 5),
      /^cluster staging: status\/staging\/index\.yaml \(sequence 2\) is older than the index already seen: sequence 5 was seen, sequence 2 is offered/,
    );
    assert.equal(refused(index, all, 2), 'accepted', 'the same sequence again is no regression');
    assert.match(refused({ ...index, cluster: 'lab' }, all), /names cluster lab, not staging/);
    assert.match(
      refused(
        {
          ...index,
          reports: [...index.reports, { path: 'status/lab/x.yaml', sequence: 9, sha256: D('9') }],
          sequence: 9,
        },
        all,
      ),
      /lists status\/lab\/x\.yaml, which is not a report of cluster staging/,
    );
  });
});
