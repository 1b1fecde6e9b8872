// spec.silences: the node's alerts are silenced in Alertmanager while it is disrupted. Record first:
// each silence's tag and end time are written to status before it is created (the adapter finds an
// existing silence by its tag instead of creating a second after a restart), its ID before the cordon.
// When the job finishes (completed or failed) every recorded silence is expired; the end time bounds
// a silence nobody expires (a controller that never comes back).
import { NODE_PLACEHOLDER, type JobSilence, type Silence } from '../../../schemas/alerts.js';
import { parseMatchers, type Matcher } from '../../../schemas/matchers.js';
import { durationMs, iso } from './status.js';
import type { CallFailure, JobObservation, JobStep, SilenceRequest } from './types.js';

export const SilenceReason = {
  SilencingAlerts: 'SilencingAlerts',
  SilenceFailed: 'SilenceFailed',
} as const;

/** The author Alertmanager shows for every silence of the controller. */
const SILENCE_CREATED_BY = 'kangal-patch';

/** How long a silence may be needed: the drain, the upgrade and the reboot, and the Kubernetes steps if the plan has them. */
function silenceTtlMs(spec: JobObservation['job']['spec']): number {
  const kubernetes = spec.target.kubernetesVersion === undefined ? 0 : 2 * durationMs(spec.kubernetesUpgradeTimeout);
  return durationMs(spec.drainTimeout) + 2 * durationMs(spec.rebootTimeout) + kubernetes;
}

/** The silence's matchers: the plan's, with $(NODE) replaced by the node's name, and nodeLabel="<node>". */
export function silenceMatchers(s: Silence, node: string): Matcher[] {
  const parsed = parseMatchers(s.matchers);
  // The schema refused unparsable matchers; an empty list here still silences only the node.
  const own = parsed.ok
    ? parsed.matchers.map((m) => ({ ...m, value: m.value.replaceAll(NODE_PLACEHOLDER, node) }))
    : [];
  return [...own.filter((m) => !(m.name === s.nodeLabel && m.op === '=')), { name: s.nodeLabel, op: '=', value: node }];
}

function silenceRequest(o: JobObservation, s: Silence, recorded: JobSilence): SilenceRequest {
  const { spec, name } = o.job;
  const comment = `KangalPatch ${name}: node ${spec.nodeName} is being upgraded (plan ${spec.patchPlanRef}); expired when the job finishes${s.comment ? `. ${s.comment}` : ''} [${recorded.tag}]`;
  return {
    name: s.name,
    tag: recorded.tag,
    matchers: silenceMatchers(s, spec.nodeName),
    endsAt: recorded.endsAt,
    createdBy: SILENCE_CREATED_BY,
    comment,
  };
}

/**
 * Before the cordon: the step that records or creates the next silence, or undefined once every
 * silence has its ID (the job goes on to drain).
 */
export function silenceBeforeCordon(o: JobObservation): JobStep | undefined {
  const { spec, name } = o.job;
  const wanted = spec.silences ?? [];
  if (wanted.length === 0) return undefined;
  const status = o.job.status;
  const recorded = status.silences ?? [];
  const missing = wanted.filter((w) => !recorded.some((r) => r.name === w.name));
  if (missing.length > 0) {
    const endsAt = iso(o.now + silenceTtlMs(spec));
    const added = missing.map((w) => ({ name: w.name, tag: `${name}/${w.name}@${iso(o.now)}`, endsAt }));
    const message = `silencing alerts of node ${spec.nodeName} in Alertmanager until ${endsAt} (${wanted.map((w) => w.name).join(', ')})`;
    return {
      status: { ...status, silences: [...recorded, ...added], reason: SilenceReason.SilencingAlerts, message },
      events: [],
      requeueAfterMs: 0,
    };
  }
  const next = recorded.find((r) => r.id === undefined && r.expiredTime === undefined);
  const entry = next && wanted.find((w) => w.name === next.name);
  if (!next || !entry) return undefined;
  return {
    action: { type: 'createSilence', silence: silenceRequest(o, entry, next) },
    status,
    events: [],
    requeueAfterMs: 0,
  };
}

/** After createSilence: its ID, recorded before anything else happens to the node. */
export function afterSilenced(o: JobObservation, tag: string, id: string): JobStep {
  const status = o.job.status;
  const silences = (status.silences ?? []).map((s) => (s.tag === tag ? { ...s, id } : s));
  const made = silences.find((s) => s.tag === tag);
  const note = `silenced alerts of node ${o.job.spec.nodeName} in Alertmanager: silence ${made?.name ?? tag} (${id}) until ${made?.endsAt ?? '?'}`;
  return {
    status: { ...status, silences, message: note },
    events: [{ type: 'Normal', reason: 'AlertsSilenced', note }],
    requeueAfterMs: 0,
  };
}

/** When the job has finished: expire the next silence that was recorded (created or maybe created) and not yet expired. */
export function expireSilences(o: JobObservation): JobStep | undefined {
  const status = o.job.status;
  const next = (status.silences ?? []).find((s) => s.expiredTime === undefined);
  if (!next) return undefined;
  const silences = (status.silences ?? []).map((s) => (s.tag === next.tag ? { ...s, expiredTime: iso(o.now) } : s));
  // Past its end time Alertmanager ended it already: nothing to ask.
  if (o.now >= Date.parse(next.endsAt)) return { status: { ...status, silences }, events: [], requeueAfterMs: 0 };
  return {
    action: { type: 'expireSilence', tag: next.tag, ...(next.id === undefined ? {} : { id: next.id }) },
    status: { ...status, silences },
    events:
      next.id === undefined
        ? []
        : [
            {
              type: 'Normal',
              reason: 'SilenceExpired',
              note: `expired silence ${next.name} (${next.id}) of node ${o.job.spec.nodeName}`,
            },
          ],
    requeueAfterMs: 0,
  };
}

/** Expiring failed (Alertmanager down): retried with a growing delay; the silence's end time bounds it anyway. */
export function expireFailed(o: JobObservation, tag: string, failure: CallFailure): JobStep {
  const status = o.job.status;
  const s = (status.silences ?? []).find((x) => x.tag === tag);
  const before = (status.message ?? '').replace(/;? ?expiring silence .*$/s, '');
  const message = `${before}; expiring silence ${s?.name ?? tag} in Alertmanager failed (retrying; it ends by itself at ${s?.endsAt ?? '?'}): ${failure.message}`;
  const since = Date.parse(status.completionTime ?? '') || o.now;
  const retryMs = Math.min(60_000, Math.max(1_000, Math.round((o.now - since) / 4)));
  const endsIn = Date.parse(s?.endsAt ?? '') - o.now;
  return {
    status: { ...status, message: message.replace(/^; /, '') },
    events: [],
    requeueAfterMs: Number.isNaN(endsIn) ? retryMs : Math.max(0, Math.min(retryMs, endsIn)),
  };
}
