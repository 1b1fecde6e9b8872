// The pure parts of controller/kube: error mapping, projections, selectors, status patches.
import assert from 'node:assert/strict';
import { ApiException } from '@kubernetes/client-node';
import { toOutcomeError } from '../../../controller/kube/errors.js';
import { selectorMatches } from '../../../controller/kube/label-selector.js';
import { statusPatch } from '../../../controller/kube/patchjobs.js';
import { lenientStatus, projectJob, talosVersionOf } from '../../../controller/kube/project.js';
import { isNewer } from '../../../controller/kube/resource-version.js';

const status = (code: number, reason: string, extra: object = {}) =>
  JSON.stringify({ kind: 'Status', code, reason, message: `m ${reason}`, ...extra });
const map = (err: unknown, signal?: AbortSignal) =>
  toOutcomeError(err, { what: 'op', now: 0, ...(signal ? { signal } : {}) });

describe('kube/errors', function () {
  const cases: [number, string, string, string][] = [
    [404, 'NotFound', 'Stalled', 'NotFound'],
    [409, 'Conflict', 'Transient', 'Conflict'],
    [409, 'AlreadyExists', 'Transient', 'AlreadyExists'],
    [422, 'Invalid', 'Stalled', 'Invalid'],
    [400, 'BadRequest', 'Stalled', 'Invalid'],
    [401, 'Unauthorized', 'Stalled', 'Forbidden'],
    [403, 'Forbidden', 'Stalled', 'Forbidden'],
    [429, 'TooManyRequests', 'Waiting', 'TooManyRequests'],
    [500, 'InternalError', 'Transient', 'InternalError'],
    [503, 'ServiceUnavailable', 'Transient', 'ServiceUnavailable'],
  ];
  for (const [code, reason, kind, mapped] of cases) {
    it(`${code} ${reason} → ${kind} ${mapped}`, function () {
      const e = map(new ApiException(code, 'x', status(code, reason), {}));
      assert.deepEqual([e.kind, e.reason, e.code], [kind, mapped, code]);
    });
  }

  it('honours Retry-After, then the Status detail', function () {
    assert.equal(
      map(new ApiException(429, 'x', status(429, 'TooManyRequests'), { 'Retry-After': '7' })).retryAfterMs,
      7000,
    );
    assert.equal(
      map(new ApiException(429, 'x', status(429, 'TooManyRequests', { details: { retryAfterSeconds: 3 } }), {}))
        .retryAfterMs,
      3000,
    );
    assert.equal(map(new ApiException(429, 'x', undefined, {})).retryAfterMs, undefined);
  });

  it('an abort from the caller is Transient Canceled; network errors are Transient', function () {
    const ac = new AbortController();
    ac.abort();
    const abortErr = Object.assign(new Error('aborted'), { name: 'AbortError' });
    assert.equal(map(abortErr, ac.signal).reason, 'Canceled');
    assert.equal(map(abortErr).reason, 'Timeout');
    const e = map(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    assert.deepEqual([e.kind, e.reason], ['Transient', 'NetworkError']);
  });

  it('undici\'s "fetch failed" (client-node 2.x) is a NetworkError that names its cause', function () {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });
    const e = map(new TypeError('fetch failed', { cause: refused }));
    assert.deepEqual(
      [e.kind, e.reason, e.message],
      ['Transient', 'NetworkError', 'op: connect ECONNREFUSED 127.0.0.1:6443'],
    );
    const tls = Object.assign(new Error('unable to verify the first certificate'), {
      code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    });
    assert.equal(
      map(new TypeError('fetch failed', { cause: tls })).message,
      'op: unable to verify the first certificate (UNABLE_TO_VERIFY_LEAF_SIGNATURE)',
    );
    const both = new AggregateError([
      refused,
      Object.assign(new Error('connect ECONNREFUSED ::1:6443'), { code: 'ECONNREFUSED' }),
    ]);
    assert.equal(
      map(new TypeError('fetch failed', { cause: both })).message,
      'op: connect ECONNREFUSED 127.0.0.1:6443',
    );
    // Any other TypeError is a bug of ours, not the network.
    assert.equal(map(new TypeError('x is not a function')).reason, 'Unexpected');
  });
});

describe('kube projections and helpers', function () {
  it('parses the Talos version from osImage', function () {
    assert.equal(talosVersionOf('Talos (v1.12.3)'), 'v1.12.3');
    assert.equal(talosVersionOf('Talos (v1.13.0-beta.1)'), 'v1.13.0-beta.1');
    assert.equal(talosVersionOf('Ubuntu 24.04 LTS'), undefined);
  });

  it('keeps the status fields that parse and drops the rest', function () {
    assert.deepEqual(
      lenientStatus({ phase: 'Draining', evictedPods: -1, unknown: 1, startTime: 'not a time', reason: 'X' }),
      { phase: 'Draining', reason: 'X' },
    );
    assert.deepEqual(lenientStatus('nonsense'), {});
  });

  it('names the bad spec field', function () {
    const job = projectJob({ metadata: { name: 'j', resourceVersion: '5' }, spec: { nodeName: 'n' } });
    assert.equal(job.spec, undefined);
    assert.match(job.specError ?? '', /spec\.patchPlanRef: /);
    assert.match(job.specError ?? '', /spec\.talosConfig: /);
  });

  it('matches label selectors like the apiserver', function () {
    const labels = { app: 'web', tier: 'front' };
    assert.equal(selectorMatches({}, labels), true);
    assert.equal(selectorMatches(undefined, labels), false);
    assert.equal(
      selectorMatches(
        { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['back'] }] },
        labels,
      ),
      true,
    );
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }, labels), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'Bogus' }] }, labels), false);
  });

  it('turns a status replacement into a merge patch that removes left-out keys', function () {
    assert.deepEqual(
      statusPatch({ phase: 'Draining', reason: 'A', message: 'm' }, { phase: 'Upgrading', message: undefined }),
      {
        phase: 'Upgrading',
        reason: null,
        message: null,
      },
    );
  });

  it('removes left-out keys of nested objects too (a merge patch merges them), and replaces arrays whole', function () {
    const old = {
      phase: 'Watching',
      autoUpdate: {
        lastError: { reason: 'NetworkError', message: 'm', time: 't' },
        blockedBy: { name: 'c' },
        currentVersion: 'v1.13.2',
        skippedVersions: ['v1.14.0'],
      },
    };
    assert.deepEqual(
      statusPatch<Record<string, unknown>>(old, {
        phase: 'Watching',
        autoUpdate: { currentVersion: 'v1.13.3', skippedVersions: [] },
      }),
      {
        phase: 'Watching',
        autoUpdate: { lastError: null, blockedBy: null, currentVersion: 'v1.13.3', skippedVersions: [] },
      },
    );
    assert.deepEqual(statusPatch<Record<string, unknown>>({ autoUpdate: { a: 1 } }, { autoUpdate: { b: { c: 1 } } }), {
      autoUpdate: { a: null, b: { c: 1 } },
    });
  });

  it('compares resourceVersions as integers only when both are', function () {
    assert.equal(isNewer('100', '99'), true);
    assert.equal(isNewer('99', '100'), false);
    assert.equal(isNewer('18446744073709551617', '18446744073709551616'), true);
    assert.equal(isNewer('abc', '1'), undefined);
  });
});
