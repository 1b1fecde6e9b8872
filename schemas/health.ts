// spec.healthChecks: conditions over other objects of the cluster (a Longhorn volume's robustness, a
// CephCluster's health) that must hold before the rollout goes on. The expression's syntax is checked
// where the CEL library lives (controller/health-checks/), by the plan loader and the controller; here only
// its shape.
import { z } from 'zod';
import { uniqueNames, withRules, type CrossFieldRule } from './cross-field.js';
import { duration, labelSelector, MAX_TIMEOUT, namespaceName } from './primitives.js';

export const HealthCheckWhen = {
  BeforeRollout: 'beforeRollout',
  BeforeEachNode: 'beforeEachNode',
  AfterEachNode: 'afterEachNode',
} as const;
export type HealthCheckWhen = (typeof HealthCheckWhen)[keyof typeof HealthCheckWhen];

const OnNoMatch = { Fail: 'fail', Hold: 'hold' } as const;
type OnNoMatch = (typeof OnNoMatch)[keyof typeof OnNoMatch];

const MAX_HEALTH_CHECKS = 16;
const MAX_EXPR_LENGTH = 2048;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
// "v1" (the core group) or "group/version".
const API_VERSION =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?v[0-9]+((alpha|beta)[0-9]+)?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;

const HEALTH_CHECK_RULES: readonly CrossFieldRule[] = [
  {
    id: 'healthCheck.objectNameOrSelector',
    path: ['labelSelector'],
    holds: (c) => c.objectName === undefined || c.labelSelector === undefined,
    cel: '!has(self.objectName) || !has(self.labelSelector)',
    message:
      'must not be set together with objectName: a check reads one named object, the objects matching a selector, or all objects of the kind',
  },
  {
    id: 'healthCheck.noSecrets',
    path: ['kind'],
    holds: (c) => !(c.apiVersion === 'v1' && c.kind === 'Secret'),
    cel: "!(self.apiVersion == 'v1' && self.kind == 'Secret')",
    message:
      'Secrets cannot be health-checked: a check must never read credentials (check the object that uses the Secret instead)',
  },
];

export const healthCheck = withRules(
  z.strictObject({
    name: z
      .string()
      .max(63, { error: 'must be at most 63 characters' })
      .regex(DNS_LABEL, {
        error: 'must be lowercase letters, digits and "-" (it names the check in status and messages)',
      })
      .meta({ description: 'Names the check in status, messages and Events; unique in the plan.' }),
    apiVersion: z
      .string()
      .max(253)
      .regex(API_VERSION, { error: 'must be "v1" or "group/version" such as "longhorn.io/v1beta2"' })
      .meta({ description: 'API version of the checked objects, e.g. "longhorn.io/v1beta2".' }),
    kind: z
      .string()
      .max(63)
      .regex(KIND, { error: 'must be a kind such as "Volume" (starts with an upper-case letter)' })
      .meta({
        description: 'Kind of the checked objects, e.g. "Volume" (its resource is found through API discovery).',
      }),
    namespace: namespaceName
      .optional()
      .meta({ description: 'Namespace of the checked objects. Omitted: all namespaces (or a cluster-scoped kind).' }),
    objectName: z.string().max(253).regex(DNS_SUBDOMAIN, { error: 'must be a valid Kubernetes name' }).optional().meta({
      description: 'Check this one object. Omitted: the objects matching labelSelector, or all objects of the kind.',
    }),
    labelSelector: labelSelector.optional().meta({ description: 'Check the objects carrying these labels.' }),
    expr: z
      .string()
      .min(1, { error: 'must not be empty' })
      .max(MAX_EXPR_LENGTH, { error: `must be at most ${MAX_EXPR_LENGTH} characters` })
      .meta({
        description:
          'CEL expression evaluated over each matched object, whose top-level fields are variables: ' +
          '`status.conditions.exists(c, c.type == "Ready" && c.status == "True")`, `has(status.robustness) && status.robustness == "healthy"`. ' +
          'The check holds when it is true for every matched object.',
      }),
    timeout: duration('10m', { max: MAX_TIMEOUT }).default('10m').meta({
      description:
        'How long the rollout waits for the check to hold before the failure policy applies (reason HealthCheckTimeout).',
    }),
    when: z.enum(HealthCheckWhen).default('beforeEachNode').meta({
      description:
        'beforeRollout: once, before the first node. beforeEachNode: before each new node is scheduled. afterEachNode: after a node completes, the next node waits until it holds.',
    }),
    onNoMatch: z.enum(OnNoMatch).default('hold').meta({
      description:
        'When no object matches: hold (wait, as for a failing object, until the timeout) or fail (apply the failure policy at once). Never a pass.',
    }),
  }),
  HEALTH_CHECK_RULES,
);

export const healthChecks = z
  .array(healthCheck)
  .max(MAX_HEALTH_CHECKS, { error: `must list at most ${MAX_HEALTH_CHECKS} checks` })
  .superRefine(...uniqueNames('check'))
  .meta({
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
    description:
      'Conditions over other objects of the cluster that must hold before the rollout goes on (see docs/health-gates.md).',
  });

export const healthCheckWait = z
  .strictObject({
    name: z.string().meta({ description: 'The check the rollout waits for.' }),
    when: z.enum(HealthCheckWhen),
    startTime: z.iso.datetime({ offset: true }).meta({ description: 'When the wait began.' }),
    deadline: z.iso
      .datetime({ offset: true })
      .meta({ description: 'When the failure policy applies if the check still does not hold (startTime + timeout).' }),
  })
  .meta({ description: 'Set while a closed health check holds the rollout.' });

export type HealthCheck = z.output<typeof healthCheck>;
export type HealthCheckWait = z.output<typeof healthCheckWait>;
