// One chaos run: a fresh lab for the scenario (control plane, fleet, Talos simulator behind
// switchable TCP endpoints, registry, interposer, forge for Git delivery), the compiled controller
// (one replica, or two with leader election), the plan delivered by kubectl or Git, the fault
// schedule played against the lab, then the checker. Returns what happened and every violation.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { stringify } from 'yaml';
import { startJobLab, type Controller, type JobLab, type JobLabOptions } from '../e2e/support/job-lab.js';
import type { BeforeForward, InterposedRequest } from '../lab/cluster/interposer.js';
import { controllerEnv } from '../lab/image-env.js';
import type { WorkloadSpec } from '../lab/fleet/index.js';
import { switchableProxy, type SwitchableProxy } from '../lab/proxy.js';
import { runToEnd } from '../lab/process.js';
import { tcpProxy, type TcpProxy } from '../lab/tcp-proxy.js';
import { waitFor } from '../lab/wait.js';
import { checkRun, type RunFacts } from './checker.js';
import { concretePlan, PLAN, type ConcretePlan } from './fleet-plan.js';
import {
  describeScenario,
  KUBERNETES_FROM,
  STANDING_FAULTS,
  TALOS_TARGET,
  type Scenario,
  type ScheduledFault,
  type Trigger,
} from './scenario.js';

const ELECTION = [
  '--leader-elect',
  'true',
  '--leader-election-lease-duration',
  '4s',
  '--leader-election-renew-deadline',
  '3s',
  '--leader-election-retry-period',
  '500ms',
];

export interface RunResult {
  scenario: string;
  seed: number;
  wallMs: number;
  expectedPhase: string;
  finalPhase: string | undefined;
  /** Moment faults that fired (a trigger the run never reached does not fire), and the standing ones. */
  fired: string[];
  /** Controller replicas that exited by themselves (lost leadership) and were started again. */
  selfExits: number;
  violations: string[];
}

/** The controllers of a run: started and killed here, always with the run's current clock offset. */
class ControllerSet {
  readonly all: Controller[] = [];
  private readonly alive = new Set<Controller>();
  private count = 0;
  offsetMs = 0;
  constructor(
    private readonly lab: JobLab,
    private readonly args: () => string[],
    readonly replicas: number,
  ) {}

  start(): Controller {
    // The image's environment and heap settings (test/lab/image-env.ts), as a pod with the Deployment's limit runs it.
    const env: Record<string, string> = {
      ...controllerEnv(),
      ...(this.offsetMs !== 0 ? { KANGAL_PATCH_DEBUG_CLOCK_OFFSET: String(Math.round(this.offsetMs)) } : {}),
    };
    const c = this.lab.startController({
      name: `chaos-${++this.count}`,
      args: [...this.args(), ...(this.replicas > 1 ? ELECTION : [])],
      env,
    });
    this.all.push(c);
    this.alive.add(c);
    void c.process.exited.then(() => {
      this.alive.delete(c);
      // A replica that exits by itself (it lost its leadership: exit 1) is started again, as its
      // Deployment's kubelet would; one we killed or stopped is replaced by whoever did it.
      if (!this.ending && !this.killed.has(c)) {
        this.selfExits++;
        this.start();
      }
    });
    return c;
  }

  private readonly killed = new Set<Controller>();
  private ending = false;
  /** Replicas that exited by themselves and were started again. */
  selfExits = 0;

  private async kill(c: Controller): Promise<void> {
    this.killed.add(c);
    await c.kill();
  }

  startAll(): void {
    for (let i = 0; i < this.replicas; i++) this.start();
  }

  /** The replica acting now: the one leading, or the only one. */
  private acting(): Controller | undefined {
    const alive = [...this.alive];
    if (this.replicas === 1) return alive[0];
    return alive.find((c) => c.logs().some((l) => String(l['msg']).startsWith('leading'))) ?? alive[0];
  }

  /** SIGKILL of the acting replica (a crash: nothing cleaned up), and a fresh one in its place. */
  async killActing(): Promise<void> {
    const c = this.acting();
    if (c) await this.kill(c);
    this.start();
  }

  async restartAll(offsetMs: number): Promise<void> {
    for (const c of [...this.alive]) await this.kill(c);
    this.offsetMs = offsetMs;
    this.startAll();
  }

  async stopAll(): Promise<void> {
    this.ending = true;
    for (const c of [...this.alive]) await c.stop();
  }
}

interface Outages {
  talos: TcpProxy[];
  git: SwitchableProxy | undefined;
  api: SwitchableProxy | undefined;
}

function workloadsOf(s: Scenario, plan: ConcretePlan): WorkloadSpec[] {
  const w: WorkloadSpec[] = [];
  if (s.replicas > 0)
    w.push({ namespace: 'shop', name: 'web', kind: 'replicaset', replicas: s.replicas, pdb: { maxUnavailable: 1 } });
  if (plan.failing.has('pdb-blocked'))
    w.push({
      namespace: 'shop',
      name: 'blocked',
      kind: 'replicaset',
      replicas: 1,
      pdb: { minAvailable: 1 },
      nodeSelector: { 'chaos-pdb': 'blocked' },
    });
  return w;
}

/** A controller's write of a status subresource (PatchJob, PatchPlan). */
const isStatusWrite = (req: InterposedRequest): boolean =>
  (req.method === 'PUT' || req.method === 'PATCH') && req.path.split('?')[0]?.endsWith('/status') === true;

/** How many of the trigger's events the lab has seen so far. */
function triggerCount(lab: JobLab, t: Trigger, statusWrites: number): number {
  if (t.on === 'statusWrite') return statusWrites;
  // (PatchJob phases of the plan only; evictions of any pod; any call to the simulator)
  if (t.on === 'talosCall') return lab.talos.callLog().length;
  return lab.observer.events.filter((e) => e.kind === t.on).length;
}

function labOptions(s: Scenario, draft: ConcretePlan): JobLabOptions {
  const labels: Record<string, Record<string, string>> = Object.fromEntries(
    draft.nodes.map((n) => [n.name, { ...n.labels }]),
  );
  const blocked = draft.failing.get('pdb-blocked');
  if (blocked) labels[blocked] = { ...labels[blocked], 'chaos-pdb': 'blocked' };
  return {
    fleet: {
      nodes: s.nodes,
      controlPlanes: s.controlPlanes,
      talosVersion: 'v1.12.4',
      kubernetesVersion: KUBERNETES_FROM,
    },
    kubeProxy: s.kubernetes,
    talosVersions: Object.fromEntries(draft.nodes.map((n) => [n.name, n.talosVersion])),
    labels,
    images: [`siderolabs/installer:${TALOS_TARGET}`],
    workloads: workloadsOf(s, draft),
    interposer: true,
    plansRepo: s.delivery === 'git',
    secretsScan: false, // the checker scans (a leak is a violation of the run, not a failed stop)
  };
}

/** With Git delivery: the git server and forge behind switchable proxies; returns the controllers' GitOps flags. */
async function gitThroughProxies(lab: JobLab, outages: Outages): Promise<() => string[]> {
  const forge = lab.forge;
  if (!forge) return () => [];
  const base = lab.gitArgs({ pollInterval: '2s' });
  const cloneUrl = base[base.indexOf('--git-url') + 1] ?? '';
  const git = await switchableProxy(cloneUrl);
  const api = await switchableProxy(forge.apiUrl);
  outages.git = git;
  outages.api = api;
  return () => [
    ...lab.gitArgs({ pollInterval: '2s' }),
    '--git-url',
    git.rewrite(cloneUrl),
    '--forge',
    'github',
    '--forge-api-url',
    api.url,
  ];
}

/** The plan reaches the cluster as people deliver it: pushed to the plans repository, or `kubectl apply --server-side`. */
async function deliver(lab: JobLab, s: Scenario, plan: ConcretePlan): Promise<void> {
  if (s.delivery === 'git' && lab.plans) {
    await lab.plans.write(`plans/${PLAN}.yaml`, stringify(plan.doc));
    await lab.plans.commitAndPush('add the chaos plan');
    return;
  }
  const file = join(lab.cluster.dir, `${PLAN}.yaml`);
  writeFileSync(file, stringify(plan.doc));
  const r = await runToEnd(lab.cluster.kubectl, [
    '--kubeconfig',
    lab.cluster.kubeconfigPath,
    'apply',
    '--server-side',
    '-f',
    file,
  ]);
  if (r.code !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
}

export async function runScenario(s: Scenario, opts: { log?: (line: string) => void } = {}): Promise<RunResult> {
  const started = Date.now();
  const log = opts.log ?? ((): void => undefined);
  // The plan's names and labels first (the Talos endpoints are filled in once the proxies exist).
  const draft = concretePlan(s, started, []);
  const lab = await startJobLab(labOptions(s, draft));
  const since = (): string => `${((Date.now() - started) / 1000).toFixed(1)} s`;
  log(`  lab ready at ${since()}`);
  const outages: Outages = { talos: [], git: undefined, api: undefined };
  let controllers: ControllerSet | undefined;
  const fired: string[] = [];
  try {
    await armStandingFaults(lab, s, outages, fired);
    const plan = concretePlan(
      s,
      started,
      outages.talos.map((p) => p.endpoint),
    );

    const args = s.delivery === 'git' ? await gitThroughProxies(lab, outages) : () => [];
    armNodeFaults(lab, plan, fired);

    controllers = new ControllerSet(lab, args, s.faults.some((f) => f.kind === 'leader-kill') ? 2 : 1);
    if (plan.window) controllers.offsetMs = plan.window.offsetBefore;
    controllers.startAll();

    await deliver(lab, s, plan);
    log(`  plan delivered at ${since()}`);

    let jumpAt: number | undefined;
    if (plan.window) {
      // The plan waits for its window (two hours away in the controller's time), then the clock jumps past the opening.
      await lab.waitForPlan(
        PLAN,
        'waiting for the window',
        (st) => st['reason'] === 'OutsideMaintenanceWindow',
        90_000,
      );
      jumpAt = Date.now();
      await controllers.restartAll(plan.window.opening + 5_000 - Date.now());
      fired.push('clock-jump');
    }

    const faults = playMomentFaults({
      s,
      plan,
      lab,
      controllers,
      outages,
      fired,
      log: (l) => log(`${l} (${Date.now() - started} ms into the run)`),
    });

    const { finalStatus, violations } = await planEnd(lab, s, plan);
    log(`  plan ${String(finalStatus?.['phase'])} at ${since()}`);
    await faults.stop();

    const facts: RunFacts = { scenario: s, plan, lab, controllers: controllers.all, finalStatus, jumpAt };
    violations.push(...(await checkRun(facts)));
    log(`  checked at ${since()}`);
    if (violations.length > 0) keepEvidence(s, lab, controllers.all, violations);
    return {
      scenario: describeScenario(s),
      seed: s.seed,
      wallMs: Date.now() - started,
      expectedPhase: plan.expectedPhase,
      finalPhase: finalStatus?.['phase'] as string | undefined,
      fired,
      selfExits: controllers.selfExits,
      violations,
    };
  } finally {
    await tearDown(lab, outages, controllers);
  }
}

/** Standing faults on nodes (the PDB-blocked pod is in the lab's workloads already). */
function armNodeFaults(lab: JobLab, plan: ConcretePlan, fired: string[]): void {
  for (const [kind, node] of plan.failing) {
    if (kind === 'node-never-back') lab.talos.faults.set(node, { neverComesBack: true });
    if (kind === 'old-partition') lab.talos.faults.set(node, { bootsOldPartition: true });
    fired.push(kind);
  }
}

/** The controllers first, then the proxies in front of Talos and the forge, then the lab. */
async function tearDown(lab: JobLab, outages: Outages, controllers: ControllerSet | undefined): Promise<void> {
  await controllers?.stopAll();
  for (const p of outages.talos) await p.close();
  await outages.git?.close();
  await outages.api?.close();
  await lab.stop();
}

interface FaultPlay {
  s: Scenario;
  plan: ConcretePlan;
  lab: JobLab;
  controllers: ControllerSet;
  outages: Outages;
  fired: string[];
  log: (line: string) => void;
}

/**
 * Moment faults, each waiting for its trigger; `stop()` ends the waiting ones (the plan is done) and
 * resolves once every fault that started is over. The interposer's one hook is shared: it counts
 * status writes (and holds the one a kill lands in) and carries the write storms.
 */
function playMomentFaults({ s, plan, lab, controllers, outages, fired, log }: FaultPlay): {
  stop: () => Promise<void>;
} {
  const hooks = new Set<BeforeForward>();
  let statusWrites = 0;
  const killInWrite = new Map<number, () => Promise<void>>();
  lab.interposer?.setBeforeForward(async (req) => {
    if (isStatusWrite(req)) {
      statusWrites++;
      const kill = killInWrite.get(statusWrites);
      if (kill) await kill(); // the controller dies with this write in flight; the write still reaches the apiserver
    }
    for (const h of hooks) {
      const answer = await h(req);
      if (answer) return answer;
    }
    return undefined;
  });
  let done = false;
  const playing = s.faults.map(async (f, i) => {
    const t = f.trigger;
    const count = plan.triggerCounts[i];
    if (!t || count === undefined || STANDING_FAULTS.includes(f.kind)) return;
    if (t.on === 'statusWrite' && (f.kind === 'controller-kill' || f.kind === 'leader-kill')) {
      killInWrite.set(count, async () => {
        log(`  fault ${f.kind} inside status write ${count}`);
        fired.push(f.kind);
        await controllers.killActing();
      });
      return;
    }
    await waitFor(() => done || triggerCount(lab, t, statusWrites) >= count || undefined, {
      timeoutMs: 3_600_000,
      intervalMs: 10,
      description: `trigger of ${f.kind}`,
    });
    if (done) return;
    log(`  fault ${f.kind} after ${count} ${t.on}`);
    fired.push(f.kind);
    await inject(f, { lab, controllers, outages, hooks });
  });
  return {
    stop: async () => {
      done = true;
      await Promise.all(playing);
    },
  };
}

/** What the observer sees of a rollout moving: slots, jobs, cordons, boots, evictions (not the workloads' own pod churn). */
const PROGRESS: ReadonlySet<string> = new Set([
  'leaseCreated',
  'leaseDeleted',
  'jobPhase',
  'cordoned',
  'uncordoned',
  'booted',
  'podDeleting',
  'componentVersion',
]);
/**
 * A plan that shows no progress this long stalled: no rollout event in the observer's record and no
 * change of the plan's phase or reason. Longer than any wait a campaign plan has without one (drain
 * and reboot timeouts of 30 s, outages of seconds, a preflight retried after a minute).
 */
const STALL_MS = 180_000;

/**
 * Waits for the phase the scenario implies. The run fails when the plan stalls (STALL_MS without
 * progress) or is still not there at a generous cap from its size and faults; a deadline from the
 * size alone failed healthy runs that a loaded machine had only slowed down (seed 3001 at load 23).
 */
async function planEnd(
  lab: JobLab,
  s: Scenario,
  plan: ConcretePlan,
): Promise<{ finalStatus: Record<string, unknown> | undefined; violations: string[] }> {
  const capMs = planEndCapMs(s, plan);
  const reached = (st: Record<string, unknown> | undefined): boolean =>
    st?.['phase'] === plan.expectedPhase &&
    (plan.expectedPhase !== 'Failed' || st['reason'] === 'FailureBudgetExceeded');
  const started = Date.now();
  let lastProgress = started;
  let seenEvents = 0;
  let seenState = '';
  for (;;) {
    const st = (await lab.plan(PLAN).catch(() => undefined))?.status;
    if (reached(st)) return { finalStatus: st, violations: [] };
    const events = lab.observer.events.filter((e) => PROGRESS.has(e.kind)).length;
    const state = `${String(st?.['phase'])}/${String(st?.['reason'])}`;
    if (events !== seenEvents || state !== seenState) {
      seenEvents = events;
      seenState = state;
      lastProgress = Date.now();
    }
    const stalled = Date.now() - lastProgress >= STALL_MS;
    if (stalled || Date.now() - started >= capMs)
      return { finalStatus: st, violations: [notReached(st, plan, stalled, capMs)] };
    await delay(250);
  }
}

/** The generous cap on a run's wait for its plan's end, from its size and faults. */
function planEndCapMs(s: Scenario, plan: ConcretePlan): number {
  return (
    4 *
    (120_000 +
      s.nodes * 8_000 +
      s.faults.reduce((a, f) => a + f.downMs, 0) +
      (plan.failing.size > 0 ? 45_000 : 0) +
      (s.delivery === 'git' ? 30_000 : 0))
  );
}

/** The violation of a plan that stalled or hit the cap, with its last status. */
function notReached(
  st: Record<string, unknown> | undefined,
  plan: ConcretePlan,
  stalled: boolean,
  capMs: number,
): string {
  const why = `phase ${String(st?.['phase'])}, reason ${String(st?.['reason'])}: ${String(st?.['message'])}`;
  const what = stalled
    ? `made no progress for ${STALL_MS / 1000} s (no slot, job phase, cordon, boot or eviction seen by the observer, no plan phase or reason change)`
    : `did not reach ${plan.expectedPhase} within ${capMs} ms`;
  return `the plan ${what} while ${plan.expectedPhase} was expected: ${why}`;
}

/** Standing faults: one of two Talos endpoints down for good, nodes that never come back or boot their old partition. */
async function armStandingFaults(lab: JobLab, s: Scenario, outages: Outages, fired: string[]): Promise<void> {
  outages.talos.push(await tcpProxy(lab.talos.endpoint));
  if (s.faults.some((f) => f.kind === 'talos-endpoint-lost')) {
    const lost = outages.talos[0];
    outages.talos.push(await tcpProxy(lab.talos.endpoint));
    if (lost) lost.down = true;
    fired.push('talos-endpoint-lost');
  }
}

/** A failing run's controller logs, the observer's record, the simulator's calls and the fleet's background errors, kept for the post-mortem (the lab's own directory goes with it). */
function keepEvidence(s: Scenario, lab: JobLab, controllers: readonly Controller[], violations: string[]): void {
  const dir = join(tmpdir(), 'kangal-chaos-failures', `seed-${s.seed}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  for (const c of controllers) copyFileSync(c.process.logPath, join(dir, `${c.process.name}.log`));
  writeFileSync(join(dir, 'observer.json'), JSON.stringify(lab.observer.events, null, 1));
  writeFileSync(join(dir, 'talos-calls.json'), JSON.stringify(lab.talos.callLog(), null, 1));
  // The simulated kubelets' and controllers' failed steps: a lab fault shows here, not as the controller's.
  writeFileSync(join(dir, 'fleet-errors.txt'), lab.fleet.workloads.errors.map((e) => `${e}\n`).join(''));
  writeFileSync(join(dir, 'violations.txt'), `${describeScenario(s)}\n${violations.join('\n')}\n`);
  violations.push(`evidence kept in ${dir}`);
}

/** What a moment fault acts on: the lab, the controllers, the proxies it can take down, the interposer's hooks. */
interface FaultTargets {
  lab: JobLab;
  controllers: ControllerSet;
  outages: Outages;
  hooks: Set<BeforeForward>;
}

/** One moment fault, start to end (an outage is over when this resolves). */
async function inject(f: ScheduledFault, { lab, controllers, outages, hooks }: FaultTargets): Promise<void> {
  switch (f.kind) {
    case 'controller-kill':
    case 'leader-kill':
      return controllers.killActing();
    case 'apiserver-restart':
      return lab.cluster.restart('kube-apiserver', { downMs: f.downMs });
    case 'etcd-restart':
      return lab.cluster.restart('etcd', { downMs: f.downMs });
    case 'connection-cut':
      return cutConnections(lab, f.downMs);
    case 'write-storm': {
      // Every other write of the controllers is refused before the apiserver sees it.
      let n = 0;
      const storm: BeforeForward = (req) =>
        req.method !== 'GET' && n++ % 2 === 0 ? { status: f.status ?? 429, retryAfterSeconds: 1 } : undefined;
      hooks.add(storm);
      await delay(f.downMs);
      hooks.delete(storm);
      return;
    }
    case 'talos-down':
      return takeDown(
        outages.talos.filter((p) => !p.down),
        f.downMs,
      );
    case 'git-down':
      return takeDown(
        [outages.git, outages.api].filter((p): p is SwitchableProxy => p !== undefined),
        f.downMs,
      );
    case 'force-push':
      return forcePush(lab);
    case 'etcd-member-lag':
      return lagMember(lab, f);
    default:
      return;
  }
}

/** Every connection to the apiserver reset, and new ones too, for `ms`. */
async function cutConnections(lab: JobLab, ms: number): Promise<void> {
  const i = lab.interposer;
  if (!i) return;
  i.cut();
  await delay(ms);
  i.restore();
}

/** These proxies refuse their traffic for `ms`, then pass it again. */
async function takeDown(proxies: { down: boolean }[], ms: number): Promise<void> {
  for (const p of proxies) p.down = true;
  await delay(ms);
  for (const p of proxies) p.down = false;
}

/** The same plans rewritten into a new history: the tip commit replaced, pushed with --force. */
async function forcePush(lab: JobLab): Promise<void> {
  const wc = lab.plans;
  if (!wc) return;
  await wc.git(['commit', '--quiet', '--amend', '-m', 'the chaos plan (history rewritten)']);
  await wc.git(['push', '--quiet', '--force', 'origin', 'HEAD:main']);
}

/** One control-plane node's etcd member falls far behind the leader for the fault's duration. */
async function lagMember(lab: JobLab, f: ScheduledFault): Promise<void> {
  const members = lab.talos.etcd.members();
  const node = members[(f.nodeIndex ?? 0) % Math.max(1, members.length)]?.node;
  if (node === undefined) return;
  lab.talos.faults.set(node, { etcd: { lagBy: 100_000 } });
  await delay(f.downMs);
  lab.talos.faults.set(node, { etcd: {} });
}
