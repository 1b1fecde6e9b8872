// `npm run bench -- report [--nodes=5000] [--commits=8]`: what one rollout report costs the
// controller for a plan of that many nodes: the render (Markdown + the YAML twin, what the report
// pass does once per interval while the plan runs) in CPU ms and the size of the files; then the
// commits the report writer makes of it as the rollout moves (BranchWriter against the lab forge's
// real git smart-HTTP server): CPU ms and heap per commit, and what each fetched.
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { contentDigest, renderReport, type BeforeVersions } from '../../controller/gitops/report/render.js';
import type { JobView, PlanView } from '../../controller/kube/views.js';
import { BranchWriter } from '../../controller/gitops/write/index.js';
import { startForge } from '../lab/forge/index.js';
import { testContext } from '../support/op-context.js';
import { recordResult } from './results.js';
import { patchJobSpec } from '../../schemas/patchjob.js';

const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const START = Date.parse('2026-12-03T10:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString();

/** A finished job as the scale bench's plan leaves it: every field a Completed legacy-flow job carries. */
function finishedJob(i: number, done = true): JobView {
  const node = `worker-${i}`;
  const begun = START + i * 400;
  const spec = patchJobSpec.parse({
    nodeName: node,
    patchPlanRef: 'scale',
    group: 'fleet',
    target: { talosVersion: 'v1.13.2' },
    talosConfig: { secretRef: { name: 'talosconfig' } },
  });
  return {
    name: `scale-${node}`,
    uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    resourceVersion: String(1000 + i),
    generation: 1,
    labels: {},
    spec,
    specError: undefined,
    created: begun,
    deleting: false,
    status: !done
      ? {
          phase: 'Pending',
          reason: 'WaitingForSlot',
          message: `waiting for a slot of group fleet`,
          initialTalosVersion: 'v1.12.4',
          currentTalosVersion: 'v1.12.4',
          targetTalosVersion: 'v1.13.2',
        }
      : {
          phase: 'Completed',
          reason: 'Upgraded',
          message: `node ${node} upgraded from v1.12.4 to v1.13.2`,
          startTime: iso(begun),
          phaseStartTime: iso(begun + 9_000),
          completionTime: iso(begun + 9_000),
          initialTalosVersion: 'v1.12.4',
          currentTalosVersion: 'v1.13.2',
          targetTalosVersion: 'v1.13.2',
          flow: 'legacy',
          installerImage: 'registry.lab:5000/siderolabs/installer:v1.13.2',
          initialBootID: `boot-${i}-a`,
          currentBootID: `boot-${i}-b`,
          cordonedTime: iso(begun + 100),
          uncordonedTime: iso(begun + 9_100),
          conditions: [
            {
              type: 'NodeReleased',
              status: 'True',
              reason: 'Released',
              message: `node ${node} given back and its slot freed`,
              lastTransitionTime: iso(begun + 9_200),
            },
          ],
        },
  };
}

function plan(nodes: number): PlanView {
  return {
    name: 'scale',
    uid: 'plan-uid',
    resourceVersion: '1',
    generation: 1,
    labels: {},
    annotations: {},
    finalizers: [],
    spec: undefined,
    specError: undefined,
    created: START,
    deleting: false,
    status: {
      phase: 'InProgress',
      startTime: iso(START),
      totalNodes: nodes,
      completedNodes: nodes,
      runningNodes: 0,
      pendingNodes: 0,
      failedNodes: 0,
      groups: [
        {
          name: 'fleet',
          concurrency: 50,
          active: 0,
          total: nodes,
          pending: 0,
          running: 0,
          completed: nodes,
          failed: 0,
        },
      ],
    },
  };
}

export async function run(): Promise<void> {
  const nodes = Number(arg('nodes', '5000'));
  console.log(
    `load average: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const jobs = Array.from({ length: nodes }, (_, i) => finishedJob(i));
  const p = plan(nodes);
  const before = new Map<string, BeforeVersions>();
  const settings = { cluster: 'lab', blobUrlBase: undefined };
  const cpu = (fn: () => void): number => {
    const start = process.cpuUsage();
    fn();
    const used = process.cpuUsage(start);
    return (used.user + used.system) / 1000;
  };
  let files = renderReport({ plan: p, jobs, before, settings });
  const first = cpu(() => {
    files = renderReport({ plan: p, jobs, before, settings });
  });
  const renders = Array.from({ length: 5 }, () =>
    cpu(() => {
      files = renderReport({ plan: p, jobs, before, settings });
    }),
  );
  const digest = cpu(() => contentDigest(files));
  const wallStart = performance.now();
  files = renderReport({ plan: p, jobs, before, settings });
  const wall = performance.now() - wallStart;
  const kib = (s: string): string => (Buffer.byteLength(s) / 1024).toFixed(0);
  renders.sort((a, b) => a - b);
  console.log(`report of ${nodes} finished jobs: Markdown ${kib(files.markdown)} KiB, YAML ${kib(files.yaml)} KiB`);
  console.log(
    `render CPU ms: second ${first.toFixed(0)}, then median ${renders[2]?.toFixed(0)} (min ${renders[0]?.toFixed(0)}, max ${renders[4]?.toFixed(0)}) of 5; wall ${wall.toFixed(0)} ms; digest ${digest.toFixed(1)} ms`,
  );
  const commits = await commitCost(nodes, Number(arg('commits', '8')));
  const figures = {
    nodes,
    markdownBytes: Buffer.byteLength(files.markdown),
    yamlBytes: Buffer.byteLength(files.yaml),
    renderCpuMs: { second: first, sorted: renders },
    renderWallMs: wall,
    digestCpuMs: digest,
    commits,
    loadavg: loadavg(),
  };
  console.log(`results: ${recordResult(`report (${nodes} jobs)`, figures)}`);
}

interface CommitFigures {
  cpuMs: number;
  wallMs: number;
  heapUsedMiB: number;
  gitRequests: string[];
}

/**
 * `commits` successive report commits on one branch, each with `nodes / commits` more jobs finished,
 * as the writer makes them while a plan rolls out. CPU is this process's (the writer runs in the
 * controller's process; the lab's git server is a child process, not counted).
 */
async function commitCost(nodes: number, commits: number): Promise<CommitFigures[]> {
  const forge = await startForge();
  const cacheDir = await mkdtemp(join(tmpdir(), 'kangal-report-bench-'));
  try {
    const { cloneUrl } = await forge.createRepo('acme', 'plans', { files: { 'README.md': '# plans\n' } });
    const writer = new BranchWriter({
      url: cloneUrl,
      cacheDir,
      token: () => Promise.resolve(forge.token),
      tokenSource: 'bench',
      author: { name: 'KangalPatch', email: 'kangal-patch@lab.invalid' },
    });
    const out: CommitFigures[] = [];
    for (let c = 1; c <= commits; c++) {
      const finished = Math.round((nodes * c) / commits);
      const jobs = Array.from({ length: nodes }, (_, i) => finishedJob(i, i < finished));
      const files = renderReport({
        plan: plan(nodes),
        jobs,
        before: new Map(),
        settings: { cluster: 'lab', blobUrlBase: undefined },
      });
      const requestsBefore = forge.gitRequests.length;
      const cpuStart = process.cpuUsage();
      const wallStart = performance.now();
      const result = await writer.write(testContext({ timeoutMs: 300_000 }), {
        branch: 'kangal-patch/lab/report/scale-1',
        base: 'main',
        files: { [files.markdownPath]: files.markdown, [files.yamlPath]: files.yaml },
        message: `report ${c}`,
      });
      const wallMs = performance.now() - wallStart;
      const used = process.cpuUsage(cpuStart);
      if (result.outcome !== 'pushed') throw new Error(`report commit ${c}: ${result.outcome}`);
      const figures = {
        cpuMs: (used.user + used.system) / 1000,
        wallMs,
        heapUsedMiB: process.memoryUsage().heapUsed / 2 ** 20,
        gitRequests: forge.gitRequests
          .slice(requestsBefore)
          .map((r) => `${r.method} ${r.path.split('/').pop() ?? ''}${r.command ? ` ${r.command}` : ''}`),
      };
      console.log(
        `commit ${c} (${finished} of ${nodes} finished): CPU ${figures.cpuMs.toFixed(0)} ms, wall ${wallMs.toFixed(0)} ms, heap used ${figures.heapUsedMiB.toFixed(0)} MiB; git: ${figures.gitRequests.join(', ')}`,
      );
      out.push(figures);
    }
    return out;
  } finally {
    await forge.stop();
    await rm(cacheDir, { recursive: true, force: true });
  }
}
