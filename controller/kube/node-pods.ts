// The pods of the nodes being drained, one field-selected informer (`spec.nodeName=<node>`) per
// node, opened and closed by the job wiring as jobs enter and leave the phases that read them. A
// cluster-wide pod cache held every pod of a 5,000-node fleet (most of the standby's heap above a
// small fleet's, and every pod event of the cluster through the job wiring) to wake the ≤
// `concurrency` jobs that drain; these hold only those nodes' pods. Each is a whole informer
// (informer.ts: restart, backoff, re-list, resync), stopped by close() or by the signal it was
// opened with (the leader's work: a lost lease leaves none open).
import type { Informer } from '../runtime/informer.js';
import type { PodView } from './views.js';

export interface NodePodWatches {
  /** Watches the pods bound to `nodeName` until close(nodeName) or `signal` aborts; a node watched already, or an aborted signal: nothing. */
  open(nodeName: string, signal: AbortSignal): void;
  /** Stops watching the node and drops its pods; a node not watched: nothing. */
  close(nodeName: string): void;
  /** The nodes watched now. */
  nodes(): string[];
  /** Every add, update and delete of a watched node's pods, and every pod again at each (re-)list, as Informer.onChange. */
  onChange(handler: (key: string, view: PodView | undefined, old: PodView | undefined) => void): void;
  /** Pods held in all the open caches. */
  size(): number;
}

/** `informerOf(node)` makes one node's informer, not started. */
export function nodePodWatches(informerOf: (nodeName: string) => Informer<PodView>): NodePodWatches {
  const open = new Map<string, { informer: Informer<PodView>; stop: AbortController; detach: () => void }>();
  const handlers: ((key: string, view: PodView | undefined, old: PodView | undefined) => void)[] = [];
  const close = (nodeName: string): void => {
    const watch = open.get(nodeName);
    if (!watch) return;
    open.delete(nodeName);
    watch.detach();
    watch.stop.abort();
  };
  return {
    open(nodeName, signal) {
      if (signal.aborted || open.has(nodeName)) return;
      const informer = informerOf(nodeName);
      const stop = new AbortController();
      const onAbort = (): void => close(nodeName);
      signal.addEventListener('abort', onAbort, { once: true });
      // An event a closed informer delivers while its watch winds down is not news of a watched node.
      informer.onChange((key, view, old) => {
        if (open.get(nodeName)?.informer !== informer) return;
        for (const handler of handlers) handler(key, view, old);
      });
      open.set(nodeName, { informer, stop, detach: () => signal.removeEventListener('abort', onAbort) });
      informer.start(stop.signal);
    },
    close,
    nodes: () => [...open.keys()],
    onChange(handler) {
      handlers.push(handler);
    },
    size: () => [...open.values()].reduce((n, w) => n + w.informer.list().length, 0),
  };
}
