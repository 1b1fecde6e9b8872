// The scale benches' request accounting: request kinds as apiserver_request_total names them,
// no-op writes told from real ones by resourceVersion, counter diffs of a scrape.
import assert from 'node:assert/strict';
import {
  apiserverRequests,
  counterDiff,
  counterSamples,
  noOpWrites,
  requestKind,
  tally,
} from '../../bench/scale/api-counts.js';

describe('bench api counts', () => {
  it('names requests by verb and resource, group and subresource', () => {
    assert.equal(requestKind('GET', '/api/v1/pods?limit=500'), 'LIST pods');
    assert.equal(requestKind('GET', '/api/v1/pods?watch=true&resourceVersion=5'), 'WATCH pods');
    assert.equal(requestKind('GET', '/api/v1/namespaces/a/pods/p'), 'GET pods');
    assert.equal(requestKind('POST', '/api/v1/namespaces/a/pods/p/eviction'), 'POST pods/eviction');
    assert.equal(requestKind('PATCH', '/api/v1/nodes/worker-1'), 'PATCH nodes');
    assert.equal(
      requestKind('PATCH', '/apis/kangalpatch.ozalp.dk/v1alpha1/patchjobs/j/status'),
      'PATCH patchjobs.kangalpatch.ozalp.dk/status',
    );
    assert.equal(
      requestKind('DELETE', '/apis/coordination.k8s.io/v1/namespaces/k/leases/l'),
      'DELETE leases.coordination.k8s.io',
    );
    assert.equal(requestKind('GET', '/api/v1/namespaces/k'), 'GET namespaces');
    assert.equal(requestKind('GET', '/readyz'), 'GET /readyz');
  });

  it('tells a write that changed nothing by its old resourceVersion, but not one that deleted its object', () => {
    const writes = [
      { method: 'PATCH', path: '/a', status: 200, resourceVersion: '120', seenBefore: 110 },
      { method: 'PATCH', path: '/a', status: 200, resourceVersion: '120', seenBefore: 125 },
      { method: 'PUT', path: '/b', status: 200, resourceVersion: '90', seenBefore: 125 },
      { method: 'PATCH', path: '/c', status: 409, resourceVersion: '1', seenBefore: 125 },
      { method: 'POST', path: '/d', status: 201, resourceVersion: '100', seenBefore: 125 },
      // The last finalizer removed: the object is deleted and answered as it was before (seen on the lab's apiserver).
      { method: 'PATCH', path: '/e', status: 200, resourceVersion: '98', seenBefore: 125, deletedByWrite: true },
    ];
    assert.deepEqual(
      noOpWrites(writes).map((w) => `${w.method} ${w.path}`),
      ['PATCH /a', 'PUT /b'],
    );
  });

  it('diffs apiserver_request_total between two scrapes by verb and resource', () => {
    const before = counterSamples(
      '# HELP x\napiserver_request_total{code="200",group="",resource="pods",subresource="",verb="LIST"} 4\n',
      'apiserver_request_total',
    );
    const after = counterSamples(
      [
        'apiserver_request_total{code="200",group="",resource="pods",subresource="",verb="LIST"} 6',
        'apiserver_request_total{code="201",group="",resource="pods",subresource="eviction",verb="POST"} 3',
        'apiserver_request_total{code="429",group="",resource="pods",subresource="eviction",verb="POST"} 2',
        'apiserver_request_total_other{verb="GET"} 9',
      ].join('\n'),
      'apiserver_request_total',
    );
    assert.deepEqual(
      [...apiserverRequests(counterDiff(before, after))],
      [
        ['LIST pods', 2],
        ['POST pods/eviction', 5],
      ],
    );
    assert.deepEqual(
      [...tally(['b', 'a', 'b'], (x) => x)],
      [
        ['a', 1],
        ['b', 2],
      ],
    );
  });
});
