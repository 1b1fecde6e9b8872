// What one chaos run does, drawn from its seed alone: the fleet, the plan and how it reaches the
// cluster, and the fault schedule. Pure (no lab, no clock), so a seed names the same run anywhere:
// `npm run chaos -- --seed S --runs 1` replays it. fast-check draws the values (its seeded
// generator and shrink-free `sample`), so there is no hand-rolled PRNG here.
import fc from 'fast-check';

/** Every fault the runner can inject; each can be chosen alone with `--faults`. */
export const FAULT_KINDS = [
  'controller-kill',
  'leader-kill',
  'apiserver-restart',
  'etcd-restart',
  'connection-cut',
  'write-storm',
  'talos-down',
  'talos-endpoint-lost',
  'git-down',
  'force-push',
  'pdb-blocked',
  'node-never-back',
  'old-partition',
  'clock-jump',
  'etcd-member-lag',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Faults that make one node fail for good (its PatchJob must end Failed): they count against the failure budget. */
export const NODE_FAILURES: readonly FaultKind[] = ['pdb-blocked', 'node-never-back', 'old-partition'];
/** Faults set up before the plan is applied (conditions of the run, not moments in it). */
export const STANDING_FAULTS: readonly FaultKind[] = [...NODE_FAILURES, 'talos-endpoint-lost', 'clock-jump'];
/**
 * Faults on one control-plane node's etcd member for a while: it lags far behind the leader (the
 * etcd gate holds meanwhile). Not an isolated member: that takes the quorum down with a member the
 * controller rebooted, a loss the checker could not tell from one the controller caused.
 */
const ETCD_MEMBER_FAULTS: readonly FaultKind[] = ['etcd-member-lag'];
/** Faults that need the plan delivered through Git. */
const GIT_FAULTS: readonly FaultKind[] = ['git-down', 'force-push'];

/**
 * When a moment fault fires: once the lab has seen this share of the events of that kind the
 * rollout should bring (never from the controller's own status); fleet-plan.ts turns it into a count.
 */
export interface Trigger {
  /**
   * jobPhase: PatchJob phase changes (observer); talosCall: mutating calls that reached the simulator;
   * podDeleting: evictions seen; statusWrite: a controller's status write arriving at the interposer
   * (a kill then lands while the write is in flight: the apiserver still gets it, the writer is gone).
   */
  on: 'jobPhase' | 'talosCall' | 'podDeleting' | 'statusWrite';
  /** 0 ≤ share < 1 */
  share: number;
}

export interface ScheduledFault {
  kind: FaultKind;
  /** Standing faults: the node they hit (an index into the plan's nodes); etcd member faults: the control-plane node (an index into the members). Other moment faults: undefined. */
  nodeIndex?: number;
  trigger?: Trigger;
  /** How long an outage lasts (restarts: how long the component stays down). */
  downMs: number;
  /** write-storm: the status code answered. */
  status?: 429 | 500;
}

interface ScenarioGroup {
  name: string;
  concurrency: number;
  /** Custom groups: nodes carrying this label value are in it. */
  label?: string;
}

export interface Scenario {
  seed: number;
  nodes: number;
  controlPlanes: number;
  /** Worker indexes (1-based, worker-N) on Talos v1.13.1 (the lifecycle flow); the rest run v1.12.4 (legacy flow). */
  lifecycleWorkers: number[];
  /** Control-plane indexes on v1.13.1. */
  lifecycleControlPlanes: number[];
  /** Worker indexes labelled for each custom group (overlapping: a node may carry several). */
  groupMembers: Record<string, number[]>;
  /** Worker indexes outside the plan's nodeSelector (environment: staging). */
  staging: number[];
  groups: ScenarioGroup[];
  order: string[];
  failurePolicy: { type: 'Halt' | 'Pause'; maxFailures: number };
  delayBetweenNodesS: number;
  /** An open maintenance window around the run (without clock-jump, which brings its own). */
  window: boolean;
  delivery: 'git' | 'kubectl';
  /** Also move Kubernetes one minor (KUBERNETES_FROM → KUBERNETES_TARGET) with Talos: control plane first, kube-proxy, then the workers' kubelets. */
  kubernetes: boolean;
  /** Replicas of the workload spread over the fleet, behind a PDB with maxUnavailable 1. */
  replicas: number;
  faults: ScheduledFault[];
}

export const TALOS_LEGACY = 'v1.12.4';
export const TALOS_LIFECYCLE = 'v1.13.1';
export const TALOS_TARGET = 'v1.13.2';
export const KUBERNETES_FROM = 'v1.35.2';
export const KUBERNETES_TARGET = 'v1.36.3';

const subset = (n: number): fc.Arbitrary<number[]> =>
  fc
    .uniqueArray(fc.integer({ min: 1, max: Math.max(1, n) }), { maxLength: n })
    .map((a) => [...a].sort((x, y) => x - y));

function scenarioArbitrary(seed: number, allowed: readonly FaultKind[], maxNodes: number): fc.Arbitrary<Scenario> {
  // A small fleet most of the time (runs stay short), up to 40 nodes now and then.
  const size = fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min: 3, max: Math.min(12, maxNodes) }) },
    { weight: 1, arbitrary: fc.integer({ min: 3, max: maxNodes }) },
  );
  return fc
    .record({ nodes: size, controlPlanes: fc.integer({ min: 1, max: 3 }) })
    .chain(({ nodes, controlPlanes: cpWanted }) => {
      // One or three control-plane nodes: etcd with two members is refused (as Talos refuses it), no fleet runs it.
      const fit = Math.min(cpWanted, nodes - 2);
      const controlPlanes = fit === 2 ? (nodes - 2 >= 3 ? 3 : 1) : fit;
      const workers = nodes - controlPlanes;
      const faultKinds =
        allowed.length === 0
          ? fc.constant<FaultKind[]>([])
          : fc.uniqueArray(fc.constantFrom(...allowed), { minLength: 1, maxLength: Math.min(3, allowed.length) });
      return fc
        .record({
          lifecycleWorkers: subset(workers),
          lifecycleControlPlanes: subset(controlPlanes),
          customGroups: fc.integer({ min: 0, max: 2 }),
          membersA: subset(workers),
          membersB: subset(workers),
          staging: fc.uniqueArray(fc.integer({ min: 1, max: workers }), { maxLength: Math.floor(workers / 4) }),
          cpConcurrency: fc.integer({ min: 1, max: 2 }),
          workerConcurrency: fc.integer({ min: 1, max: 4 }),
          customConcurrency: fc.tuple(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 3 })),
          customFirst: fc.boolean(),
          policy: fc.constantFrom<'Halt' | 'Pause'>('Halt', 'Pause'),
          maxFailures: fc.integer({ min: 1, max: 3 }),
          delay: fc.constantFrom(0, 0, 1, 2),
          window: fc.boolean(),
          git: fc.boolean(),
          kubernetes: fc.integer({ min: 0, max: 2 }).map((x) => x === 0),
          replicas: fc.integer({ min: 0, max: Math.max(0, workers - 1) }),
          kinds: faultKinds,
          faultSeeds: fc.array(
            fc.record({
              node: fc.nat(),
              on: fc.constantFrom<Trigger['on']>('jobPhase', 'jobPhase', 'talosCall', 'podDeleting', 'statusWrite'),
              share: fc.integer({ min: 0, max: 99 }).map((p) => p / 100),
              downMs: fc.integer({ min: 500, max: 6_000 }),
              status: fc.constantFrom<429 | 500>(429, 500),
            }),
            { minLength: 3, maxLength: 3 },
          ),
        })
        .map((d): Scenario => {
          const customNames = ['tierA', 'zoneB'].slice(0, d.customGroups);
          const groupMembers: Record<string, number[]> = {};
          if (customNames[0]) groupMembers[customNames[0]] = d.membersA;
          if (customNames[1]) groupMembers[customNames[1]] = d.membersB;
          const groups: ScenarioGroup[] = [
            { name: 'controlPlane', concurrency: d.cpConcurrency },
            { name: 'workers', concurrency: d.workerConcurrency },
            ...customNames.map((name, i) => ({ name, concurrency: d.customConcurrency[i] ?? 1, label: name })),
          ];
          // With a Kubernetes target the control plane goes first (the plan is refused otherwise).
          const order =
            d.customFirst && !d.kubernetes
              ? [...customNames, 'controlPlane', 'workers']
              : ['controlPlane', ...customNames, 'workers'];
          const needsGit = d.kinds.some((k) => GIT_FAULTS.includes(k));
          const faults = d.kinds.map((kind, i): ScheduledFault => {
            const f = d.faultSeeds[i] ?? {
              node: 0,
              on: 'jobPhase' as const,
              share: 0,
              downMs: 1000,
              status: 429 as const,
            };
            if (STANDING_FAULTS.includes(kind)) return { kind, nodeIndex: f.node, downMs: f.downMs };
            const trigger: Trigger = {
              on: d.replicas === 0 && f.on === 'podDeleting' ? 'jobPhase' : f.on,
              share: f.share,
            };
            return {
              kind,
              trigger,
              downMs: f.downMs,
              ...(kind === 'write-storm' ? { status: f.status } : {}),
              ...(ETCD_MEMBER_FAULTS.includes(kind) ? { nodeIndex: f.node } : {}),
            };
          });
          return {
            seed,
            nodes,
            controlPlanes,
            lifecycleWorkers: d.lifecycleWorkers,
            lifecycleControlPlanes: d.lifecycleControlPlanes,
            groupMembers,
            staging: d.staging,
            groups,
            order,
            failurePolicy: { type: d.policy, maxFailures: d.maxFailures },
            delayBetweenNodesS: d.delay,
            window: d.window,
            delivery: needsGit || d.git ? 'git' : 'kubectl',
            kubernetes: d.kubernetes,
            replicas: d.replicas,
            faults,
          };
        });
    });
}

/** The scenario of `seed`, with faults drawn only from `allowed` (default: all). */
export function drawScenario(seed: number, allowed: readonly FaultKind[] = FAULT_KINDS, maxNodes = 40): Scenario {
  const [scenario] = fc.sample(scenarioArbitrary(seed, allowed, maxNodes), { seed, numRuns: 1 });
  if (!scenario) throw new Error(`no scenario drawn for seed ${seed}`);
  return scenario;
}

/** One line naming what the run does, for the campaign's table and failure messages. */
export function describeScenario(s: Scenario): string {
  const faults =
    s.faults
      .map((f) => (f.trigger ? `${f.kind}@${f.trigger.on}:${Math.round(f.trigger.share * 100)}%` : f.kind))
      .join(',') || 'none';
  const groups = s.order.map((g) => `${g}:${s.groups.find((x) => x.name === g)?.concurrency ?? 1}`).join('>');
  return `seed ${s.seed}: ${s.nodes} nodes (${s.controlPlanes} cp, ${s.lifecycleWorkers.length + s.lifecycleControlPlanes.length} lifecycle)${s.kubernetes ? ', +Kubernetes' : ''}, ${groups}, ${s.failurePolicy.type}/${s.failurePolicy.maxFailures}, ${s.delivery}, faults ${faults}`;
}
