// The plan reconciler's background runner for installer pre-pulls (spec.prePull). A pull streams
// for seconds, so a plan pass never waits for one: the pass hands its pulls over here and writes its
// status; each pull that ends is kept as a result and wakes its plan, whose next pass records it.
// Every pull runs under the leader's context: losing leadership (or shutting down) cancels them all.
import type { PatchPlanSpec } from '../../../schemas/patchplan.js';
import type { PrePullFacts, PrePullRequest, PrePullResult } from '../../core/plan/types.js';
import { withTimeout, type OpContext } from '../../runtime/context.js';
import type { Logger } from '../../telemetry/logger.js';
import { callFailure } from '../failure.js';
import type { TalosConnect } from '../../talos/talos-access.js';

/** One pull may take this long (large installers over slow links); the leader's signal ends it earlier. */
const PULL_TIMEOUT_MS = 15 * 60_000;

interface PrePullTarget extends PrePullRequest {
  /** Where the Talos API reaches the node (its InternalIP, else its name). */
  address: string;
}

export interface PrePullRunner {
  /** What runs and what ended for the plan, for its next pass; results of nodes no longer `waiting` are forgotten. */
  facts(plan: string, waiting: { has(node: string): boolean }): PrePullFacts;
  /** Starts the pulls without waiting for them; a node already pulling for the plan is left alone. */
  start(plan: string, talosConfig: PatchPlanSpec['talosConfig'], pulls: readonly PrePullTarget[]): void;
}

export interface PrePullRunnerDeps {
  /** The leader's context: aborted on leader loss and shutdown. */
  ctx: OpContext;
  connectTalos: TalosConnect;
  /** Queues the plan for a pass (a pull ended). */
  wake: (plan: string) => void;
  log: Logger;
}

export function createPrePullRunner(deps: PrePullRunnerDeps): PrePullRunner {
  const running = new Map<string, Set<string>>();
  const results = new Map<string, Map<string, PrePullResult>>();
  const pull = async (plan: string, talosConfig: PatchPlanSpec['talosConfig'], p: PrePullTarget): Promise<void> => {
    const ctx = withTimeout(deps.ctx, PULL_TIMEOUT_MS);
    let error: string | undefined;
    try {
      const talos = await deps.connectTalos(ctx, talosConfig, p.address);
      try {
        await talos.pullImage(ctx, p.address, p.image);
      } finally {
        talos.close();
      }
    } catch (err) {
      error = callFailure(err).message;
    }
    running.get(plan)?.delete(p.node);
    // Leader loss: the next leader knows from status that these never ended, and pulls again.
    if (deps.ctx.signal.aborted) return;
    if (error !== undefined)
      deps.log.info(
        { plan, node: p.node, image: p.image, err: error },
        'installer pre-pull failed (the node pulls again when its turn comes)',
      );
    let of = results.get(plan);
    if (!of) results.set(plan, (of = new Map<string, PrePullResult>()));
    of.set(p.node, { node: p.node, image: p.image, at: deps.ctx.clock.now(), error });
    deps.wake(plan);
  };
  return {
    facts(plan, waiting) {
      const of = results.get(plan);
      for (const node of of?.keys() ?? []) if (!waiting.has(node)) of?.delete(node);
      return { running: new Set(running.get(plan)), results: [...(of?.values() ?? [])] };
    },
    start(plan, talosConfig, pulls) {
      if (deps.ctx.signal.aborted) return;
      let now = running.get(plan);
      if (!now) running.set(plan, (now = new Set<string>()));
      for (const p of pulls) {
        if (now.has(p.node)) continue;
        now.add(p.node);
        results.get(plan)?.delete(p.node);
        void pull(plan, talosConfig, p);
      }
    },
  };
}
