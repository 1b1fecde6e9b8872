// The controller-wide notification receivers (`--notify-config-file`): a YAML (or JSON) file mounted
// from a Secret, because it holds webhook URLs and HMAC secrets. Never in Git, logs, status or Events.
import { z } from 'zod';
import { parseGoDuration } from './duration.js';
import { duration, durationAtLeast, objectName } from './primitives.js';

/** What a receiver can be told about. */
export const NotifyEventType = {
  PlanStarted: 'plan.started',
  PlanCompleted: 'plan.completed',
  PlanFailed: 'plan.failed',
  PlanPaused: 'plan.paused',
  NodeStarted: 'node.started',
  NodeCompleted: 'node.completed',
  NodeFailed: 'node.failed',
  /** An auto-update template opened a pull request proposing a new Talos version. */
  ProposalOpened: 'proposal.opened',
  /** A plan has waited on a closed health check for longer than `waitingAfter`. */
  PlanWaiting: 'plan.waiting',
  /** A node has been draining for longer than `waitingAfter` (a PodDisruptionBudget allowing no eviction, pods not terminating). */
  NodeWaiting: 'node.waiting',
} as const;
export type NotifyEventType = (typeof NotifyEventType)[keyof typeof NotifyEventType];
const NOTIFY_EVENT_TYPES: readonly NotifyEventType[] = Object.values(NotifyEventType);

export const ReceiverType = { Webhook: 'webhook', Slack: 'slack', Teams: 'teams', Discord: 'discord' } as const;
export type ReceiverType = (typeof ReceiverType)[keyof typeof ReceiverType];

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** HTTPS, or plain HTTP to loopback only (tests, a sidecar); no credentials in the URL's user part. */
const receiverUrl = z.string().superRefine((text, ctx) => {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be an absolute http(s) URL' });
    return;
  }
  if (
    url.protocol !== 'https:' &&
    !(url.protocol === 'http:' && (LOOPBACK.has(url.hostname) || url.hostname.startsWith('127.')))
  ) {
    ctx.addIssue({ code: 'custom', message: 'must be https:// (plain http:// only for loopback)' });
  }
  if (url.username !== '' || url.password !== '')
    ctx.addIssue({ code: 'custom', message: "must not carry user:password; put secrets in the receiver's secret" });
});

const timeout = duration('10s').refine(
  (v) => {
    const ms = parseGoDuration(v) ?? 0;
    return ms >= 100 && ms <= 120_000;
  },
  { error: 'must be between 100ms and 2m' },
);

const notifyReceiver = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, {
        error: 'must be lowercase letters, digits and "-" (it labels the metrics)',
      })
      .max(63),
    type: z.enum(ReceiverType),
    url: receiverUrl.meta({ description: 'Where to POST. Secret: never logged.' }),
    secret: z.string().min(16, { error: 'must be at least 16 characters' }).optional().meta({
      description: 'webhook only: HMAC-SHA256 key; each body is signed as X-KangalPatch-Signature: sha256=<hex>.',
    }),
    events: z
      .array(z.enum(NOTIFY_EVENT_TYPES as [NotifyEventType, ...NotifyEventType[]]))
      .min(1)
      .optional()
      .meta({ description: 'Event types to send (default: all).' }),
    plans: z
      .array(objectName)
      .min(1)
      .optional()
      .meta({ description: 'Only events of these PatchPlans (default: all plans).' }),
    timeout: timeout.default('10s').meta({ description: 'Per-request timeout.' }),
  })
  .refine((r) => r.type === 'webhook' || r.secret === undefined, {
    path: ['secret'],
    error: 'only a webhook receiver signs its bodies (Slack, Teams and Discord authenticate by their URL)',
  });

export const notifyConfig = z
  .strictObject({
    receivers: z.array(notifyReceiver).max(32),
    queueSize: z
      .int()
      .min(1)
      .max(100_000)
      .default(1000)
      .meta({ description: 'Events waiting per receiver; beyond it the oldest is dropped (counted and logged).' }),
    maxAttempts: z.int().min(1).max(20).default(6).meta({
      description: 'Attempts per event (5xx, 429 and network errors are retried with backoff, honouring Retry-After).',
    }),
    waitingAfter: durationAtLeast('30m', '1s').default('30m').meta({
      description:
        'How long a plan may wait on a closed health check, or a node stay draining, before `plan.waiting` / `node.waiting` is sent (once per wait).',
    }),
  })
  .superRefine((c, ctx) => {
    const seen = new Set<string>();
    c.receivers.forEach((r, i) => {
      if (seen.has(r.name))
        ctx.addIssue({ code: 'custom', path: ['receivers', i, 'name'], message: `"${r.name}" is used twice` });
      seen.add(r.name);
    });
  });

export type NotifyConfig = z.output<typeof notifyConfig>;
export type NotifyReceiver = z.output<typeof notifyReceiver>;
