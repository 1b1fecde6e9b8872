// What the status command reads: the kube adapter's informers on PatchPlans, PatchJobs and (when
// the viewer may) Nodes — a list, then a watch from it; no polling. The views they keep are the
// status view's input as they are.
import type { StatusInput } from '../core/status-view/index.js';
import type { Kube } from '../kube/index.js';
import { armTimer } from '../runtime/timer.js';
import type { Access } from './access.js';
import { StatusError } from './connect.js';

export interface StatusSource {
  /** The cluster as the informers hold it now, for the plans named (none: every plan). */
  input(names: readonly string[]): StatusInput;
  /** Called after every add, update and delete (synchronously: schedule, do not render here). */
  onChange(handler: () => void): void;
}

/** How long the first lists may take before the command gives up, saying what it waited for. */
const SYNC_TIMEOUT_MS = 30_000;

/**
 * Starts the informers (they stop when `signal` aborts) and resolves once every one has its first
 * list; rejects after SYNC_TIMEOUT_MS naming the lists still missing and the last warning about them.
 */
export async function openSource(
  kube: Kube,
  access: Access,
  signal: AbortSignal,
  lastWarning: () => string | undefined,
): Promise<StatusSource> {
  const { patchPlans, patchJobs, nodes } = kube.informers;
  const used = [
    ['PatchPlans', patchPlans],
    ['PatchJobs', patchJobs],
    ...(access.nodes ? [['Nodes', nodes] as const] : []),
  ] as const;
  for (const [, i] of used) i.start(signal);
  let timer: { cancel(): void } | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = armTimer(SYNC_TIMEOUT_MS, () => {
      const waiting = used.filter(([, i]) => !i.isSynced()).map(([n]) => n);
      const why = lastWarning();
      reject(
        new StatusError(
          `could not list ${waiting.join(', ')} from ${kube.server} within ${SYNC_TIMEOUT_MS / 1000}s${why ? `: ${why}` : ''}`,
        ),
      );
    });
  });
  try {
    await Promise.race([Promise.all(used.map(([, i]) => i.synced)), timeout]);
  } finally {
    timer?.cancel();
  }
  return {
    input: (names) => ({
      plans: patchPlans.list(),
      jobs: patchJobs.list(),
      nodes: access.nodes ? nodes.list() : undefined,
      names,
    }),
    onChange: (handler) => {
      for (const [, i] of used) i.onChange(() => handler());
    },
  };
}
