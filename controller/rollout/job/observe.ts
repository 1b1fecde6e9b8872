// Observe for one pass: the job, its node, its leases from the caches; the node's pods live while
// draining; Talos facts only when the phase needs them; and, when a deadline verdict asks for it,
// the facts it rests on read again from the apiserver.
import { KubernetesComponent } from '../../../schemas/patchjob.js';
import { talosNeed, needsPods, type ConfigFacts, type FreshRead, type JobObservation } from '../../core/job/index.js';
import { apiServerFacts, apiServersOn, staticPodFacts, staticPodsOn } from '../kubernetes-facts.js';
import type { KubeInformers, KubePort } from '../../kube/port.js';
import type { NodeView, PodView } from '../../kube/views.js';
import { withTimeout, type OpContext } from '../../runtime/context.js';
import type { TalosPort } from '../../talos/port.js';
import { hookJobFacts } from '../hooks.js';
import type { HookPolicy } from '../../core/hook-policy.js';
import { freshHookJobFacts } from '../hook-jobs-fresh.js';
import { PATCHJOB_LABEL } from '../../core/hooks.js';
import type { Logger } from '../../telemetry/logger.js';
import { callFailure } from '../failure.js';
import { checkApiServerCache, checkNodeCache, checkStaticPodCache } from './fresh-reads.js';
import { talosFacts } from './talos-facts.js';
import { observeEtcd } from './etcd-observe.js';
import type { JobWithSpec } from './job-with-spec.js';

const READ_TIMEOUT_MS = 20_000;

export interface ObserveDeps {
  kube: KubePort;
  informers: KubeInformers;
  operatorNamespace: string;
  /** Where hook Jobs run (--hooks-namespace). */
  hooksNamespace: string;
  /** The operator's hook allowlists (--hook-*). */
  hookPolicy?: HookPolicy | undefined;
}

export interface Observed {
  observed: JobObservation;
  pods: PodView[];
  node: NodeView | undefined;
}

export async function observeJob(
  ctx: OpContext,
  deps: ObserveDeps,
  job: JobWithSpec,
  talos: () => Promise<TalosPort>,
): Promise<Observed> {
  const node = deps.informers.nodes.get(job.spec.nodeName);
  const leases = deps.informers.slotLeases.list().filter((l) => l.holderIdentity === job.name);
  const pods =
    node && needsPods(job.status) ? await deps.kube.listPodsOnNode(withTimeout(ctx, READ_TIMEOUT_MS), node.name) : [];
  const need = talosNeed(job, ctx.clock.now());
  const facts =
    node && need === 'identity' ? await talosFacts(withTimeout(ctx, READ_TIMEOUT_MS), job, node, talos) : undefined;
  const config = node && need === 'config' ? await configFacts(ctx, node, talos) : undefined;
  const kubernetes =
    job.spec.target.kubernetesVersion !== undefined && node ? kubernetesFacts(deps.informers, node) : {};
  const hooks = hookFacts(deps, job);
  const etcd = await observeEtcd(withTimeout(ctx, READ_TIMEOUT_MS), deps, { job, node, talos });
  const fresh: FreshRead[] = node && needsPods(job.status) ? ['nodePods'] : [];
  const volumes = volumeFacts(deps.informers, job);
  const observed = {
    now: ctx.clock.now(),
    job: { name: job.name, uid: job.uid, spec: job.spec, status: job.status },
    node,
    pods,
    leases,
    talos: facts,
    config,
    ...kubernetes,
    ...hooks,
    ...etcd,
    ...volumes,
    fresh,
  };
  return { observed, pods, node };
}

/** A pass's observation and the facts of it to read again. */
export interface FreshReads {
  seen: Observed;
  needs: readonly FreshRead[];
}

/**
 * `seen` with the facts `needs` read from the apiserver instead of the caches (a deadline verdict
 * was about to rest on them); a cache they contradict is restarted. A failed read throws: the caller
 * gives no verdict on what it could not look at.
 */
export async function observeFresh(
  ctx: OpContext,
  deps: ObserveDeps,
  { seen, needs }: FreshReads,
  log: Logger,
): Promise<Observed> {
  const read = withTimeout(ctx, READ_TIMEOUT_MS);
  const name = seen.observed.job.spec.nodeName;
  let { observed, node } = seen;
  if (needs.includes('node')) {
    node = await deps.kube.readNode(read, name);
    checkNodeCache(deps.informers, log, name, node);
    observed = { ...observed, node };
  }
  if (needs.includes('nodePods')) {
    const staticPods = staticPodFacts(await deps.kube.listPodsOnNode(read, name));
    checkStaticPodCache(deps.informers, log, name, { cached: observed.staticPods ?? [], fresh: staticPods });
    observed = { ...observed, staticPods };
  }
  if (needs.includes('apiServers')) {
    const pods = await deps.kube.listStaticPods(read, KubernetesComponent.APIServer);
    const apiServers = apiServersOn(deps.informers.nodes.list(), (n) => pods.filter((p) => p.nodeName === n));
    checkApiServerCache(deps.informers, log, observed.apiServers ?? [], apiServers);
    observed = { ...observed, apiServers };
  }
  if (needs.includes('volumeAttachments')) {
    observed = { ...observed, volumeAttachments: await deps.kube.listVolumeAttachments(read, name) };
  }
  if (needs.includes('hookJobs')) {
    const hookJobs = await freshHookJobFacts(read, deps, log, {
      cached: observed.hookJobs ?? [],
      records: observed.job.status.hooks,
    });
    observed = { ...observed, hookJobs };
  }
  return { observed: { ...observed, fresh: [...(observed.fresh ?? []), ...needs] }, pods: seen.pods, node };
}

/** The job's hook Jobs (from the cache) and the operator's hook allowlists, when the job has hooks. */
function hookFacts(deps: ObserveDeps, job: JobWithSpec): Pick<JobObservation, 'hookJobs' | 'hookPolicy'> {
  return job.spec.hooks === undefined
    ? {}
    : { hookJobs: hookJobFacts(deps.informers, PATCHJOB_LABEL, job.name), hookPolicy: deps.hookPolicy };
}

/** The node's VolumeAttachments (from the cache) while the job drains waiting for volumes to detach. */
function volumeFacts(informers: KubeInformers, job: JobWithSpec): Pick<JobObservation, 'volumeAttachments'> {
  return job.spec.drain.waitForVolumeDetach && job.status.phase === 'Draining'
    ? { volumeAttachments: informers.volumeAttachments.byIndex(job.spec.nodeName).map((v) => v.name) }
    : {};
}

function kubernetesFacts(informers: KubeInformers, node: NodeView): Pick<JobObservation, 'staticPods' | 'apiServers'> {
  return {
    staticPods: node.controlPlane ? staticPodsOn(informers, node.name) : [],
    apiServers: apiServerFacts(informers),
  };
}

async function configFacts(ctx: OpContext, node: NodeView, talos: () => Promise<TalosPort>): Promise<ConfigFacts> {
  try {
    return {
      ok: true,
      config: await (await talos()).readConfig(withTimeout(ctx, READ_TIMEOUT_MS), node.internalIP ?? node.name),
    };
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    return { ok: false, failure: callFailure(err) };
  }
}
