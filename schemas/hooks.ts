// spec.hooks: Jobs the controller runs in the hooks namespace (--hooks-namespace, not the operator
// namespace) around each node and around the whole plan (Ceph `noout` before a node is disrupted,
// unset after). The template is a subset of a batch/v1 Job's pod template: enough for a hook
// (containers, env, service account, placement), strict so that a typo is an error with its path,
// not a silently ignored field. What a plan may not choose at all is refused here (labels that
// pose as the controller's, security annotations, a timeout past HOOK_TIMEOUT_MAX); what the
// operator allows (service accounts, priority classes, image registries) is decided against the
// controller's flags in controller/core/hook-policy.ts.
import { z } from 'zod';
import { durationAtMost, labelKey, labelValue, timestamp } from './primitives.js';

export const HookName = { PrePlan: 'prePlan', PreNode: 'preNode', PostNode: 'postNode', PostPlan: 'postPlan' } as const;
export type HookName = (typeof HookName)[keyof typeof HookName];

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

const envVar = z.strictObject({
  name: z
    .string()
    .min(1)
    .max(253)
    .regex(ENV_NAME, { error: 'must be letters, digits, "_", "-" and ".", not starting with a digit' }),
  value: z.string().optional(),
  valueFrom: z
    .strictObject({
      secretKeyRef: z
        .strictObject({ name: z.string().min(1), key: z.string().min(1), optional: z.boolean().optional() })
        .optional(),
      configMapKeyRef: z
        .strictObject({ name: z.string().min(1), key: z.string().min(1), optional: z.boolean().optional() })
        .optional(),
    })
    .optional()
    .meta({
      description: "A Secret or ConfigMap key in the hooks namespace (the Job's own; never the operator namespace).",
    }),
});

const quantities = z.record(z.string(), z.string());

/** The longest a hook may run: past it, a hook holds a node or a plan for longer than any maintenance step should. */
const HOOK_TIMEOUT_MAX = '6h';

/** Label prefixes a hook's pod may not carry: the controller's own and the app.kubernetes.io ones of its objects (a hook must not pose as them). */
const RESERVED_HOOK_LABEL_DOMAINS = ['app.kubernetes.io', 'kangalpatch.ozalp.dk'] as const;

const prefixOf = (key: string): string => (key.includes('/') ? key.slice(0, key.indexOf('/')) : '');
const inDomain = (prefix: string, domain: string): boolean => prefix === domain || prefix.endsWith(`.${domain}`);

/** Why a hook pod may not carry label `key`, or undefined when it may. */
export function reservedHookLabel(key: string): string | undefined {
  const prefix = prefixOf(key);
  const domain = RESERVED_HOOK_LABEL_DOMAINS.find((d) => inDomain(prefix, d));
  return domain === undefined
    ? undefined
    : `label "${key}" is refused: ${domain}/ labels are the controller's and its objects' own, a hook may not carry them`;
}

/** Annotation keys that change how the pod is secured (AppArmor, seccomp, Pod Security), and the controller's own domain. */
const SECURITY_ANNOTATION_PREFIX = /(^|[.-])security\.(alpha\.|beta\.)?kubernetes\.io$/;

/** Why a hook pod may not carry annotation `key`, or undefined when it may. */
export function refusedHookAnnotation(key: string): string | undefined {
  const prefix = prefixOf(key);
  if (SECURITY_ANNOTATION_PREFIX.test(prefix) || key === 'kubernetes.io/psp') {
    return `annotation "${key}" is refused: it changes how the pod is secured, and the controller sets that (a restricted securityContext)`;
  }
  if (inDomain(prefix, 'kangalpatch.ozalp.dk'))
    return `annotation "${key}" is refused: kangalpatch.ozalp.dk/ annotations are the controller's own`;
  return undefined;
}

/** Issues at each refused key of a labels or annotations map. */
const refuseKeys =
  (why: (key: string) => string | undefined) =>
  (map: Record<string, string>, ctx: z.core.$RefinementCtx<Record<string, string>>): void => {
    for (const key of Object.keys(map)) {
      const message = why(key);
      if (message !== undefined) ctx.addIssue({ code: 'custom', path: [key], message, input: key });
    }
  };

const hookContainer = z.strictObject({
  name: z.string().max(63).regex(DNS_LABEL, { error: 'must be a DNS label (lowercase letters, digits and "-")' }),
  image: z.string().min(1, { error: 'must name an image' }),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  workingDir: z.string().optional(),
  env: z
    .array(envVar)
    .optional()
    .meta({ description: 'Added to the KANGAL_* variables the controller sets (see docs/hooks.md).' }),
  resources: z.strictObject({ limits: quantities.optional(), requests: quantities.optional() }).optional(),
});

const toleration = z.strictObject({
  key: z.string().optional(),
  operator: z.enum(['Exists', 'Equal']).optional(),
  value: z.string().optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
  tolerationSeconds: z.int().optional(),
});

const hookTemplate = z
  .strictObject({
    metadata: z
      .strictObject({
        labels: z
          .record(labelKey, labelValue)
          .superRefine(refuseKeys(reservedHookLabel))
          .optional()
          .meta({ description: 'Pod labels; app.kubernetes.io/* and kangalpatch.ozalp.dk/* are refused.' }),
        annotations: z.record(labelKey, z.string()).superRefine(refuseKeys(refusedHookAnnotation)).optional().meta({
          description:
            'Pod annotations; security ones (AppArmor, seccomp, Pod Security) and kangalpatch.ozalp.dk/* are refused.',
        }),
      })
      .optional(),
    spec: z.strictObject({
      serviceAccountName: z
        .string()
        .max(253)
        .regex(DNS_LABEL, { error: 'must be a ServiceAccount name in the hooks namespace' })
        .optional()
        .meta({
          description:
            'A ServiceAccount of the hooks namespace the operator allowed (--hook-service-accounts); omitted: default, without a token.',
        }),
      containers: z
        .array(hookContainer)
        .min(1, { error: 'must list at least one container' })
        .max(8, { error: 'must list at most 8 containers' }),
      nodeSelector: z.record(z.string(), z.string()).optional(),
      tolerations: z.array(toleration).optional(),
      priorityClassName: z
        .string()
        .max(253)
        .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { error: 'must be a PriorityClass name' })
        .optional()
        .meta({ description: 'Only one the operator allowed (--hook-priority-classes).' }),
      securityContext: z
        .strictObject({
          runAsUser: z.int().min(1, { error: 'must be a non-root user ID (at least 1)' }).max(2_147_483_647).optional(),
          runAsGroup: z
            .int()
            .min(1, { error: 'must be a non-root group ID (at least 1)' })
            .max(2_147_483_647)
            .optional(),
        })
        .optional()
        .meta({
          description:
            "The user and group the containers run as (default 65534); the rest of the restricted securityContext is the controller's.",
        }),
    }),
  })
  .meta({
    description:
      'Pod template of the hook Job (restartPolicy is always Never; the controller adds labels, KANGAL_* variables and a restricted securityContext).',
  });

export const hookSpec = z
  .strictObject({
    template: hookTemplate,
    timeout: durationAtMost('10m', HOOK_TIMEOUT_MAX, 'a hook holds its node or plan while it runs')
      .default('10m')
      .meta({
        description: `How long the hook may run (also the Job's activeDeadlineSeconds), at most ${HOOK_TIMEOUT_MAX}; past it the hook failed.`,
      }),
    backoffLimit: z
      .int()
      .min(0, { error: 'must be at least 0' })
      .max(10, { error: 'must be at most 10' })
      .default(0)
      .meta({
        description: "Retries of a failed pod before the hook failed (the Job's backoffLimit).",
      }),
  })
  .meta({ description: 'A Job run in the hooks namespace.' });

export const planHooks = z
  .strictObject({
    prePlan: hookSpec.optional().meta({
      description: 'Runs once before the first node; failing it applies the failure policy (reason HookFailed).',
    }),
    preNode: hookSpec.optional().meta({
      description:
        "Runs before each node is cordoned; failing it fails the node's PatchJob (HookFailed) with the node untouched.",
    }),
    postNode: hookSpec.optional().meta({
      description: 'Runs after each node finished, also after a failure; its failure is reported, nothing is undone.',
    }),
    postPlan: hookSpec
      .optional()
      .meta({ description: 'Runs once after the plan ended (Completed, Failed or Cancelled).' }),
  })
  .meta({ description: 'Jobs run around each node and around the plan (see docs/hooks.md).' });

/** The node hooks a PatchJob carries (copied from the plan when the job is created). */
export const nodeHooks = planHooks.pick({ preNode: true, postNode: true });

const HookPhase = { Pending: 'Pending', Running: 'Running', Succeeded: 'Succeeded', Failed: 'Failed' } as const;
type HookPhase = (typeof HookPhase)[keyof typeof HookPhase];

const hookStatus = z.strictObject({
  hook: z.enum(HookName),
  jobName: z.string().meta({ description: 'The hook Job in the hooks namespace.' }),
  phase: z.enum(HookPhase),
  requestedTime: timestamp.meta({
    description:
      'Recorded before the Job is created: a restarted controller creates it under the same name (AlreadyExists is success).',
  }),
  createdTime: timestamp.optional().meta({ description: 'When the Job was created (or found existing).' }),
  deadline: timestamp.meta({ description: 'When the hook fails if it has not finished (requestedTime + timeout).' }),
  startTime: timestamp.optional(),
  completionTime: timestamp.optional(),
  exitCode: z.int().optional().meta({ description: "Exit code of the failed pod's container." }),
  reason: z
    .string()
    .optional()
    .meta({ description: 'HookFailed, HookTimeout or HookRefused (the operator does not allow it) when it failed.' }),
  message: z.string().optional(),
});

export const hookStatuses = z.array(hookStatus).meta({
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['hook'],
  description: 'Hook Jobs of this object and how they went.',
});

export type HookSpec = z.output<typeof hookSpec>;
export type PlanHooks = z.output<typeof planHooks>;
export type HookStatus = z.output<typeof hookStatus>;
