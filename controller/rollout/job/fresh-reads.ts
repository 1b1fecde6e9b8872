// The job's fresh reads against the caches they bypass (controller/rollout/stale-cache.ts says why
// a cache that differs is restarted).
import { isDeepStrictEqual } from 'node:util';
import type { JobNodeFacts, StaticPodFacts } from '../../core/job/index.js';
import type { ApiServerFact } from '../../core/kubernetes/skew.js';
import type { KubeInformers } from '../../kube/port.js';
import type { NodeView } from '../../kube/views.js';
import type { Logger } from '../../telemetry/logger.js';
import { restartIfStale, type CachedAndFresh } from '../stale-cache.js';

/** What the job decides by, of a Node (resourceVersion apart: it moves with every status post). */
function nodeFacts(n: NodeView | undefined): JobNodeFacts | undefined {
  if (!n) return undefined;
  const {
    name,
    internalIP,
    ready,
    unschedulable,
    cordonedBy,
    bootID,
    talosVersion,
    schematic,
    controlPlane,
    kubeletVersion,
  } = n;
  return {
    name,
    internalIP,
    ready,
    unschedulable,
    cordonedBy,
    bootID,
    talosVersion,
    schematic,
    controlPlane,
    kubeletVersion,
  };
}

const sorted = <T>(xs: readonly T[]): string[] => xs.map((x) => JSON.stringify(x)).sort();

export function checkNodeCache(
  informers: Pick<KubeInformers, 'nodes'>,
  log: Logger,
  name: string,
  fresh: NodeView | undefined,
): void {
  const cached = nodeFacts(informers.nodes.get(name));
  const now = nodeFacts(fresh);
  if (isDeepStrictEqual(cached, now)) return;
  // This job's next passes see the fresh Node at once, before the re-list lands.
  if (fresh) informers.nodes.observeWrite(fresh);
  restartIfStale(informers.nodes, log, { cache: 'nodes', resource: `node/${name}`, cached, fresh: now });
}

export function checkStaticPodCache(
  informers: Pick<KubeInformers, 'staticPods'>,
  log: Logger,
  nodeName: string,
  { cached, fresh }: CachedAndFresh<readonly StaticPodFacts[]>,
): void {
  restartIfStale(informers.staticPods, log, {
    cache: 'static pods',
    resource: `static pods of node/${nodeName}`,
    cached: sorted(cached),
    fresh: sorted(fresh),
  });
}

export function checkApiServerCache(
  informers: Pick<KubeInformers, 'staticPods'>,
  log: Logger,
  cached: readonly ApiServerFact[],
  fresh: readonly ApiServerFact[],
): void {
  restartIfStale(informers.staticPods, log, {
    cache: 'static pods',
    resource: 'kube-apiserver pods',
    cached: sorted(cached),
    fresh: sorted(fresh),
  });
}
