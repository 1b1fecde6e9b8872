// spec.target of a PatchPlan and the narrower target copied into each PatchJob.
import { z } from 'zod';
import { duration, durationAtLeast, MAX_CHECK_INTERVAL, MAX_RELEASE_AGE, version } from './primitives.js';
import { withRules } from './cross-field.js';
import { TARGET_RULES } from './rules.js';
import { TargetPath } from './path.js';

export const ImageSource = { Factory: 'factory', Ghcr: 'ghcr' } as const;
export type ImageSource = (typeof ImageSource)[keyof typeof ImageSource];

const AutoUpdateAllow = { Patch: 'patch', Minor: 'minor' } as const;
type AutoUpdateAllow = (typeof AutoUpdateAllow)[keyof typeof AutoUpdateAllow];

const planName = z
  .string()
  .max(63, { error: 'must be at most 63 characters' })
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, {
    error: 'must be a PatchPlan name (lowercase letters, digits, "-", ".")',
  });

const promotionStage = z
  .strictObject({
    cluster: z
      .string()
      .max(63, { error: 'must be at most 63 characters' })
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, {
        error: "must be a cluster name as given to that controller's --cluster-name (a DNS label)",
      })
      .meta({
        description:
          "The upstream cluster (its controller's --cluster-name); its signed rollout reports under status/<cluster>/ are the evidence.",
      }),
    template: planName.optional().meta({
      description:
        "Only rollouts of this upstream auto-update template's child plans (<template>-vX-Y-Z) count. Omitted: every report of the cluster.",
    }),
    plan: planName.optional().meta({
      description: 'Only rollouts of this upstream PatchPlan count (exact name). Omitted: every report of the cluster.',
    }),
  })
  .meta({ description: 'One upstream stage a version must have completed on first.' });

export const promotionSpec = z
  .strictObject({
    after: z.array(promotionStage).min(1, { error: 'must name at least one upstream stage' }).max(10).meta({
      description:
        'Upstream stages: a version is proposed only after every one of them completed it (no failed node) and soaked.',
    }),
    soak: duration('24h', { max: MAX_RELEASE_AGE }).default('24h').meta({
      description:
        'How long a version must have run on every upstream stage after its rollout completed, with no later rollout there failing or moving off it.',
    }),
  })
  .meta({
    description:
      'Promotion across clusters: propose only versions proven on the upstream clusters (their reports in Git).',
  });

export const autoUpdateSpec = z
  .strictObject({
    enabled: z.boolean().meta({
      description:
        'Makes the plan a template (phase Watching) that creates a child plan per new Talos release instead of patching nodes.',
    }),
    allow: z.enum(AutoUpdateAllow).default('patch').meta({
      description:
        'Largest automatic step from the lowest Talos version on the selected nodes: patch (same minor) or minor (next minor, never skipping one).',
    }),
    checkInterval: durationAtLeast('30m', '1m', MAX_CHECK_INTERVAL)
      .default('1h')
      .meta({ description: 'How often releases are checked (minimum 1m).' }),
    minReleaseAge: duration('72h', { max: MAX_RELEASE_AGE })
      .default('0s')
      .meta({ description: 'How old a release must be before it is used.' }),
    promotion: promotionSpec.optional(),
  })
  .meta({
    description:
      'Follow upstream Talos releases. talosVersion, kubernetesVersion and allowTalosDowngrade must be omitted.',
  });

const imageFields = {
  talosVersion: version('v1.12.1').optional().meta({
    description: 'Target Talos OS version, a quoted string such as "v1.12.1". Omit to leave Talos untouched.',
  }),
  kubernetesVersion: version('v1.34.1')
    .optional()
    .meta({ description: 'Target Kubernetes version, such as "v1.34.1". Omit to leave Kubernetes untouched.' }),
  source: z.enum(ImageSource).default('ghcr').meta({
    description:
      'Where the installer image comes from: factory (factory.talos.dev, needed from Talos 1.14) or ghcr (ghcr.io/siderolabs/installer).',
  }),
  installer: z
    .string()
    .max(63, { error: 'must be at most 63 characters' })
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, {
      error: 'must be an installer type such as "metal", "nocloud" or "aws"',
    })
    .optional()
    .meta({
      description:
        "Installer type (metal, nocloud, aws, ...), source factory only. Omitted: each node's own platform, as its Talos API reports it (Version platform).",
    }),
  schematicID: z
    .string()
    .regex(/^[0-9a-f]{64}$/, { error: 'must be an Image Factory schematic ID (64 lowercase hex characters)' })
    .optional()
    .meta({ description: 'Image Factory schematic ID. Omitted: each node keeps the schematic it runs.' }),
  secureBoot: z.boolean().optional().meta({
    description:
      "Use the secure boot installer (source factory only). Omitted: each node's own Secure Boot state, as its Talos API reports it (SecurityState).",
  }),
  allowTalosDowngrade: z
    .boolean()
    .default(false)
    .meta({ description: 'Allow moving nodes to an older Talos version than they run. Refused otherwise.' }),
};

export const planTarget = withRules(
  z
    .strictObject({
      ...imageFields,
      path: z.enum(TargetPath).optional().meta({
        description:
          'direct (the default): the nodes go to the target in one step (preflight refuses a step the support matrix does not allow). stepwise: the target is the destination; preflight computes every hop (each Talos minor in between at its latest patch, Kubernetes one minor at a time, every node supported before and after each hop) and the plan rolls out hop by hop (status.path).',
      }),
      autoUpdate: autoUpdateSpec.optional(),
    })
    .meta({ description: 'Target Talos and/or Kubernetes versions and how the installer image is resolved.' }),
  TARGET_RULES,
);

export const jobTarget = z.strictObject(imageFields).meta({
  description: 'Versions this node is moved to, copied from the plan.',
  'x-kubernetes-validations': [
    {
      rule: 'has(self.talosVersion) || has(self.kubernetesVersion)',
      message: 'at least one of target.talosVersion or target.kubernetesVersion must be set',
    },
  ],
});
