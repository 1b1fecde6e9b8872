// A fresh read that disagrees with the cache on what the job decides by means the informer missed
// events: its watch may be silent on a half-open connection (no FIN: a NAT or load balancer dropped
// its state), which the watchdog notices only after the watch's server timeout. The informer is
// restarted from a fresh list so every other job and plan sees the truth too, not only this one.
import { isDeepStrictEqual } from 'node:util';
import type { JobNodeFacts, StaticPodFacts } from '../../core/job/index.js';
import type { ApiServerFact } from '../../core/kubernetes/skew.js';
import type { KubeInformers } from '../../kube/port.js';
import type { NodeView } from '../../kube/views.js';
import type { Logger } from '../../telemetry/logger.js';

/** What the job decides by, of a Node (resourceVersion apart: it moves with every status post). */
function nodeFacts(n: NodeView | undefined): JobNodeFacts | undefined {
  if (!n) return undefined;
  const { name, internalIP, ready, unschedulable, cordonedBy, bootID, talosVersion, schematic, controlPlane, kubeletVersion } = n;
  return { name, internalIP, ready, unschedulable, cordonedBy, bootID, talosVersion, schematic, controlPlane, kubeletVersion };
}

const sorted = <T>(xs: readonly T[]): string[] => xs.map((x) => JSON.stringify(x)).sort();

export function checkNodeCache(informers: Pick<KubeInformers, 'nodes'>, log: Logger, name: string, fresh: NodeView | undefined): void {
  const cached = nodeFacts(informers.nodes.get(name));
  const now = nodeFacts(fresh);
  if (isDeepStrictEqual(cached, now)) return;
  // This job's next passes see the fresh Node at once, before the re-list lands.
  if (fresh) informers.nodes.observeWrite(fresh);
  restart(informers.nodes, log, `node/${name}`, 'nodes', cached, now);
}

export function checkStaticPodCache(informers: Pick<KubeInformers, 'staticPods'>, log: Logger, nodeName: string, cached: readonly StaticPodFacts[], fresh: readonly StaticPodFacts[]): void {
  if (isDeepStrictEqual(sorted(cached), sorted(fresh))) return;
  restart(informers.staticPods, log, `static pods of node/${nodeName}`, 'static pods', cached, fresh);
}

export function checkApiServerCache(informers: Pick<KubeInformers, 'staticPods'>, log: Logger, cached: readonly ApiServerFact[], fresh: readonly ApiServerFact[]): void {
  if (isDeepStrictEqual(sorted(cached), sorted(fresh))) return;
  restart(informers.staticPods, log, 'kube-apiserver pods', 'static pods', cached, fresh);
}

function restart(informer: KubeInformers['nodes'] | KubeInformers['staticPods'], log: Logger, resource: string, name: string, cached: unknown, fresh: unknown): void {
  log.warn({ resource, cached, fresh }, `the ${name} cache is stale: ${resource} differs from a fresh read; restarting the ${name} watch from a fresh list`);
  informer.breakWatch({ relist: true, reason: `stale cache: ${resource} differed from a fresh read` });
}
