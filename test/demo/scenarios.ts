// The stories `npm run demo -- --scenario <name>` tells. Each pushes one plan file and may act on
// the rollout as a user would (kubectl against the lab, a fault in the Talos simulator, a merge).
import type { Lab } from '../lab/lab.js';
import { autoUpdateScenario } from './auto-update-story.js';
import { customGroups, kubernetesUpgrade, maintenanceWindow, TALOS_TARGET, type LabPlace } from './plan-files.js';
import type { PlansRepo } from './plans-repo.js';
import type { JobSnapshot, PlanSnapshot } from './watch.js';

export interface StoryContext {
  lab: Lab;
  /** --cluster-name of the demo's controller. */
  cluster: string;
  plans: PlansRepo;
  say(line: string): void;
  /** Runs the lab's kubectl as the user would type it (the command is printed). */
  kubectl(args: string[]): Promise<void>;
  /** Shows plan `name` live until `until` returns a value (rejects after `timeoutMs`, or when the controller exits). */
  showPlan<T>(
    name: string,
    until: (plan: PlanSnapshot) => T | undefined,
    o: { timeoutMs: number; description: string },
  ): Promise<T>;
}

export interface Scenario {
  name: string;
  story: string;
  /** The fleet's Talos version, when not the demo's default. */
  fleetTalosVersion?: string;
  /** The PatchPlan the pushed file creates. */
  plan: string;
  file(place: LabPlace, nowMs: number): { path: string; content: string };
  /** The commit message of the push (default: Roll out <plan>). */
  pushMessage?: string;
  /** The lab forge serves a siderolabs/talos releases feed: the controller gets --releases-api-url pointing at it. */
  releasesFeed?: boolean;
  /** Before the push: faults to inject, a releases feed to set up. */
  arrange?(ctx: StoryContext): Promise<void> | void;
  /** After the push, before the rollout: the story that leads to the plan whose rollout the demo follows (default: the pushed one). */
  prelude?(ctx: StoryContext): Promise<string>;
  /** On every change of the rollout: the user's reaction, if any. */
  react?(ctx: StoryContext, plan: PlanSnapshot, jobs: readonly JobSnapshot[]): Promise<void>;
  /** The story is over (the demo then reports success only for Completed with no failed node). */
  finished(plan: PlanSnapshot): boolean;
}

const TERMINAL = new Set(['Completed', 'Failed', 'Cancelled']);
const terminal = (p: PlanSnapshot): boolean => TERMINAL.has(p.phase ?? '');

const customGroupsScenario: Scenario = {
  name: 'custom-groups',
  story:
    'examples/custom-groups.yaml: Talos and Kubernetes on 11 of 12 nodes, control plane → database → gpu → workers, per-group concurrency, PDBs respected',
  plan: 'custom-groups',
  file: (place) => ({ path: 'plans/custom-groups.yaml', content: customGroups(place) }),
  finished: terminal,
};

function failurePause(): Scenario {
  const broken = 'worker-3';
  let step: 'waitForPause' | 'resumed' | 'retrying' = 'waitForPause';
  /** The Pause policy paused the plan: say why, then the user fixes the node and resumes the plan. */
  const fixAndResume = async (ctx: StoryContext, plan: PlanSnapshot, jobs: readonly JobSnapshot[]): Promise<void> => {
    const job = jobs.find((j) => j.node === broken);
    if (job?.reason === 'RolledBack') ctx.say(`${broken} was rolled back: ${job.message ?? ''}`);
    ctx.say(`the Pause policy paused the plan: ${plan.message ?? plan.reason ?? ''}`);
    ctx.lab.talos.faults.clear(broken);
    ctx.say(`the user fixes ${broken} (fault cleared) and resumes the plan (Git leaves spec.paused to the operator):`);
    await ctx.kubectl(['patch', 'patchplan', 'failure-pause', '--type', 'merge', '-p', '{"spec":{"paused":false}}']);
  };
  return {
    name: 'failure-pause',
    story: `the custom-groups plan (Talos only, rollback.onFailure: true); ${broken} boots ${TALOS_TARGET} but its kubelet never rejoins, so the controller rolls it back to the version it ran, Ready again; the Pause policy pauses the plan, the user fixes the node, resumes the plan and retries ${broken}`,
    plan: 'failure-pause',
    file: (place) => ({
      path: 'plans/failure-pause.yaml',
      content: customGroups(place, 'failure-pause', { kubernetes: false, rollback: true }),
    }),
    arrange: (ctx) => {
      ctx.lab.talos.faults.set(broken, { kubeletNeverJoinsOn: TALOS_TARGET });
      ctx.say(`fault: ${broken} boots ${TALOS_TARGET} but its kubelet never rejoins (the Node stays NotReady)`);
    },
    react: async (ctx, plan, jobs) => {
      if (step === 'waitForPause' && plan.phase === 'Paused' && plan.policyPaused) {
        step = 'resumed';
        await fixAndResume(ctx, plan, jobs);
      } else if (step === 'resumed' && plan.phase === 'Completed' && (plan.failedNodes ?? 0) > 0) {
        step = 'retrying';
        ctx.say(`the rest is done; the user retries ${broken} by deleting its failed PatchJob:`);
        await ctx.kubectl(['delete', 'patchjob', `failure-pause-${broken}`]);
      }
    },
    finished: (plan) =>
      (step === 'retrying' && plan.phase === 'Completed' && (plan.failedNodes ?? 0) === 0) ||
      plan.phase === 'Failed' ||
      plan.phase === 'Cancelled',
  };
}

const maintenanceWindowScenario: Scenario = {
  name: 'maintenance-window',
  story:
    'examples/maintenance-window.yaml with a window opening in about a minute: the plan waits, naming the opening, then rolls the workers',
  plan: 'maintenance-window',
  file: (place, nowMs) => {
    // Windows are whole minutes: the first minute boundary at least 45 s away.
    const opens = new Date(Math.ceil((nowMs + 45_000) / 60_000) * 60_000);
    return { path: 'plans/maintenance-window.yaml', content: maintenanceWindow(place, opens) };
  },
  finished: terminal,
};

const kubernetesScenario: Scenario = {
  name: 'kubernetes-upgrade',
  story:
    'Kubernetes v1.35.2 → v1.36.3 alone on a Talos v1.13.2 fleet (Talos 1.12 stops at Kubernetes 1.35): control plane (apiserver, controller-manager, scheduler, kubelet), kube-proxy, then the workers; no reboot',
  fleetTalosVersion: TALOS_TARGET,
  plan: 'kubernetes-upgrade',
  file: (place) => ({ path: 'plans/kubernetes-upgrade.yaml', content: kubernetesUpgrade(place) }),
  finished: terminal,
};

export const SCENARIOS: Record<string, () => Scenario> = {
  'custom-groups': () => customGroupsScenario,
  'failure-pause': failurePause,
  'maintenance-window': () => maintenanceWindowScenario,
  'kubernetes-upgrade': () => kubernetesScenario,
  'auto-update': autoUpdateScenario,
};

/** Every `--scenario`: the one-cluster stories above, and `promotion` (two clusters, test/demo/promotion-story.ts). */
export const SCENARIO_NAMES = [...Object.keys(SCENARIOS), 'promotion'];
