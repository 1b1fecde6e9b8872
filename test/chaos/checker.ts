// The independent checker of a chaos run. Its evidence is the lab's: the observer's own watches
// (Nodes, Pods, Leases, PatchJob phases) and the Talos simulator's record of every call. The
// controller's status is only compared against them (the plan's phase, the report), never trusted
// for a safety property. Returns one line per broken promise.
import { parse } from 'yaml';
import type { Controller, JobLab } from '../e2e/support/job-lab.js';
import { controllerOutputs, labSecrets, secretLeaks } from '../e2e/support/secrets-scan.js';
import { waitFor } from '../lab/wait.js';
import { PLAN, type ChaosNode, type ConcretePlan } from './fleet-plan.js';
import { KUBERNETES_TARGET, TALOS_TARGET, type Scenario } from './scenario.js';

export interface RunFacts {
  scenario: Scenario;
  plan: ConcretePlan;
  lab: JobLab;
  controllers: readonly Controller[];
  finalStatus: Record<string, unknown> | undefined;
  /** With clock-jump: when the controllers' clocks moved past the window's opening. */
  jumpAt: number | undefined;
}

const FINISHED = /(Completed|Failed)$/;

/** The last phase the observer saw for each PatchJob of the plan, by node. */
function lastJobPhases(lab: JobLab): Map<string, string> {
  const last = new Map<string, string>();
  for (const e of lab.observer.events) {
    if (e.kind !== 'jobPhase' || !e.detail.startsWith(`${PLAN}-`)) continue;
    last.set(e.node, e.detail.split(' ').at(-1) ?? '');
  }
  return last;
}

export async function checkRun(f: RunFacts): Promise<string[]> {
  const v = await settled(f);
  const status = f.finalStatus ?? {};
  if (pausedWithoutReason(status)) v.push('the plan is Paused without a reason and message');
  const phases = lastJobPhases(f.lab);
  for (const n of f.plan.nodes) v.push(...(n.selected ? checkNode(f, n, phases.get(n.name)) : untouched(f, n, phases)));
  v.push(...concurrencyAndOrder(f), ...(await groupsClaimed(f, phases)), ...pdbsHeld(f), ...windowHeld(f));
  v.push(...etcdQuorumKept(f));
  // Version skew, from the observer's Node and Pod watches: never a kubelet newer than a kube-apiserver.
  if (f.lab.observer.skewViolations.length > 0)
    v.push(`version skew: ${f.lab.observer.skewViolations.slice(0, 3).join('; ')}`);
  // The report pull request says what the cluster says (read again: under Halt the running nodes finish after the plan failed).
  if (f.scenario.delivery === 'git' && f.lab.forge && f.lab.plans)
    v.push(...(await checkReport(f.lab, (await f.lab.plan(PLAN))?.status ?? status)));
  // No credential anywhere the controller wrote.
  const leaks = secretLeaks(await controllerOutputs(f.lab, f.controllers), labSecrets(f.lab));
  if (leaks.length > 0) v.push(`a credential appears in: ${leaks.join(', ')}`);
  return v;
}

function pausedWithoutReason(status: Record<string, unknown>): boolean {
  return (
    status['phase'] === 'Paused' && (typeof status['reason'] !== 'string' || typeof status['message'] !== 'string')
  );
}

/**
 * etcd, from the simulator's own record (the lab is fresh for each run): with three or more members,
 * never fewer than a quorum healthy, and no leader's node stopped while it led (a forfeit first). A
 * single member is down while its node reboots by design; the chaos faults never take a member's
 * health (only its lag), so every loss here would be the controller's.
 */
function etcdQuorumKept({ lab }: RunFacts): string[] {
  if (lab.talos.etcd.members().length < 3) return [];
  const record = lab.talos.etcd.record();
  const v = record.quorumLosses.map(
    (q) =>
      `etcd lost its quorum from ${new Date(q.from).toISOString()} (${q.cause}: ${q.unhealthy.join(', ')} not healthy)`,
  );
  for (const l of record.leaders.filter((x) => / stopped$/.test(x.why)))
    v.push(`etcd's leader went down while leading: ${l.why} (the next leader ${l.leader ?? 'none'})`);
  return v;
}

/** Waits until every job that started has finished, its slot is freed and its node given back; what is still not so is a violation. */
async function settled({ lab, plan }: RunFacts): Promise<string[]> {
  const neverBack = plan.failing.get('node-never-back');
  const running = (): string[] =>
    [...lastJobPhases(lab)].filter(([, p]) => !FINISHED.test(p)).map(([n, p]) => `${n}:${p}`);
  const planLeases = (): string[] => lab.observer.liveLeases().filter((l) => l.startsWith(`${PLAN}-`));
  const ourCordons = (): string[] =>
    plan.nodes
      .filter((n) => {
        const o = lab.observer.node(n.name);
        // A node that never came back stays cordoned on purpose (its job says so); it is not Ready.
        return o?.unschedulable === true && o.cordonedBy?.startsWith(`${PLAN}-`) && !(n.name === neverBack && !o.ready);
      })
      .map((n) => n.name);
  const quiet = await waitFor(
    () => (running().length === 0 && planLeases().length === 0 && ourCordons().length === 0) || undefined,
    {
      timeoutMs: 60_000,
      intervalMs: 100,
      description: 'every job finished, every slot Lease released and every node given back',
    },
  ).catch(() => false);
  if (quiet) return [];
  const v: string[] = [];
  if (running().length > 0) v.push(`jobs still running long after the plan ended: ${running().join(', ')}`);
  if (planLeases().length > 0) v.push(`slot Leases leaked: ${planLeases().join(', ')}`);
  if (ourCordons().length > 0) v.push(`nodes left cordoned by us: ${ourCordons().join(', ')}`);
  return v;
}

const callRecord = (lab: JobLab, node: string): string =>
  JSON.stringify(
    lab.talos
      .node(node)
      .calls.filter((c) => !c.method.startsWith('State.'))
      .map((c) => [c.method, c.result === 'ok' || c.result === 'pending' ? c.result : c.result.codeName]),
  );

function untouched({ lab }: RunFacts, n: ChaosNode, phases: Map<string, string>): string[] {
  return lab.talos.node(n.name).calls.length > 0 || phases.has(n.name)
    ? [`${n.name} is outside the nodeSelector but was touched: ${callRecord(lab, n.name)}`]
    : [];
}

/** A selected node: nothing done twice, and its job's end matches what the simulator and the Node show. */
function checkNode({ lab, plan, scenario }: RunFacts, n: ChaosNode, phase: string | undefined): string[] {
  const v: string[] = [];
  const sim = lab.talos.node(n.name);
  const record = callRecord(lab, n.name);
  const mustFail = [...plan.failing.values()].includes(n.name);
  if (sim.upgradesStarted > 1) v.push(`${n.name}: ${sim.upgradesStarted} upgrades started: ${record}`);
  if (sim.reboots > 1) v.push(`${n.name}: ${sim.reboots} reboots: ${record}`);
  // The legacy Upgrade reboots the node by itself: a second accepted one is a second upgrade. A
  // lifecycle install may be repeated while the node provably runs the recorded boot (it only
  // stages the same image again; upgradesStarted counts the boot into it), as the restart tests allow.
  const accepted = sim.calls.filter((c) => c.method === 'MachineService.Upgrade' && c.result === 'ok').length;
  if (accepted > 1) v.push(`${n.name}: ${accepted} accepted legacy Upgrade calls: ${record}`);
  if (plan.expectedPhase === 'Completed' && phase === undefined)
    v.push(`${n.name}: never scheduled, yet the plan must complete`);
  if (mustFail && phase !== undefined && phase !== 'Failed')
    v.push(`${n.name}: its job ended ${phase}, the fault on it must fail it: ${record}`);
  if (!mustFail && phase === 'Failed') v.push(`${n.name}: job Failed without a fault that fails it: ${record}`);
  return phase === 'Completed' ? [...v, ...completedAsRecorded(lab, n, scenario.kubernetes)] : v;
}

/** A Completed job: one upgrade, one boot into the target, seen on the Node (and its kubelet on the target with Kubernetes). */
function completedAsRecorded(lab: JobLab, n: ChaosNode, kubernetes: boolean): string[] {
  const v: string[] = [];
  const sim = lab.talos.node(n.name);
  const record = callRecord(lab, n.name);
  const boots = lab.observer.of(n.name, ['booted']).length;
  if (sim.upgradesStarted !== 1 || sim.bootsIntoNewVersion !== 1 || boots !== 1)
    v.push(
      `${n.name}: job Completed with ${sim.upgradesStarted} upgrade(s), ${sim.bootsIntoNewVersion} boot(s) into the target, ${boots} boot(s) seen: ${record}`,
    );
  return [...v, ...nodeAtTarget(lab, n, kubernetes)];
}

/** A Completed job's Node, as the observer last saw it: Talos at the target (and its kubelet, with Kubernetes). */
function nodeAtTarget(lab: JobLab, n: ChaosNode, kubernetes: boolean): string[] {
  const v: string[] = [];
  const node = lab.observer.node(n.name);
  if (node?.osImage !== `Talos (${TALOS_TARGET})`)
    v.push(`${n.name}: job Completed but the Node runs ${node?.osImage ?? '?'}`);
  if (kubernetes && node?.kubeletVersion !== KUBERNETES_TARGET)
    v.push(`${n.name}: job Completed but its kubelet runs ${node?.kubeletVersion ?? '?'}`);
  return v;
}

/** Concurrency from the observer's Lease watch; group order from its PatchJob watch (a group starts after the groups before it ended). */
function concurrencyAndOrder({ lab, plan, scenario }: RunFacts): string[] {
  const v: string[] = [];
  for (const g of scenario.groups) {
    const peak = lab.observer.maxConcurrentLeasesInGroup(PLAN, g.name);
    if (peak > g.concurrency) v.push(`group ${g.name}: ${peak} slot Leases at once, concurrency ${g.concurrency}`);
  }
  const jobEvents = lab.observer.events.filter((e) => e.kind === 'jobPhase' && e.detail.startsWith(`${PLAN}-`));
  const groupOf = new Map(plan.nodes.map((n) => [n.name, n.group]));
  const startOf = (g: string): number =>
    Math.min(...jobEvents.filter((e) => groupOf.get(e.node) === g).map((e) => e.at));
  const endOf = (g: string): number =>
    Math.max(...jobEvents.filter((e) => groupOf.get(e.node) === g && FINISHED.test(e.detail)).map((e) => e.at));
  const order = scenario.order.filter((g) => jobEvents.some((e) => groupOf.get(e.node) === g));
  for (let i = 1; i < order.length; i++) {
    const [before, after] = [order[i - 1] ?? '', order[i] ?? ''];
    if (startOf(after) < endOf(before))
      v.push(`group ${after} started ${endOf(before) - startOf(after)} ms before group ${before} finished`);
  }
  return v;
}

/** Each patched node in the group that claims it (the first in strategy.order that matches), as worked out from the scenario. */
async function groupsClaimed({ lab, plan }: RunFacts, phases: Map<string, string>): Promise<string[]> {
  const v: string[] = [];
  for (const n of plan.nodes.filter((x) => phases.has(x.name))) {
    const job = await lab.job(`${PLAN}-${n.name}`);
    if (job && job.spec['group'] !== n.group)
      v.push(`${n.name} patched in group ${String(job.spec['group'])}, the first matching group is ${String(n.group)}`);
  }
  return v;
}

/**
 * The blocked pod was never evicted, and the web workload kept what its PDB (maxUnavailable 1)
 * promises: at every deletion, at least replicas - 1 of its pods not terminating. That is the
 * PDB's own arithmetic, so a surplus pod (a replacement made before the old one went) rightly
 * allows two evictions at once.
 */
function pdbsHeld({ lab, scenario }: RunFacts): string[] {
  const v: string[] = [];
  const events = lab.observer.events.filter(
    (e) => e.detail.startsWith('shop/') && (e.kind === 'podAdded' || e.kind === 'podDeleting' || e.kind === 'podGone'),
  );
  if (events.some((e) => e.kind === 'podDeleting' && e.detail.startsWith('shop/blocked')))
    v.push('the pod behind a PDB that allows no disruption was deleted');
  const keep = scenario.replicas - 1;
  const live = new Set<string>();
  let lowest = Infinity;
  for (const e of events.filter((x) => x.detail.startsWith('shop/web-'))) {
    if (e.kind === 'podAdded') live.add(e.detail);
    else live.delete(e.detail);
    if (e.kind === 'podDeleting') lowest = Math.min(lowest, live.size);
  }
  if (lowest < keep)
    v.push(
      `shop/web went down to ${lowest} pod(s) not terminating during a drain; its PDB keeps ${keep} of ${scenario.replicas}`,
    );
  return v;
}

/** With the clock jump: nothing was scheduled before the controllers' clocks reached the window. */
function windowHeld({ lab, jumpAt }: RunFacts): string[] {
  if (jumpAt === undefined) return [];
  const early = lab.observer.events.filter(
    (e) => e.kind === 'leaseCreated' && e.detail.startsWith(`${PLAN}-`) && e.at < jumpAt,
  );
  return early.length > 0 ? [`scheduled outside the maintenance window: ${early.map((e) => e.detail).join(', ')}`] : [];
}

interface Pull {
  number: number;
  draft: boolean;
  head: { ref: string };
}

async function checkReport(lab: JobLab, status: Record<string, unknown>): Promise<string[]> {
  const forge = lab.forge!;
  const wc = lab.plans!;
  const terminal = status['phase'] === 'Completed' || status['phase'] === 'Failed';
  let last = 'no report pull request';
  const ok = await waitFor(
    async () => {
      const res = await fetch(`${forge.apiUrl}/repos/acme/plans/pulls?state=all`, {
        headers: { authorization: `token ${forge.token}`, accept: 'application/vnd.github+json' },
      });
      const pulls = ((await res.json()) as Pull[]).filter((p) =>
        p.head.ref.startsWith(`kangal-patch/lab/report/${PLAN}-`),
      );
      if (pulls.length !== 1) {
        last = `${pulls.length} report pull requests`;
        return pulls.length > 1 ? false : undefined;
      }
      const pr = pulls[0]!;
      await wc.git(['fetch', '--quiet', 'origin', pr.head.ref]);
      const twin = parse(await wc.git(['show', `FETCH_HEAD:status/lab/${PLAN}.yaml`])) as {
        phase?: string;
        nodes?: { completed?: number; failed?: number };
      };
      last = `PR #${pr.number} draft=${pr.draft} phase=${String(twin.phase)} completed=${String(twin.nodes?.completed)} failed=${String(twin.nodes?.failed)}`;
      return twin.phase === status['phase'] &&
        twin.nodes?.completed === status['completedNodes'] &&
        twin.nodes?.failed === status['failedNodes'] &&
        pr.draft === !terminal
        ? true
        : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 1_000, description: 'the report PR matching the final status' },
  ).catch(() => false);
  return ok === true
    ? []
    : [
        `the report does not match the final status (phase ${String(status['phase'])}, ${String(status['completedNodes'])} completed, ${String(status['failedNodes'])} failed): ${last}`,
      ];
}
