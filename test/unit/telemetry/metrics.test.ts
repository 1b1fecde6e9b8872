// The metrics' pure parts (cluster state from views, Talos call codes, the job observer) and the
// registry's names as Prometheus sees them (no double prefix, scrape-time gauges).
import assert from 'node:assert/strict';
import { TalosApiError, TalosErrorKind } from '../../../controller/talos/errors.js';
import { callCode } from '../../../controller/talos/call-errors.js';
import { registerClusterGauges, registerPodCacheGauges } from '../../../controller/telemetry/cluster-gauges.js';
import {
  NODE_PHASES,
  cordonedSeconds,
  etcdMembers,
  etcdWaiting,
  nodePhaseCounts,
  planPhaseSamples,
  upgradeDurationSeconds,
} from '../../../controller/telemetry/cluster-state.js';
import { jobMetricsObserver } from '../../../controller/telemetry/job-observer.js';
import { createMetrics } from '../../../controller/telemetry/metrics.js';
import type { JobView, NodeView, PlanView } from '../../../controller/kube/views.js';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const at = (s: number): string => new Date(T0 + s * 1000).toISOString();

function node(name: string, o: Partial<NodeView> = {}): NodeView {
  return {
    name,
    uid: name,
    resourceVersion: '1',
    labels: {},
    controlPlane: false,
    internalIP: undefined,
    ready: true,
    unschedulable: false,
    cordonedBy: undefined,
    bootID: 'b',
    talosVersion: 'v1.12.4',
    kubeletVersion: 'v1.35.0',
    schematic: undefined,
    hold: undefined,
    installerAnnotations: undefined,
    ...o,
  };
}
function job(name: string, nodeName: string, status: PatchJobStatus, created = 0): JobView {
  const spec = { nodeName, patchPlanRef: 'p', group: 'g' } as JobView['spec'];
  return {
    name,
    uid: name,
    resourceVersion: '1',
    generation: 1,
    labels: {},
    spec,
    specError: undefined,
    status,
    created,
    deleting: false,
  };
}
function plan(name: string, phase: PlanView['status']['phase']): PlanView {
  return {
    name,
    uid: name,
    resourceVersion: '1',
    generation: 1,
    labels: {},
    annotations: {},
    finalizers: [],
    spec: undefined,
    specError: undefined,
    status: { phase },
    created: 0,
    deleting: false,
  };
}

describe('telemetry: cluster state', function () {
  it('plan phase: 1 for the current phase, 0 for every other, Pending before the first status', function () {
    const s = planPhaseSamples([plan('a', 'InProgress'), plan('b', undefined)]);
    assert.deepEqual(
      s.filter((x) => x.value === 1).map((x) => `${x.plan}:${x.phase}`),
      ['a:InProgress', 'b:Pending'],
    );
    assert.equal(s.filter((x) => x.plan === 'a').length, 8, 'one series per phase');
    assert.ok(s.some((x) => x.plan === 'a' && x.phase === 'Completed' && x.value === 0));
  });

  it('node phase: the running job wins over a finished one, else the newest finished one; Idle without a job', function () {
    const counts = nodePhaseCounts(
      [node('n1'), node('n2'), node('n3'), node('n4')],
      [
        job('old-n1', 'n1', { phase: 'Completed' }, 1),
        job('new-n1', 'n1', { phase: 'Draining' }, 0), // running: wins although older
        job('a-n2', 'n2', { phase: 'Failed' }, 1),
        job('b-n2', 'n2', { phase: 'Completed' }, 2), // newest finished
        job('n3', 'n3', {}), // no status yet: Pending
        job('ghost', 'gone', { phase: 'Upgrading' }), // not a node we know
      ],
    );
    assert.deepEqual(Object.fromEntries([...counts].filter(([, c]) => c > 0)), {
      Draining: 1,
      Completed: 1,
      Pending: 1,
      Idle: 1,
    });
    assert.deepEqual([...counts.keys()].sort(), [...NODE_PHASES].sort(), 'every phase present');
  });

  it('cordoned seconds: from cordonedTime (else startTime) of the job named by the annotation, 0 when that job is gone; no entry for nodes we do not hold cordoned', function () {
    const jobs = new Map([
      ['j1', job('j1', 'n1', { phase: 'Draining', startTime: at(0), cordonedTime: at(30) })],
      ['j2', job('j2', 'n2', { phase: 'Draining', startTime: at(10) })],
    ]);
    const s = cordonedSeconds(
      [
        node('n1', { unschedulable: true, cordonedBy: 'j1' }),
        node('n2', { unschedulable: true, cordonedBy: 'j2' }),
        node('n3', { unschedulable: true }), // cordoned by someone else
        node('n4', { unschedulable: false, cordonedBy: 'j1' }), // uncordoned by hand, annotation left
        node('n5', { unschedulable: true, cordonedBy: 'purged' }), // no job: no start known
      ],
      (n) => jobs.get(n),
      T0 + 100_000,
    );
    assert.deepEqual(Object.fromEntries(s), { n1: 70, n2: 90, n5: 0 });
  });

  it('upgrade duration: completion minus start, undefined when either is missing or out of order', function () {
    assert.equal(upgradeDurationSeconds({ startTime: at(0), completionTime: at(95) }), 95);
    assert.equal(upgradeDurationSeconds({ startTime: at(0) }), undefined);
    assert.equal(upgradeDurationSeconds({ startTime: at(10), completionTime: at(0) }), undefined);
  });
});

describe('telemetry: hooks', function () {
  it('a Talos call is counted under its gRPC status name, else its error kind', function () {
    assert.equal(
      callCode(new TalosApiError({ kind: TalosErrorKind.Unavailable, message: 'm', grpcCode: 14 })),
      'Unavailable',
    );
    assert.equal(
      callCode(new TalosApiError({ kind: TalosErrorKind.FailedPrecondition, message: 'm', grpcCode: 9 })),
      'FailedPrecondition',
    );
    assert.equal(callCode(new TalosApiError({ kind: TalosErrorKind.TlsRejected, message: 'm' })), 'TlsRejected');
    assert.equal(callCode(new Error('other')), 'Unknown');
  });

  it('the job observer counts phase changes by reason and observes the duration of a completed job', async function () {
    const m = createMetrics();
    const o = jobMetricsObserver(m);
    o.phaseChanged({ phase: 'Pending' }, { phase: 'Draining', startTime: at(0) });
    o.phaseChanged({ phase: 'Draining' }, { phase: 'Failed', reason: 'DrainTimeout' });
    o.phaseChanged({ phase: 'Rebooting' }, { phase: 'Completed', startTime: at(0), completionTime: at(200) });
    o.phaseChanged({ phase: 'Completed' }, { phase: 'Completed', startTime: at(0), completionTime: at(200) }); // no change: not counted
    const transitions = (await m.jobTransitions.get()).values
      .map((v) => `${String(v.labels.phase)}/${String(v.labels.reason)}=${v.value}`)
      .sort();
    assert.deepEqual(transitions, ['Completed/=1', 'Draining/=1', 'Failed/DrainTimeout=1']);
    const h = (await m.nodeUpgradeDuration.get()).values;
    assert.equal(h.find((v) => v.metricName === 'kangal_patch_node_upgrade_duration_seconds_count')?.value, 1);
    assert.equal(h.find((v) => v.metricName === 'kangal_patch_node_upgrade_duration_seconds_sum')?.value, 200);
  });

  it('the etcd gate: a wait counted once when the reason becomes WaitingForEtcd, by stage; nodes waiting now and members by health read from the caches', async function () {
    const m = createMetrics();
    const o = jobMetricsObserver(m);
    const waiting = (stage: 'beforeCordon' | 'afterReboot'): PatchJobStatus => ({
      phase: 'Pending',
      reason: 'WaitingForEtcd',
      etcd: { wait: { stage, startTime: at(0), deadline: at(900) } },
    });
    o.reasonChanged({ phase: 'Pending' }, waiting('beforeCordon'));
    o.reasonChanged(
      { phase: 'Rebooting', reason: 'WaitingForNodeReady' },
      { ...waiting('afterReboot'), phase: 'Rebooting' },
    );
    o.reasonChanged({ phase: 'Pending' }, { phase: 'Pending', reason: 'WaitingForSlot' }); // another reason: not an etcd wait
    const waits = (await m.etcdGateWaits.get()).values.map((v) => `${String(v.labels.stage)}=${v.value}`).sort();
    assert.deepEqual(waits, ['afterReboot=1', 'beforeCordon=1']);
    const now = etcdWaiting([
      job('a', 'cp-1', waiting('beforeCordon')),
      job('b', 'cp-2', { ...waiting('afterReboot'), phase: 'Failed' }),
      job('c', 'w-1', { phase: 'Draining' }),
    ]);
    assert.deepEqual(
      [...now],
      [
        ['beforeCordon', 1],
        ['afterReboot', 0],
      ],
      'a finished job no longer waits',
    );
    const withEtcd = {
      ...plan('p', 'InProgress'),
      status: {
        phase: 'InProgress' as const,
        etcd: {
          checkedTime: at(0),
          members: [
            { name: 'cp-1', healthy: true },
            { name: 'cp-2', healthy: false },
            { name: 'cp-3', healthy: true },
          ],
        },
      },
    };
    assert.deepEqual(etcdMembers([withEtcd, plan('q', 'InProgress')]), [{ plan: 'p', healthy: 2, unhealthy: 1 }]);
  });

  it('forge and Talos hooks count by label; queue depth is read at scrape time', async function () {
    const m = createMetrics();
    m.forgeRequest(201);
    m.forgeRequest(201);
    m.forgeRequest('error');
    m.talosCall('MachineService.Version', 'OK');
    let depth = 3;
    m.watchQueue('patchjob', () => depth);
    depth = 5;
    const text = await m.registry.metrics();
    assert.match(text, /^kangal_patch_forge_requests_total\{status="201"\} 2$/m);
    assert.match(text, /^kangal_patch_forge_requests_total\{status="error"\} 1$/m);
    assert.match(text, /^kangal_patch_talos_calls_total\{method="MachineService.Version",code="OK"\} 1$/m);
    assert.match(text, /^kangal_patch_workqueue_depth\{controller="patchjob"\} 5$/m);
  });
});

describe('telemetry: registry', function () {
  it('default metrics carry the prefix once (kangal_patch_process_*, not kangal_patch_process_process_*)', async function () {
    const names = (await createMetrics().registry.getMetricsAsJSON()).map((m) => m.name);
    assert.ok(names.includes('kangal_patch_process_resident_memory_bytes'), names.join(' '));
    assert.ok(names.includes('kangal_patch_nodejs_heap_size_used_bytes'));
    assert.deepEqual(
      names.filter((n) => n.includes('process_process')),
      [],
    );
  });

  it('cluster gauges follow the caches at every scrape (none before they synced); a deleted plan or node loses its series', async function () {
    const { registry } = createMetrics();
    let plans = [plan('a', 'InProgress')];
    let nodes = [node('n1', { unschedulable: true, cordonedBy: 'j1' }), node('n2')];
    const j1 = job('j1', 'n1', { phase: 'Draining', startTime: at(0), cordonedTime: at(0) });
    const jobs = [j1];
    let now = T0 + 60_000;
    let synced = false;
    registerClusterGauges(
      registry,
      {
        nodes: { isSynced: () => synced, list: () => nodes, get: () => undefined },
        patchJobs: { isSynced: () => true, list: () => jobs, get: (k) => (k === 'j1' ? j1 : undefined) },
        patchPlans: { isSynced: () => true, list: () => plans, get: () => undefined },
      },
      { now: () => now },
    );
    let text = await registry.metrics();
    assert.doesNotMatch(
      text,
      /^kangal_patch_(plan_phase|node_phase|node_cordoned_seconds)\{/m,
      'no series before the caches synced',
    );
    synced = true;
    text = await registry.metrics();
    assert.match(text, /^kangal_patch_plan_phase\{plan="a",phase="InProgress"\} 1$/m);
    assert.match(text, /^kangal_patch_node_phase\{phase="Draining"\} 1$/m);
    assert.match(text, /^kangal_patch_node_phase\{phase="Idle"\} 1$/m);
    assert.match(text, /^kangal_patch_node_cordoned_seconds\{node="n1"\} 60$/m);
    assert.doesNotMatch(
      text,
      /^kangal_patch_node_cordoned_seconds\{node="n2"\}/m,
      'a node not cordoned by us has no series',
    );

    plans = [plan('b', 'Completed')];
    nodes = [node('n1')];
    now += 1000;
    text = await registry.metrics();
    assert.doesNotMatch(text, /plan="a"/);
    assert.match(text, /^kangal_patch_plan_phase\{plan="b",phase="Completed"\} 1$/m);
    assert.doesNotMatch(text, /node="n2"/);
    assert.doesNotMatch(text, /^kangal_patch_node_cordoned_seconds\{node="n1"\}/m, 'uncordoned: its series goes away');
  });

  it('pod cache gauges count each cache and the watched nodes at every scrape', async function () {
    const { registry } = createMetrics();
    let nodePods = 7;
    let watched = ['w1'];
    registerPodCacheGauges(registry, {
      staticPods: { list: () => [1, 2, 3] },
      hookPods: { list: () => [] },
      nodePods: { size: () => nodePods, nodes: () => watched },
    });
    let text = await registry.metrics();
    assert.match(text, /^kangal_patch_cached_pods\{cache="static"\} 3$/m);
    assert.match(text, /^kangal_patch_cached_pods\{cache="hook"\} 0$/m);
    assert.match(text, /^kangal_patch_cached_pods\{cache="node"\} 7$/m);
    assert.match(text, /^kangal_patch_pod_watched_nodes 1$/m);
    nodePods = 0;
    watched = [];
    text = await registry.metrics();
    assert.match(text, /^kangal_patch_cached_pods\{cache="node"\} 0$/m);
    assert.match(text, /^kangal_patch_pod_watched_nodes 0$/m);
  });
});
