// `npm run bench -- scale [--sizes=100,1000,5000] [--sources=100]`: one plan over each fleet size
// (workers, ~10 pods each behind PDBs, a DaemonSet), concurrency min(50, workers/10), fast simulated
// upgrades, through the compiled `kangal-patch run` (what the image runs); the sizes in --sources
// run again from the sources through tsx. The controller runs with the image's environment
// (test/lab/image-env.ts), its heap percentage resolved for a pod memory limit of --memory-limit=
// (MiB or 1Gi/512Mi; default the Deployment's 512Mi). --node-options=... replaces the shipped
// NODE_OPTIONS for an A/B (`--node-options=` runs with none); --env=K=V,K2=V2 adds to the environment
// (e.g. glibc's MALLOC_* tunables). Prints one table, writes test/bench/results/<date>.json.
// The largest size's controller also polls the lab's plans repository (5 s) and, once a round of
// its rollout Completed, times PUSH_PROBES plan pushes → applied with the jobs in flight (those
// five small plans are in that size's per-node figures, a few requests in thousands).
// Goals (issue 18): 5,000 nodes within 200 MB RSS, cost per node flat from 100 to 5,000, no-op
// writes 0, evictions and Events per node bounded by the pods on it, observer violations 0, push →
// applied under load ≤ poll + 2 s.
import { DEFAULT_MEMORY_LIMIT_MIB } from '../lab/image-env.js';
import { recordResult } from './results.js';
import { BIG, startScaleLab } from './scale/fleet.js';
import { sharedScaleLab } from './scale/shared.js';
import { measureRollout, type RolloutFigures } from './scale/measure.js';

/** Plan files pushed while the largest rollout runs (git push → applied under load). */
const PUSH_PROBES = 5;

const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const sizes = (text: string): number[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(Number);
/** `512`, `512Mi` or `1Gi` → MiB. */
function mebibytes(text: string): number {
  const m = /^([0-9]+)(Mi|Gi)?$/.exec(text.trim());
  if (!m) throw new Error(`--memory-limit=${text}: MiB, or a quantity such as 512Mi or 1Gi`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
}

export async function run(): Promise<void> {
  const runs: (RolloutFigures & { labStartSeconds: number })[] = [];
  const dist = sizes(arg('sizes', `100,1000,${BIG}`));
  const memoryLimitMiB = mebibytes(arg('memory-limit', String(DEFAULT_MEMORY_LIMIT_MIB)));
  // Absent: the shipped NODE_OPTIONS; given (even empty): those instead.
  const nodeOptions = process.argv.some((a) => a.startsWith('--node-options=')) ? arg('node-options', '') : undefined;
  const env = Object.fromEntries(
    arg('env', '')
      .split(',')
      .filter((kv) => kv.includes('='))
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const plan = [
    ...dist.map((n) => ({ n, entry: 'dist' as const })),
    ...sizes(arg('sources', '100')).map((n) => ({ n, entry: 'sources' as const })),
  ];
  for (const { n, entry } of plan) {
    // The biggest lab stays up for the idle bench; the others go when measured.
    const shared = entry === 'dist' && n === Math.max(...dist);
    const { lab, startSeconds } = shared ? await sharedScaleLab(n).lab : await startScaleLab(n);
    console.log(`${n} workers (+1 control plane, ${n * 10 + 1} pods): lab ready in ${startSeconds.toFixed(1)} s`);
    try {
      const figures = await measureRollout(lab, {
        workers: n,
        concurrency: Math.max(1, Math.min(50, Math.floor(n / 10))),
        plan: `scale-${n}${entry === 'sources' ? '-tsx' : ''}`,
        entry,
        timeoutMs: 90 * 60_000,
        memoryLimitMiB,
        ...(nodeOptions !== undefined ? { nodeOptions } : {}),
        env,
        ...(shared ? { pushProbe: { pushes: PUSH_PROBES } } : {}),
      });
      runs.push({ ...figures, labStartSeconds: Number(startSeconds.toFixed(1)) });
      console.log(JSON.stringify(figures));
    } finally {
      if (!shared) await lab.stop();
    }
  }
  printTable(runs);
  // Keyed by the sizes and the settings: a run of other sizes or settings the same day does not replace this one.
  const settings = settingsOf(runs, nodeOptions, memoryLimitMiB, env);
  const sizesRun = runs.map((r) => `${r.workers}${r.entry === 'sources' ? ' (tsx)' : ''}`).join(', ');
  console.log(`results: ${recordResult(`scale (${sizesRun} workers${settings ? `; ${settings}` : ''})`, { runs })}`);
}

/** The controller's settings as the result's key names them: its heap (as shipped, or the NODE_OPTIONS given) and the added environment. */
function settingsOf(
  runs: readonly RolloutFigures[],
  nodeOptions: string | undefined,
  memoryLimitMiB: number,
  env: Record<string, string>,
): string {
  const ran = runs[0]?.nodeOptions ?? '';
  const heap =
    nodeOptions === undefined
      ? `as shipped at a ${memoryLimitMiB} MiB limit: NODE_OPTIONS=${ran}`
      : `NODE_OPTIONS=${ran || '(none)'} instead of the shipped`;
  return [heap, ...Object.entries(env).map(([k, v]) => `${k}=${v}`)].join(' ');
}

function printTable(runs: (RolloutFigures & { labStartSeconds: number })[]): void {
  for (const r of runs.slice(0, 1))
    console.log(
      `controller NODE_OPTIONS=${r.nodeOptions || '(none)'} (pod memory limit ${r.memoryLimitMiB} MiB; heap limit ${r.heapLimitMiB} MiB)`,
    );
  for (const r of runs.slice(0, 1))
    if (Object.keys(r.env).length > 0) console.log(`controller environment ${JSON.stringify(r.env)}`);
  const figure = (f: { p50: number; p99: number } | undefined): string => (f === undefined ? '—' : `${f.p50}/${f.p99}`);
  const passes = (r: RolloutFigures, controller: string): string => {
    const p = r.passesPerNode[controller];
    return p ? `${p.passes} (${p.meanMs})` : '—';
  };
  const rows: [string, (r: RolloutFigures & { labStartSeconds: number }) => string, string][] = [
    ['lab start (s)', (r) => String(r.labStartSeconds), ''],
    ['plan phase', (r) => r.phase, 'Completed'],
    ['controller peak RSS (MiB)', (r) => String(r.peakRssMiB), '≤ 200 MB at 5,000'],
    [
      '  at the highest sample: anon/file/shmem',
      (r) => `${r.peakRssSplitMiB.anon}/${r.peakRssSplitMiB.file}/${r.peakRssSplitMiB.shmem}`,
      '',
    ],
    ['controller peak heap used (MiB)', (r) => String(r.peakHeapMiB), ''],
    ['controller heap limit (MiB)', (r) => String(r.heapLimitMiB), ''],
    ['GC pauses over the rollout, s (ms per node; wall clock)', (r) => `${r.gc.seconds} (${r.gc.msPerNode})`, ''],
    ['controller start to leading (s)', (r) => r.controllerStartSeconds.toFixed(1), ''],
    ['preflight: Preflighting → InProgress (s)', (r) => r.preflightSeconds.toFixed(2), ''],
    ['GET secrets per node (controller)', (r) => String(r.requestsPerNode['GET secrets'] ?? 0), ''],
    ['CPU s per node upgraded', (r) => r.cpuSecondsPerNode.toFixed(3), 'flat'],
    [
      'machine CPU s per node: controller/apiserver/etcd/kcm/lab',
      (r) =>
        ['controller', 'kube-apiserver', 'etcd', 'kube-controller-manager', 'lab simulators and observer']
          .map((p) => (r.machineCpu.perNode[p] ?? NaN).toFixed(3))
          .join('/'),
      '',
    ],
    ['  cores busy over the rollout (of 2)', (r) => r.machineCpu.coresBusy.toFixed(2), ''],
    ['API requests per node (controller)', (r) => r.requestsPerNodeTotal.toFixed(1), 'flat'],
    ['watch events per node (controller)', (r) => r.watchEventsPerNode.toFixed(1), 'flat'],
    ['TLS connections opened per node (controller → apiserver)', (r) => r.tlsConnectionsPerNode.toFixed(2), ''],
    [
      'Talos calls per node (controller)',
      (r) =>
        Object.values(r.talosCallsPerNode.controllerMetrics)
          .reduce((a, b) => a + b, 0)
          .toFixed(2),
      'flat',
    ],
    ['plan passes per node (mean ms)', (r) => passes(r, 'patchplan'), ''],
    ['job passes per node (mean ms)', (r) => passes(r, 'patchjob'), ''],
    ['makespan (s)', (r) => r.makespanSeconds.toFixed(0), ''],
    ['makespan / Σ ceil(n/c)·T', (r) => r.makespanRatio.toFixed(3), '≤ 1.03'],
    ['slot freed → next Lease p50/p99 (ms)', (r) => figure(r.slotFreedToNextLeaseMs), ''],
    ['slot freed → next PatchJob created p50/p99 (ms)', (r) => figure(r.slotFreedToJobCreatedMs), 'p99 ≤ 250'],
    ['slot freed → next PatchJob Pending p50/p99 (ms)', (r) => figure(r.slotFreedToNextJobMs), ''],
    ['PatchJob created → Pending p50/p99 (ms)', (r) => figure(r.jobCreatedToPendingMs), ''],
    [
      'Ready on target → Completed p50/p99 (ms)',
      (r) => `${r.readyToCompletedMs.p50}/${r.readyToCompletedMs.p99}`,
      'p99 ≤ 250',
    ],
    ['PatchJob created → Completed p50/p99 (ms)', (r) => figure(r.jobCreatedToEndMs), ''],
    ['node cordoned → uncordoned p50/p99 (ms)', (r) => figure(r.cordonedMs), ''],
    [
      'git push → applied during the rollout p50/max (ms; jobs in flight)',
      (r) =>
        r.pushToAppliedUnderLoadMs
          ? `${r.pushToAppliedUnderLoadMs.p50}/${r.pushToAppliedUnderLoadMs.max} (${r.pushToAppliedUnderLoadMs.jobsInFlight.join(',')})`
          : '—',
      '≤ poll 5 s + 2 s',
    ],
    ['no-op writes', (r) => String(Object.values(r.noOpWrites).reduce((a, b) => a + b, 0)), '0'],
    ['evictions per node (429s)', (r) => `${r.evictionsPerNode} (${r.evictionsRejected})`, `≤ pods per node`],
    ['Events per node', (r) => String(r.eventsPerNode), '≤ pods per node'],
    ['observer violations', (r) => String(r.violations.length), '0'],
  ];
  const head = ['', ...runs.map((r) => `${r.workers}${r.entry === 'sources' ? ' (tsx)' : ''}`), 'goal'];
  const table = [head, ...rows.map(([name, f, goal]) => [name, ...runs.map(f), goal])];
  const widths = head.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length)));
  for (const row of table) console.log(row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  '));
  for (const r of runs) {
    console.log(`\n${r.workers} ${r.entry}: requests per node ${JSON.stringify(r.requestsPerNode)}`);
    console.log(`  apiserver (all clients) per node ${JSON.stringify(r.apiserverRequestsPerNode)}`);
    console.log(
      `  Talos per node: simulator ${JSON.stringify(r.talosCallsPerNode.simulatorRecord)}, controller ${JSON.stringify(r.talosCallsPerNode.controllerMetrics)}; no-op writes ${JSON.stringify(r.noOpWrites)}`,
    );
    if (r.violations.length > 0)
      console.log(
        `  violations: ${r.violations.slice(0, 10).join('; ')}${r.violations.length > 10 ? ` (+${r.violations.length - 10})` : ''}`,
      );
  }
}
