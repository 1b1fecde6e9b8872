// Whether a cordon or uncordon still needs a write, decided from the Node as last read. The job's
// phase logic decides *to* cordon from its cache; the adapter asks this again on every fresh read
// (after a resourceVersion conflict) so that a node already in the wanted state gets no patch: a
// patch that changes nothing still costs the apiserver a write path, and shows as a no-op write.
// Pure.

export interface CordonFacts {
  name: string;
  unschedulable: boolean;
  /** The cordoned-by annotation: the PatchJob that cordoned the node. */
  cordonedBy: string | undefined;
}

export type CordonWrite =
  /** Merge-patch spec.unschedulable and the cordoned-by annotation (null removes it). */
  | { write: 'patch'; unschedulable: boolean; cordonedBy: string | null }
  /** The node is already as wanted (our own earlier write landed): nothing to send. */
  | { write: 'none' }
  /** Not ours to change: somebody else's cordon. */
  | { write: 'refuse'; reason: 'CordonedByOther' | 'NotCordonedByUs'; message: string };

export function cordonWrite(want: 'cordon' | 'uncordon', node: CordonFacts, job: string): CordonWrite {
  return want === 'cordon' ? cordon(node, job) : uncordon(node, job);
}

function cordon(node: CordonFacts, job: string): CordonWrite {
  if (!node.unschedulable) return { write: 'patch', unschedulable: true, cordonedBy: job };
  if (node.cordonedBy === job) return { write: 'none' };
  // Claiming a node that is already cordoned (by a person or another job) would let us uncordon it later.
  const by = node.cordonedBy === undefined ? 'someone else (no cordoned-by annotation)' : `job ${node.cordonedBy}`;
  return { write: 'refuse', reason: 'CordonedByOther', message: `node ${node.name} is already cordoned by ${by}` };
}

function uncordon(node: CordonFacts, job: string): CordonWrite {
  // Ours: give it back, and drop the marker even when someone set it schedulable by hand meanwhile.
  if (node.cordonedBy === job) return { write: 'patch', unschedulable: false, cordonedBy: null };
  // Schedulable with no marker: our uncordon already landed (or a person gave it back): done.
  if (!node.unschedulable && node.cordonedBy === undefined) return { write: 'none' };
  const by = node.cordonedBy === undefined ? 'not by a PatchJob' : `by job ${node.cordonedBy}`;
  return {
    write: 'refuse',
    reason: 'NotCordonedByUs',
    message: `node ${node.name} was cordoned ${by}, not by ${job}; leaving it as it is`,
  };
}
