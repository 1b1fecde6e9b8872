// Deterministic object names, so the apiserver arbitrates races: a job per (plan, node), a Lease
// per (plan, group, slot). Names over the limit keep a readable prefix and end in a hash.

/** FNV-1a, 64 bits as two 32-bit halves: stable across processes and versions, no crypto needed. */
function hash(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x811c9dc5) >>> 0;
  }
  return a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0').slice(0, 2);
}

/** `name` if it fits in `max`, else a prefix, `-` and a 10-character hash of the whole name. */
export function shortened(name: string, max: number): string {
  if (name.length <= max) return name;
  const h = hash(name);
  return `${name.slice(0, max - h.length - 1).replace(/[-.]+$/, '')}-${h}`;
}

export const jobName = (plan: string, node: string): string => shortened(`${plan}-${node}`, 253);
/** A group name as a DNS label part; a name that had to change gets a hash, so two groups never share one. */
function groupPart(group: string): string {
  const safe = group.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  return safe === group ? safe : `${safe}-${hash(group).slice(0, 6)}`;
}

export const leaseName = (plan: string, group: string, slot: number): string => shortened(`${plan}-${groupPart(group)}-${slot}`, 63);
