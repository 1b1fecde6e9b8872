// One big lab per `npm run bench`: a 5,000-node lab takes many minutes to build on this machine, so
// the scale bench's largest run and the idle bench share it (each leaves it with no plan
// running). run.ts stops it at the end.
import { startScaleLab, type ScaleLab } from './fleet.js';

const labs = new Map<number, Promise<ScaleLab>>();

/** The lab of `workers` workers, started on first use (with the plans repository, for the idle bench). */
export function sharedScaleLab(workers: number): { lab: Promise<ScaleLab>; reused: boolean } {
  const existing = labs.get(workers);
  if (existing) return { lab: existing, reused: true };
  const lab = startScaleLab(workers, { plansRepo: true });
  labs.set(workers, lab);
  return { lab, reused: false };
}

/** Sizes of the labs up already (another bench started them), largest first. */
export const sharedScaleLabSizes = (): number[] => [...labs.keys()].sort((a, b) => b - a);

export async function stopSharedScaleLabs(): Promise<void> {
  for (const [workers, lab] of [...labs]) {
    labs.delete(workers);
    await (await lab.catch(() => undefined))?.lab.stop();
  }
}
