// spec.alertGate and spec.silences: the plan's view of Alertmanager. Firing alerts that match the gate
// hold new nodes (kured's behaviour); while a node is disrupted, its alerts are silenced in
// Alertmanager, with an end time so a crashed controller cannot leave them silenced.
import { z } from 'zod';
import { uniqueNames } from './cross-field.js';
import { duration, MAX_TIMEOUT, timestamp } from './primitives.js';
import { parseMatchers } from './matchers.js';

const MAX_ALERT_SELECTORS = 16;
const MAX_SILENCES = 8;
/** Where a silence's matchers name the node being upgraded. */
export const NODE_PLACEHOLDER = '$(NODE)';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** One list of Alertmanager matchers, all of which must hold: `{severity="critical", alertname=~"Ceph.*"}`. */
const matcherList = z
  .string()
  .min(1, { error: 'must not be empty' })
  .max(1024, { error: 'must be at most 1024 characters' })
  .superRefine((text, ctx) => {
    const parsed = parseMatchers(text);
    if (!parsed.ok)
      ctx.addIssue({
        code: 'custom',
        message: `is not an Alertmanager matcher list (${parsed.error}); write e.g. severity="critical" or {alertname=~"Ceph.*", namespace="rook-ceph"}`,
      });
  })
  .meta({
    description:
      'Alertmanager matchers, all of which must hold, e.g. `severity="critical"` or `{alertname=~"Ceph.*", namespace="rook-ceph"}`.',
  });

export const alertGate = z
  .strictObject({
    alerts: z
      .array(matcherList)
      .min(1, { error: 'must list at least one matcher list, e.g. severity="critical"' })
      .max(MAX_ALERT_SELECTORS, { error: `must list at most ${MAX_ALERT_SELECTORS} matcher lists` })
      .meta({ description: 'A firing alert that matches any of these matcher lists holds new nodes.' }),
    ignore: z
      .array(matcherList)
      .max(MAX_ALERT_SELECTORS, { error: `must list at most ${MAX_ALERT_SELECTORS} matcher lists` })
      .default([])
      .meta({ description: 'Alerts matching any of these never hold the rollout (e.g. alertname="Watchdog").' }),
    timeout: duration('1h', { max: MAX_TIMEOUT }).default('1h').meta({
      description:
        'How long the rollout waits for the alerts to stop before the failure policy applies (reason AlertGateTimeout).',
    }),
  })
  .meta({
    description:
      'Firing alerts (in the Alertmanager given by `kangal-patch run --alertmanager-url`, neither silenced nor inhibited) that hold scheduling new nodes while they fire. ' +
      'An unreachable Alertmanager holds too.',
  });

const silence = z
  .strictObject({
    name: z
      .string()
      .max(63, { error: 'must be at most 63 characters' })
      .regex(DNS_LABEL, { error: 'must be lowercase letters, digits and "-" (it names the silence in status)' })
      .meta({ description: 'Names the silence in the PatchJob status; unique in the plan.' }),
    matchers: matcherList.meta({
      description: `Alertmanager matchers of the alerts to silence; ${NODE_PLACEHOLDER} in a value is replaced by the node's name, e.g. {alertname=~"KubeNode.*|TargetDown"}.`,
    }),
    nodeLabel: z
      .string()
      .regex(LABEL_NAME, { error: 'must be a label name such as "node" or "instance"' })
      .default('node')
      .meta({
        description:
          'The silence also matches this label equal to the node\'s name (`node="<name>"`), so it never silences other nodes.',
      }),
    comment: z.string().max(512).optional().meta({ description: "Added to the silence's comment in Alertmanager." }),
  })
  .meta({
    description:
      'A silence created in Alertmanager before the node is cordoned and expired when its PatchJob finishes.',
  });

export const silences = z
  .array(silence)
  .max(MAX_SILENCES, { error: `must list at most ${MAX_SILENCES} silences` })
  .superRefine(...uniqueNames('silence'))
  .meta({
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
    description: 'Silences in Alertmanager while each node is disrupted (see docs/health-gates.md).',
  });

export const alertWait = z
  .strictObject({
    startTime: timestamp.meta({ description: 'When the wait for the alerts began.' }),
    deadline: timestamp.meta({
      description: 'When the failure policy applies if alerts still hold the rollout (startTime + alertGate.timeout).',
    }),
    alerts: z
      .array(z.string())
      .optional()
      .meta({ description: 'The alerts that hold the rollout (alertname and labels), at most a few.' }),
  })
  .meta({ description: 'Set while the alert gate holds the rollout.' });

/** One silence of a PatchJob: recorded (tag, end) before it is created, its ID once created. */
export const jobSilence = z.strictObject({
  name: z.string().meta({ description: "The plan's silence entry." }),
  tag: z.string().meta({
    description:
      "Written into the silence's comment: a restarted controller finds the silence by it instead of creating a second.",
  }),
  endsAt: timestamp.meta({ description: 'When Alertmanager ends the silence on its own, even if nobody expires it.' }),
  id: z.string().optional().meta({ description: "Alertmanager's silence ID, recorded before the node is cordoned." }),
  expiredTime: timestamp
    .optional()
    .meta({ description: 'When the controller expired the silence (the job finished).' }),
});

export type AlertGate = z.output<typeof alertGate>;
export type Silence = z.output<typeof silence>;
export type AlertWait = z.output<typeof alertWait>;
export type JobSilence = z.output<typeof jobSilence>;
