// The one action of a pass, against the adapters. Returns what the decision needs to know.
import {
  ETCD_LEASE_LABEL,
  ETCD_LEASE_NAME,
  type ActionResult,
  type JobAction,
  type JobStep,
} from '../../core/job/index.js';
import type { KubeInformers, KubePort } from '../../kube/port.js';
import type { JobView, NodeView, PodView } from '../../kube/views.js';
import { epoch } from '../../core/job/status.js';
import { withTimeout, type OpContext } from '../../runtime/context.js';
import type { Logger } from '../../telemetry/logger.js';
import type { PullProgress, TalosPort } from '../../talos/port.js';
import { pulledNothing } from '../../talos/pull-progress.js';
import { createHookJob } from '../hooks.js';
import type { AlertmanagerPort } from '../../alertmanager/client.js';
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';

const CALL_TIMEOUT_MS = 30_000;

export interface PerformDeps {
  kube: KubePort;
  informers: KubeInformers;
  operatorNamespace: string;
  hooksNamespace: string;
  /** Alertmanager, for spec.silences; undefined: the controller runs without --alertmanager-url. */
  alertmanager?: AlertmanagerPort | undefined;
}

export interface ActionTarget {
  job: JobView;
  node: NodeView | undefined;
  pods: readonly PodView[];
  talos: () => Promise<TalosPort>;
  log: Logger;
}

/** The actions that are Talos API calls; the others go to the Kubernetes API. */
const TALOS_ACTION_TYPES = [
  'pull',
  'install',
  'legacyUpgrade',
  'reboot',
  'rollback',
  'applyConfig',
  'forfeitLeadership',
] as const;
type TalosAction = Extract<JobAction, { type: (typeof TALOS_ACTION_TYPES)[number] }>;
type SilenceAction = Extract<JobAction, { type: 'createSilence' | 'expireSilence' }>;
type KubeAction = Exclude<JobAction, TalosAction | SilenceAction>;

function isSilenceAction(action: JobAction): action is SilenceAction {
  return action.type === 'createSilence' || action.type === 'expireSilence';
}

function isTalosAction(action: JobAction): action is TalosAction {
  return (TALOS_ACTION_TYPES as readonly string[]).includes(action.type);
}

export async function perform(
  ctx: OpContext,
  deps: PerformDeps,
  t: ActionTarget,
  step: JobStep & { action: JobAction },
): Promise<ActionResult> {
  const action = step.action;
  // Nothing outlives the phase deadline; long Talos operations (pull, install) may take all of it.
  const phaseLeft = Math.max(1_000, (epoch(t.job.status.deadline) ?? Number.MAX_SAFE_INTEGER) - ctx.clock.now());
  const call = withTimeout(ctx, Math.min(CALL_TIMEOUT_MS, phaseLeft));
  const long = withTimeout(ctx, phaseLeft);
  if (isSilenceAction(action)) return performSilence(deps.alertmanager, action, call);
  return isTalosAction(action) ? performTalos(t, action, call, long) : performKube(deps, t, action, call);
}

async function performSilence(
  alertmanager: AlertmanagerPort | undefined,
  action: SilenceAction,
  call: OpContext,
): Promise<ActionResult> {
  // Without Alertmanager no silence can have been created: nothing to expire.
  if (!alertmanager && action.type === 'expireSilence' && action.id === undefined) return { type: 'done' };
  if (!alertmanager) {
    throw new OutcomeError({
      kind: OutcomeKind.Stalled,
      reason: 'AlertmanagerNotConfigured',
      message: 'the plan sets spec.silences but the controller runs without --alertmanager-url',
    });
  }
  if (action.type === 'createSilence')
    return { type: 'silenced', tag: action.silence.tag, id: await alertmanager.createSilence(call, action.silence) };
  await alertmanager.expireSilence(call, action.tag, action.id);
  return { type: 'done' };
}

/** The node as the Talos API targets it: its InternalIP, else its name. */
function talosTarget(t: ActionTarget): string {
  return t.node?.internalIP ?? t.node?.name ?? t.job.spec?.nodeName ?? '';
}

/** `call` bounds a single request; `long` (pull, install) may take what is left of the phase. */
async function performTalos(
  t: ActionTarget,
  action: TalosAction,
  call: OpContext,
  long: OpContext,
): Promise<ActionResult> {
  const ip = talosTarget(t);
  switch (action.type) {
    case 'pull': {
      // Whether anything was downloaded: a pre-pulled installer's pull is skipped (only the name, no progress).
      const statuses: string[] = [];
      const onProgress = (p: PullProgress): void => void statuses.push(p.status);
      await (
        await t.talos()
      ).pullImage(long, ip, action.image, { ...(action.namespace ? { namespace: action.namespace } : {}), onProgress });
      return { type: 'pulled', alreadyPresent: pulledNothing(statuses) };
    }
    case 'install': {
      const res = await (
        await t.talos()
      ).installImage(long, ip, action.image, (line) => t.log.info({ installer: line }, 'installer'));
      return { type: 'installed', exitCode: res.exitCode, messages: res.messages };
    }
    case 'legacyUpgrade':
      await (await t.talos()).legacyUpgrade(call, ip, action.image, { rebootMode: action.rebootMode });
      return { type: 'done' };
    case 'reboot':
      await (await t.talos()).reboot(call, ip, action.mode);
      return { type: 'done' };
    case 'rollback':
      await (await t.talos()).rollback(call, ip);
      return { type: 'done' };
    case 'applyConfig':
      await (await t.talos()).applyConfig(call, ip, action.config);
      return { type: 'done' };
    case 'forfeitLeadership':
      await (await t.talos()).etcdForfeitLeadership(call, ip);
      return { type: 'done' };
  }
}

async function performKube(
  deps: PerformDeps,
  t: ActionTarget,
  action: KubeAction,
  call: OpContext,
): Promise<ActionResult> {
  switch (action.type) {
    case 'cordon':
    case 'uncordon': {
      if (!t.node) return { type: 'done' };
      const fn = action.type === 'cordon' ? deps.kube.cordon.bind(deps.kube) : deps.kube.uncordon.bind(deps.kube);
      deps.informers.nodes.observeWrite(await fn(call, t.node, t.job.name));
      return { type: 'done' };
    }
    case 'evict':
      return evictAll(call, deps.kube, t, action);
    case 'releaseLeases':
      for (const lease of action.leases) {
        await deps.kube.deleteLease(call, deps.operatorNamespace, lease.name, lease.resourceVersion);
        // The plan's next pass sees the slot free without waiting for the delete's watch event.
        deps.informers.slotLeases.observeDelete(lease.name, lease.resourceVersion);
      }
      return { type: 'done' };
    case 'createHookJob':
      await createHookJob(deps, call, action.job);
      return { type: 'done' };
    case 'acquireEtcdLease':
      await deps.kube.createSlotLease(call, {
        namespace: deps.operatorNamespace,
        name: ETCD_LEASE_NAME,
        labels: { [ETCD_LEASE_LABEL]: 'true' },
        holderIdentity: t.job.name,
      });
      return { type: 'done' };
    case 'releaseEtcdLease':
      await deps.kube.deleteLease(call, deps.operatorNamespace, ETCD_LEASE_NAME, action.resourceVersion);
      return { type: 'done' };
  }
}

const EVICTIONS_IN_PARALLEL = 5;

/** Evicts the pods a few at a time, as kubectl drain does in parallel; a blocked one is deleted (respectPDBs: false) or reported with its PDBs. */
async function evictAll(
  ctx: OpContext,
  kube: KubePort,
  t: ActionTarget,
  { pods: refs, deleteIfBlocked }: Extract<JobAction, { type: 'evict' }>,
): Promise<ActionResult> {
  const result: Extract<ActionResult, { type: 'evicted' }> = { type: 'evicted', evicted: 0, deleted: [], blocked: [] };
  const queue = refs.flatMap((ref) => t.pods.filter((p) => p.uid === ref.uid).map((pod) => ({ ref, pod })));
  const worker = async (): Promise<void> => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const { ref, pod } = next;
      const res = await kube.evictPod(ctx, pod);
      if (res.outcome === 'evicted') result.evicted++;
      if (res.outcome !== 'blocked') continue;
      if (deleteIfBlocked) {
        await kube.deletePod(ctx, pod);
        result.deleted.push(ref);
      } else {
        result.blocked.push({ pod: ref, pdbs: await kube.matchingPdbs(ctx, pod) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(EVICTIONS_IN_PARALLEL, queue.length) }, worker));
  return result;
}
