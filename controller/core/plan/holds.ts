// Per-node holds: a person annotates a Node `kangalpatch.ozalp.dk/hold: "<reason>"` to keep it out
// of every plan for now (a ticket open on it, a database primary this week) without editing the
// plan. A held node is not scheduled; its group, and so the plan, waits for it, because the plan's
// promise is every selected node on the target. `skip` (or `skip: <reason>`) lets the plan go on
// without the node: it counts as done and the report says it was skipped. A node whose job already
// exists is not interrupted by a hold.

export const HOLD_ANNOTATION = 'kangalpatch.ozalp.dk/hold';

/** What status shows of a reason: a person's words, bounded (status, Events and reports carry them). */
const MAX_REASON = 200;

export type NodeHold = { kind: 'hold' | 'skip'; reason: string };

/** The hold a node's annotation value asks for; undefined without the annotation. */
export function parseHold(value: string | undefined): NodeHold | undefined {
  if (value === undefined) return undefined;
  // eslint-disable-next-line no-control-regex -- free text from a person: control characters would break status lines and Events
  const text = value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  const skip = /^skip(?:$|[\s:]+)/i.exec(text);
  const words = skip ? text.slice(skip[0].length) : text;
  const reason = words.length > MAX_REASON ? `${words.slice(0, MAX_REASON)}…` : words;
  return { kind: skip ? 'skip' : 'hold', reason };
}

/** `node (reason)`, or the node alone when no reason was given. */
function describeHold(node: string, hold: NodeHold): string {
  return hold.reason === '' ? node : `${node} (${hold.reason})`;
}

/** The holds of the nodes that carry the annotation, by node name. */
export function holdsOf(nodes: readonly { name: string; hold?: string | undefined }[]): Map<string, NodeHold> {
  const out = new Map<string, NodeHold>();
  for (const n of nodes) {
    const hold = parseHold(n.hold);
    if (hold) out.set(n.name, hold);
  }
  return out;
}

/** What a group whose remaining nodes are all held (or running) says, and what ends the wait. */
export function heldMessage(group: string, held: readonly { node: string; hold: NodeHold }[], running: number): string {
  const names = held
    .slice(0, 5)
    .map((h) => describeHold(h.node, h.hold))
    .join(', ');
  const more = held.length > 5 ? ` and ${held.length - 5} more` : '';
  const still = running > 0 ? `; ${running} running node(s) finish` : '';
  return `group ${group}: ${held.length} node(s) held by the ${HOLD_ANNOTATION} annotation: ${names}${more}${still}; the plan goes on when the annotation is removed, or set to "skip" to leave the node out`;
}
