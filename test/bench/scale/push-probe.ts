// git push → plan applied (issue 18): the push of a plan file, timed to the controller's apply of
// that PatchPlan as the interposer saw it arrive. The idle bench times it with nothing running; the
// scale bench times it while its rollout keeps up to 50 jobs in flight (probePushesUnderLoad).
import { stringify } from 'yaml';
import type { JobLab } from '../../e2e/support/job-lab.js';
import { labPlan } from '../../e2e/support/plans.js';
import type { WorkingCopy } from '../../lab/forge/working-copy.js';
import { waitFor } from '../../lab/wait.js';

/** A plan over one node (by hostname) to the version it runs: it finishes with nothing to do. */
export function nothingToDoPlan(lab: JobLab, name: string, node: string, version: string): string {
  const own = { matchLabels: { 'kubernetes.io/hostname': node } };
  return stringify(
    labPlan(
      { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name }, spec: {} },
      lab.talos.endpoint,
      {
        target: { talosVersion: version },
        groups: { pool: { selector: own, concurrency: 1 } },
        strategy: { order: ['pool'] },
        nodeSelector: own,
      },
    ),
  );
}

/** Commits and pushes `plans/<name>.yaml`; resolves with the ms from the push's return to the controller's PATCH of that plan. */
export async function timePushToApplied(lab: JobLab, plans: WorkingCopy, name: string, doc: string): Promise<number> {
  await plans.write(`plans/${name}.yaml`, doc);
  await plans.commitAndPush(`add ${name}`);
  const pushedAt = Date.now();
  const applied = await waitFor(
    () =>
      lab.interposer?.exchanges.find(
        (e) => e.at >= pushedAt && e.method === 'PATCH' && e.path.includes(`/patchplans/${name}`),
      ),
    {
      timeoutMs: 120_000,
      intervalMs: 20,
      description: `${name} applied`,
    },
  );
  return applied.at - pushedAt;
}

export interface PushesUnderLoad {
  /** Push → applied, ms, one per push. */
  samples: number[];
  /** Slot Leases alive (jobs in flight, by the observer) at each push. */
  inFlight: number[];
}

/**
 * `pushes` plan files pushed one after another while a rollout runs, each a plan over the control
 * plane `node` (outside the rollout's selection) to the version it runs, so it cannot conflict with
 * the rollout; the next is pushed once the last has Completed (two plans over one node would refuse
 * each other in preflight). Afterwards the files are removed in one commit and the plans are gone
 * once the controller pruned them, so the lab is left as it was.
 */
export async function probePushesUnderLoad(
  lab: JobLab,
  plans: WorkingCopy,
  o: { pushes: number; node: string; version: string; prefix: string },
): Promise<PushesUnderLoad> {
  const samples: number[] = [];
  const inFlight: number[] = [];
  const names = Array.from({ length: o.pushes }, (_, k) => `${o.prefix}-${k + 1}`);
  for (const name of names) {
    inFlight.push(lab.observer.liveLeases().length);
    samples.push(await timePushToApplied(lab, plans, name, nothingToDoPlan(lab, name, o.node, o.version)));
    await waitFor(async () => ((await lab.plan(name))?.status.phase === 'Completed' ? true : undefined), {
      timeoutMs: 10 * 60_000,
      intervalMs: 500,
      description: `${name} Completed`,
    });
  }
  for (const name of names) await plans.remove(`plans/${name}.yaml`);
  await plans.commitAndPush(`remove ${names.join(', ')}`);
  await waitFor(
    async () => {
      for (const name of names) if (await lab.plan(name)) return undefined;
      return true;
    },
    { timeoutMs: 10 * 60_000, intervalMs: 1000, description: `${names.join(', ')} pruned` },
  );
  return { samples, inFlight };
}
