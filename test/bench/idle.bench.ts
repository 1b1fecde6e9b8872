// `npm run bench -- idle [--duration=300] [--nodes=5000]`: a controller with nothing to do —
// 5,000 nodes, 50 plan files in Git, every plan finished (each targets the version the nodes
// run) — watched for `duration` seconds: its API requests per minute (watches apart), Talos calls
// per minute (goal 0), CPU (goal < 1 % of a core), and each git poll of an unchanged head (goal:
// one ref advertisement, no pack; the window starts once the report writer has pushed every plan's final report). Then git push → plan applied, 5 pushes, poll 5 s (goal ≤ poll + 2 s),
// and the git pushes the controller made for those 5 commits (issue 18: a commit adding one plan must not rewrite the 50 finished plans' reports).
import { loadavg } from 'node:os';
import type { JobLab } from '../e2e/support/job-lab.js';
import type { GitRequest } from '../lab/forge/index.js';
import type { WorkingCopy } from '../lab/forge/working-copy.js';
import { controllerEnv } from '../lab/image-env.js';
import { waitFor } from '../lab/wait.js';
import { recordResult } from './results.js';
import { requestKind, tally } from './scale/api-counts.js';
import { BIG } from './scale/fleet.js';
import { pct, planPhase } from './scale/measure.js';
import { nothingToDoPlan, timePushToApplied } from './scale/push-probe.js';
import { cpuSeconds, memoryMiB } from './scale/sampler.js';
import { sharedScaleLab, sharedScaleLabSizes } from './scale/shared.js';

const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const PLAN_FILES = 50;
const PUSHES = 5;
const POLL = '5s';

/**
 * The forge's record of the window. Protocol v2: a poll of an unchanged head is GET info/refs + POST
 * ls-refs; any other POST (a v2 `fetch`, or a v0/v1 upload-pack with wants) asked for a pack.
 */
function gitFigures(git: readonly GitRequest[], minutes: number) {
  const refAdverts = git.filter((g) => g.method === 'GET' && g.path.includes('/info/refs')).length;
  const posts = git.filter((g) => g.method === 'POST' && g.path.endsWith('/git-upload-pack'));
  const lsRefs = posts.filter((g) => g.command === 'ls-refs').length;
  return {
    gitPolls: refAdverts,
    gitLsRefs: lsRefs,
    gitPollIntervalS: lsRefs === 0 ? NaN : Number(((minutes * 60) / lsRefs).toFixed(2)),
    gitPacksFetched: posts.length - lsRefs,
    gitPushes: receivePacks(git),
    gitRequestsPerPoll: refAdverts === 0 ? NaN : Number((git.length / refAdverts).toFixed(2)),
  };
}

/**
 * True once every plan's report branch (`kangal-patch/lab/report/<plan>-<rollout>`) holds a report
 * whose phase is Completed and, when `commitOf` is given, whose source commit is the one it returns
 * for that plan (the report caught up with the plan's annotations).
 */
async function reportsSettled(
  plans: WorkingCopy,
  names: readonly string[],
  commitOf?: (name: string) => Promise<string | undefined>,
): Promise<true | undefined> {
  await plans.git([
    'fetch',
    '--quiet',
    '--prune',
    'origin',
    '+refs/heads/kangal-patch/*:refs/remotes/origin/kangal-patch/*',
  ]);
  const refs = (
    await plans.git(['for-each-ref', '--format=%(refname:short)', 'refs/remotes/origin/kangal-patch/lab/report/'])
  )
    .split('\n')
    .filter((r) => r !== '');
  for (const name of names) {
    const ref = refs.find((r) => r.startsWith(`origin/kangal-patch/lab/report/${name}-`));
    if (ref === undefined) return undefined;
    const yaml = await plans.git(['show', `${ref}:status/lab/${name}.yaml`]).catch(() => '');
    if (!/^phase: Completed$/m.test(yaml)) return undefined;
    const want = commitOf && (await commitOf(name));
    if (commitOf && (want === undefined || !new RegExp(`^  commit: ${want}$`, 'm').test(yaml))) return undefined;
  }
  return true;
}

/**
 * The commit a plan's report should name: its spec-commit annotation, else (a controller from before
 * it existed) its source-commit. Read from the cluster, so the same bench measures both.
 */
async function reportCommitOf(lab: JobLab, name: string): Promise<string | undefined> {
  const annotations = (await lab.plan(name))?.metadata.annotations as Record<string, string> | undefined;
  return annotations?.['kangalpatch.ozalp.dk/spec-commit'] ?? annotations?.['kangalpatch.ozalp.dk/source-commit'];
}

/** The 1-minute load average (the machine is shared: every figure is read next to it). */
const load1 = (): number => loadavg()[0] ?? NaN;

const receivePacks = (git: readonly GitRequest[]): number =>
  git.filter((g) => g.method === 'POST' && g.path.endsWith('/git-receive-pack')).length;

/**
 * git push → plan applied (the controller's apply of the new plan, as the interposer saw it arrive),
 * PUSHES times; then the git pushes the controller made for those commits: every receive-pack from
 * the first push until each report (the finished plans' and the pushed ones') names the commit the
 * controller says it should, less the bench's own pushes. Each pushed plan's own report is 1 or 2.
 */
async function measurePushes(
  lab: JobLab,
  plans: WorkingCopy,
  names: readonly string[],
  planDoc: (name: string, k: number) => string,
) {
  const pushToApplied: number[] = [];
  const pushesFrom = lab.forge?.gitRequests.length ?? 0;
  const loadAtPushes = load1();
  const pushed = Array.from({ length: PUSHES }, (_, k) => `pushed-${k + 1}`);
  for (const [k, name] of pushed.entries())
    pushToApplied.push(await timePushToApplied(lab, plans, name, planDoc(name, names.length + k)));
  await waitFor(() => reportsSettled(plans, [...names, ...pushed], (name) => reportCommitOf(lab, name)), {
    timeoutMs: 30 * 60_000,
    intervalMs: 5000,
    description: 'every report caught up with its plan',
  });
  const controllerPushes = receivePacks((lab.forge?.gitRequests ?? []).slice(pushesFrom)) - PUSHES;
  return { pushToApplied, controllerPushes, loadAtPushes };
}

/** The idle window: `durationS` seconds of the controller's API requests, git requests, Talos calls and CPU. */
async function idleWindow(lab: JobLab, pid: number, durationS: number) {
  const from = Date.now();
  const loadAtStart = load1();
  const exchanges0 = lab.interposer?.exchanges.length ?? 0;
  const git0 = lab.forge?.gitRequests.length ?? 0;
  const talos0 = lab.talos.callLog().length;
  const cpu0 = cpuSeconds(pid);
  await waitFor(() => Date.now() - from >= durationS * 1000 || undefined, {
    timeoutMs: durationS * 1000 + 60_000,
    intervalMs: 1000,
    description: 'idle window',
  });
  const minutes = (Date.now() - from) / 60_000;
  const cpu = cpuSeconds(pid) - cpu0;
  const during = (lab.interposer?.exchanges ?? []).slice(exchanges0);
  const kinds = tally(during, (e) => requestKind(e.method, e.path));
  const watches = [...kinds].filter(([k]) => k.startsWith('WATCH ')).reduce((n, [, v]) => n + v, 0);
  const nonWatch = [...kinds].filter(([k]) => !k.startsWith('WATCH '));
  const git = gitFigures((lab.forge?.gitRequests ?? []).slice(git0), minutes);
  const talos = lab.talos.callLog().slice(talos0).length;
  return { minutes, loadAtStart, cpu, watches, nonWatch, git, talos };
}

export async function run(): Promise<void> {
  // The lab the scale bench left up (its largest size), else a fresh one of --nodes (default 5,000).
  const workers = Number(arg('nodes', String(sharedScaleLabSizes()[0] ?? BIG)));
  const durationS = Number(arg('duration', '300'));
  const { lab: started, reused } = sharedScaleLab(workers);
  const { lab, startSeconds } = await started;
  console.log(
    `${workers} workers: lab ${reused ? 'shared with the scale bench' : `ready in ${startSeconds.toFixed(1)} s`}`,
  );
  const plans = lab.plans;
  if (!plans) throw new Error('the idle bench needs the lab plans repository');
  // Every plan targets what the workers run now, on a node of its own: each finishes with nothing
  // to do. (Plans over the same nodes would refuse each other in preflight, NoConflictingPlan, and
  // plans over every node would each run a PatchJob per node before being finished.)
  const version = lab.fleet.node('worker-1')?.talosVersion ?? '';
  const planDoc = (name: string, k: number): string =>
    nothingToDoPlan(lab, name, `worker-${1 + (k % workers)}`, version);
  const names = Array.from({ length: PLAN_FILES }, (_, k) => `idle-${k + 1}`);
  for (const [k, name] of names.entries()) await plans.write(`plans/${name}.yaml`, planDoc(name, k));
  await plans.commitAndPush(`${PLAN_FILES} plans, all on ${version}`);

  // The image's environment, heap as a pod with the Deployment's memory limit has it (test/lab/image-env.ts): the RSS is the shipped one's.
  const controller = lab.startController({
    args: ['--log-level', 'info', ...lab.gitArgs({ pollInterval: POLL })],
    metrics: true,
    env: controllerEnv(),
  });
  const pid = controller.process.pid;
  try {
    await waitFor(
      async () => {
        for (const name of names) if ((await planPhase(lab, name)) !== 'Completed') return undefined;
        return true;
      },
      { timeoutMs: 30 * 60_000, intervalMs: 2000, description: `${PLAN_FILES} plans Completed` },
    );
    // The report writer (on with `--forge none` too: it pushes report branches without PRs) writes
    // one report per finished plan, each write a ref listing, a fetch and a push, rate-limited per
    // plan: that is writing, not polling. Settled once every plan's report branch holds its final
    // (Completed) report; the window starts then.
    await waitFor(() => reportsSettled(plans, names), {
      timeoutMs: 30 * 60_000,
      intervalMs: 5000,
      description: `${PLAN_FILES} final rollout reports pushed`,
    });
    const { minutes, loadAtStart, cpu, watches, nonWatch, git, talos } = await idleWindow(lab, pid, durationS);

    const pushes = await measurePushes(lab, plans, names, planDoc);
    const figures = {
      workers,
      planFiles: PLAN_FILES,
      minutes: Number(minutes.toFixed(2)),
      apiRequestsPerMinute: Number((nonWatch.reduce((n, [, v]) => n + v, 0) / minutes).toFixed(2)),
      apiRequestsByKind: Object.fromEntries(nonWatch),
      watchRequestsPerMinute: Number((watches / minutes).toFixed(2)),
      talosCallsPerMinute: Number((talos / minutes).toFixed(2)),
      cpuPercentOfCore: Number(((100 * cpu) / (minutes * 60)).toFixed(3)),
      rssMiB: Math.round(memoryMiB(pid).rss),
      ...git,
      pushToAppliedMs: {
        p50: pct(pushes.pushToApplied, 50),
        max: Math.max(...pushes.pushToApplied),
        n: pushes.pushToApplied.length,
        samples: pushes.pushToApplied,
      },
      controllerGitPushesPerCommit: Number((pushes.controllerPushes / PUSHES).toFixed(2)),
      loadAverage1m: { atWindowStart: loadAtStart, atPushes: pushes.loadAtPushes, atEnd: load1() },
    };
    console.log(
      `idle ${minutes.toFixed(1)} min over ${workers} nodes and ${PLAN_FILES} finished plans from Git (poll ${POLL}):`,
    );
    console.log(
      `  API requests/min (watches apart) ${figures.apiRequestsPerMinute} ${JSON.stringify(figures.apiRequestsByKind)}; watch (re)starts/min ${figures.watchRequestsPerMinute}`,
    );
    console.log(
      `  Talos calls/min ${figures.talosCallsPerMinute} (goal 0); controller CPU ${figures.cpuPercentOfCore} % of a core (goal < 1 %), RSS ${figures.rssMiB} MiB`,
    );
    console.log(
      `  git: ${figures.gitPolls} ref advertisements, ${figures.gitLsRefs} ls-refs (one per ${figures.gitPollIntervalS} s), ${figures.gitPacksFetched} other upload-pack POSTs (fetches), ${figures.gitPushes} pushes, ${figures.gitRequestsPerPoll} requests per poll (goal: 1 ref advertisement + 1 ls-refs, no pack)`,
    );
    console.log(
      `  git push → plan applied: ${pushes.pushToApplied.join(', ')} ms (goal ≤ poll 5 s + 2 s); controller git pushes per commit ${figures.controllerGitPushesPerCommit} (the pushed plan's own report: 1-2)`,
    );
    console.log(
      `  load average (1 min): ${figures.loadAverage1m.atWindowStart.toFixed(1)} at the window's start, ${figures.loadAverage1m.atPushes.toFixed(1)} at the pushes, ${figures.loadAverage1m.atEnd.toFixed(1)} at the end`,
    );
    console.log(`results: ${recordResult('idle', figures)}`);
  } finally {
    await controller.stop();
  }
}
