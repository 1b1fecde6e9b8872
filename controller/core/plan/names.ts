// Deterministic object names, so the apiserver arbitrates races: a job per (plan, node) (and hop, for a
// stepwise plan), a Lease
// per (plan, group, slot). Names over the limit keep a readable prefix and end in a hash (shortened,
// core/names.ts).
import { hash, shortened } from '../names.js';

/** `hop`: a stepwise plan's hop number, so each hop's jobs have their own names (`<plan>-h2-<node>`). */
export const jobName = (plan: string, node: string, hop?: number): string =>
  shortened(hop === undefined ? `${plan}-${node}` : `${plan}-h${hop}-${node}`, 253);
/** A group name as a DNS label part; a name that had to change gets a hash, so two groups never share one. */
function groupPart(group: string): string {
  const safe = group.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  return safe === group ? safe : `${safe}-${hash(group).slice(0, 6)}`;
}

export const leaseName = (plan: string, group: string, slot: number): string =>
  shortened(`${plan}-${groupPart(group)}-${slot}`, 63);
