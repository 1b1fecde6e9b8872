// `kangal-patch run` settings: flags, each with a KANGAL_PATCH_<FLAG> environment fallback, checked
// at start with one clear message per bad value.
import { hostname } from 'node:os';
import { randomBytes, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { DEFAULT_HOOKS_NAMESPACE, DEFAULT_OPERATOR_NAMESPACE } from '../schemas/api.js';
import { CONTROLLER_SERVICE_ACCOUNT, registryEntry, type HookPolicy } from './core/hook-policy.js';
import { parseGoDuration } from '../schemas/duration.js';
import { parseMirrorFlag } from './registry/index.js';
import { LOG_LEVELS } from './telemetry/logger.js';
import { parseBindAddress, type BindAddress } from './telemetry/http.js';
import { checkGitUrl } from './gitops/git-url.js';
import { checkAlertmanagerUrl, tokenMaySend } from './alertmanager/url.js';
import { checkApiBaseUrl, checkReleasesBaseUrl } from './forge/releases.js';
import type { NotifyConfig } from '../schemas/notify.js';
import type { TrustedKeys } from './gitops/promotion/signature.js';

/** Flag name → its default (as text, the way a user would type it). */
export const RUN_FLAGS = {
  kubeconfig: {
    flag: '--kubeconfig <path>',
    help: 'kubeconfig file (default: in-cluster, else $KUBECONFIG)',
    default: undefined,
  },
  namespace: {
    flag: '--namespace <name>',
    help: 'operator namespace (Talos Secrets and Leases live here)',
    default: DEFAULT_OPERATOR_NAMESPACE,
  },
  metricsBindAddress: { flag: '--metrics-bind-address <addr>', help: 'metrics endpoint, 0 disables', default: ':8080' },
  healthProbeBindAddress: {
    flag: '--health-probe-bind-address <addr>',
    help: '/healthz and /readyz endpoint, 0 disables',
    default: ':8081',
  },
  leaderElect: { flag: '--leader-elect [bool]', help: 'elect a leader among replicas with a Lease', default: 'false' },
  leaderElectionId: {
    flag: '--leader-election-id <name>',
    help: 'name of the leader election Lease',
    default: 'kangal-patch-leader',
  },
  leaderElectionLeaseDuration: {
    flag: '--leader-election-lease-duration <duration>',
    help: 'how long a leader lease is valid',
    default: '15s',
  },
  leaderElectionRenewDeadline: {
    flag: '--leader-election-renew-deadline <duration>',
    help: 'leader gives up when it cannot renew for this long',
    default: '10s',
  },
  leaderElectionRetryPeriod: {
    flag: '--leader-election-retry-period <duration>',
    help: 'how often to try to acquire or renew',
    default: '2s',
  },
  logLevel: { flag: '--log-level <level>', help: `log level (${LOG_LEVELS.join(', ')})`, default: 'info' },
  maxConcurrentReconciles: {
    flag: '--max-concurrent-reconciles <n>',
    help: 'PatchJobs worked on at the same time, the oldest first when more are due',
    default: '16',
  },
  registryMirror: {
    flag: '--registry-mirror <host=url...>',
    help: 'check images of a registry at a mirror, e.g. ghcr.io=http://127.0.0.1:5000 (repeatable; env: comma-separated)',
    default: undefined,
  },
  preflightRetryPeriod: {
    flag: '--preflight-retry-period <duration>',
    help: 'how long a plan whose preflight failed waits before checking again',
    default: '1m',
  },
  healthCheckServiceAccount: {
    flag: '--health-check-service-account <name>',
    help: "ServiceAccount of the operator namespace that health checks read as (impersonated): they see only what it is granted, never the controller's own rights",
    default: 'kangal-patch-health',
  },
  nodeName: {
    flag: '--node-name <name>',
    help: 'the node this controller runs on (default $NODE_NAME): patched last in its group',
    default: undefined,
  },
  gitUrl: {
    flag: '--git-url <url>',
    help: 'plans repository (HTTPS; plain HTTP only for loopback); unset: plans come from kubectl only',
    default: undefined,
  },
  gitBranch: { flag: '--git-branch <name>', help: 'branch of the plans repository', default: 'main' },
  gitPath: {
    flag: '--git-path <dir>',
    help: 'folder of plan files (*.yaml, *.yml, recursively) in the repository',
    default: 'plans',
  },
  pollInterval: {
    flag: '--poll-interval <duration>',
    help: 'how often to ask the remote for the branch head (jittered ±10%)',
    default: '1m',
  },
  gitTokenFile: {
    flag: '--git-token-file <path>',
    help: 'file holding the read token (re-read on every poll, so rotation needs no restart)',
    default: undefined,
  },
  gitWriteTokenFile: {
    flag: '--git-write-token-file <path>',
    help: 'file holding the token for pushes and the forge API (default: the read token)',
    default: undefined,
  },
  gitMaxFetchBytes: {
    flag: '--git-max-fetch-bytes <n>',
    help: 'bytes one fetch of the plans repository may receive (ref advertisement and pack); a larger commit is refused, the plans applied before stay',
    default: String(64 * 1024 * 1024),
  },
  gitCacheDir: {
    flag: '--git-cache-dir <dir>',
    help: 'where the shallow clone lives (default: a temporary directory)',
    default: undefined,
  },
  forge: {
    flag: '--forge <kind>',
    help: 'pull requests and commit statuses through github, gitea or none',
    default: 'github',
  },
  forgeApiUrl: {
    flag: '--forge-api-url <url>',
    help: 'forge REST API base (GitHub Enterprise, Gitea/Forgejo; HTTPS, plain HTTP only for loopback); default from the git URL',
    default: undefined,
  },
  clusterName: {
    flag: '--cluster-name <name>',
    help: 'this cluster in branch names, PR titles, report paths and commit-status contexts (required with --git-url)',
    default: undefined,
  },
  gitAuthor: {
    flag: '--git-author <author>',
    help: 'author and committer of the controller commits, "Name <email>"',
    default: 'kangal-patch <kangal-patch@users.noreply.local>',
  },
  webhookBindAddress: {
    flag: '--webhook-bind-address <addr>',
    help: 'GitHub push webhook endpoint (POST any path), 0 disables',
    default: '0',
  },
  webhookSecretFile: {
    flag: '--webhook-secret-file <path>',
    help: 'file holding the webhook secret (X-Hub-Signature-256); required with --webhook-bind-address',
    default: undefined,
  },
  releasesApiUrl: {
    flag: '--releases-api-url <url>',
    help: 'GitHub REST API that lists the siderolabs/talos releases for auto-update templates (GHES: https://host/api/v3)',
    default: 'https://api.github.com',
  },
  releasesTokenFile: {
    flag: '--releases-token-file <path>',
    help: 'file holding a token for the releases API (optional: anonymous has a lower rate limit)',
    default: undefined,
  },
  alertmanagerUrl: {
    flag: '--alertmanager-url <url>',
    help: 'Alertmanager (API v2) for spec.alertGate and spec.silences, e.g. http://alertmanager-operated.monitoring:9093',
    default: undefined,
  },
  alertmanagerTokenFile: {
    flag: '--alertmanager-token-file <path>',
    help: 'file holding a bearer token for Alertmanager (re-read on every call; needs an https:// or loopback URL)',
    default: undefined,
  },
  alertmanagerInterval: {
    flag: '--alertmanager-interval <duration>',
    help: 'how often a closed alert gate asks Alertmanager again (it has no watch API)',
    default: '10s',
  },
  reportMinInterval: {
    flag: '--report-min-interval <duration>',
    help: 'least time between two commits to one rollout report (the last state is always written)',
    default: '30s',
  },
  reportSigningKeyFile: {
    flag: '--report-signing-key-file <path>',
    help: "Ed25519 private key (PEM) that signs this cluster's rollout reports, so downstream clusters accept them as promotion evidence; read at start",
    default: undefined,
  },
  promotionKeysDir: {
    flag: '--promotion-keys-dir <dir>',
    help: 'folder of <cluster>.pem Ed25519 public keys of upstream clusters: only reports they signed count for autoUpdate.promotion; read at start',
    default: undefined,
  },
  hooksNamespace: {
    flag: '--hooks-namespace <name>',
    help: "namespace of the hook Jobs (Pod Security restricted; none of the controller's Secrets): never the operator namespace",
    default: DEFAULT_HOOKS_NAMESPACE,
  },
  hookServiceAccounts: {
    flag: '--hook-service-accounts <names>',
    help: 'ServiceAccounts of the hooks namespace a hook may run as, with their token (comma-separated; default none: only `default`, without a token)',
    default: undefined,
  },
  hookPriorityClasses: {
    flag: '--hook-priority-classes <names>',
    help: 'PriorityClasses a hook may ask for (comma-separated; default none)',
    default: undefined,
  },
  hookImageRegistries: {
    flag: '--hook-image-registries <registries>',
    help: 'registries hook images must come from, a host or a host and path, e.g. ghcr.io/acme,registry.example.com (comma-separated; default: any)',
    default: undefined,
  },
  notifyConfigFile: {
    flag: '--notify-config-file <path>',
    help: 'notification receivers (webhook, Slack, Teams, Discord), YAML from a mounted Secret; read at start',
    default: undefined,
  },
} as const;
export type RunFlagName = keyof typeof RUN_FLAGS;

export const envName = (name: string): string => `KANGAL_PATCH_${name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;

const bind = z.string().transform((text, ctx): BindAddress | undefined => {
  const b = parseBindAddress(text);
  if (b instanceof Error) {
    ctx.addIssue({ code: 'custom', message: b.message });
    return z.NEVER;
  }
  return b;
});
const durationMs = z.string().transform((text, ctx) => {
  const ms = parseGoDuration(text);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({ code: 'custom', message: `"${text}" is not a positive duration such as "15s" or "1m"` });
    return z.NEVER;
  }
  return ms;
});
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** A comma-separated list of object names (empty: none). */
const names = (what: string) =>
  z
    .string()
    .optional()
    .transform((text, ctx) => {
      const list = (text ?? '')
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== '');
      for (const n of list)
        if (!NAME.test(n) || n.length > 253) ctx.addIssue({ code: 'custom', message: `"${n}" is not a ${what} name` });
      return [...new Set(list)];
    });
const registries = z
  .string()
  .optional()
  .transform((text, ctx) => {
    const out: string[] = [];
    for (const part of (text ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '')) {
      const entry = registryEntry(part);
      if (entry instanceof Error) ctx.addIssue({ code: 'custom', message: entry.message });
      else out.push(entry);
    }
    return out;
  });
const bool = z.string().transform((text, ctx) => {
  if (/^(true|1|yes)$/i.test(text)) return true;
  if (/^(false|0|no)$/i.test(text)) return false;
  ctx.addIssue({ code: 'custom', message: `"${text}" is not true or false` });
  return z.NEVER;
});

export const runConfigSchema = z
  .object({
    kubeconfig: z.string().min(1).optional(),
    namespace: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: 'must be a namespace name (lowercase letters, digits, "-")' })
      .max(63),
    metricsBindAddress: bind,
    healthProbeBindAddress: bind,
    leaderElect: bool,
    leaderElectionId: z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { error: 'must be a Lease name' }),
    leaderElectionLeaseDuration: durationMs,
    leaderElectionRenewDeadline: durationMs,
    leaderElectionRetryPeriod: durationMs,
    logLevel: z.enum(LOG_LEVELS),
    maxConcurrentReconciles: z.coerce.number().int().min(1).max(1000),
    registryMirror: z
      .string()
      .optional()
      .transform((text, ctx) => {
        const mirrors: Record<string, string> = {};
        for (const part of (text ?? '')
          .split(',')
          .map((p) => p.trim())
          .filter((p) => p !== '')) {
          const m = parseMirrorFlag(part);
          if (m instanceof Error) ctx.addIssue({ code: 'custom', message: m.message });
          else mirrors[m.host] = m.url;
        }
        return mirrors;
      }),
    healthCheckServiceAccount: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { error: 'must be a ServiceAccount name' })
      .max(253),
    nodeName: z.string().min(1).optional(),
    preflightRetryPeriod: durationMs,
    gitUrl: z
      .string()
      .optional()
      .superRefine((text, ctx) => {
        const problem = text === undefined ? undefined : checkGitUrl(text);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
    gitBranch: z
      .string()
      .regex(/^(?!.*\.\.)(?!\/)(?!.*\/$)[A-Za-z0-9._/-]+$/, { error: 'must be a branch name such as "main"' }),
    gitPath: z.string().transform((text, ctx) => {
      const clean = text.replace(/^\/+|\/+$/g, '');
      if (clean.split('/').some((seg) => seg === '..' || seg === '.' || seg === '') && clean !== '') {
        ctx.addIssue({
          code: 'custom',
          message: 'must be a folder inside the repository such as "plans" (no "..", ".", or empty segments)',
        });
        return z.NEVER;
      }
      return clean;
    }),
    pollInterval: durationMs,
    gitTokenFile: z.string().min(1).optional(),
    gitWriteTokenFile: z.string().min(1).optional(),
    gitMaxFetchBytes: z.coerce
      .number({ error: 'must be a number of bytes' })
      .int({ error: 'must be a whole number of bytes' })
      .min(1024 * 1024, { error: 'must be at least 1048576 (1 MiB)' })
      .max(2 ** 31 - 1, { error: 'must be below 2 GiB' }),
    gitCacheDir: z.string().min(1).optional(),
    forge: z.enum(['github', 'gitea', 'none']),
    forgeApiUrl: z
      .string()
      .optional()
      .transform((text, ctx) => {
        if (text === undefined) return undefined;
        const url = checkApiBaseUrl(text, 'forge API base URL');
        if (url instanceof Error) {
          ctx.addIssue({ code: 'custom', message: url.message });
          return z.NEVER;
        }
        return url;
      }),
    clusterName: z
      .string()
      .max(63)
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, {
        error: 'must be a DNS label (lowercase letters, digits, "-", at most 63)',
      })
      .optional(),
    gitAuthor: z
      .string()
      .regex(/^[^<>]+ <[^<>@\s]+@[^<>\s]+>$/, { error: 'must look like "Name <email>"' })
      .transform((text) => {
        const m = /^(.+) <([^<>]+)>$/.exec(text);
        return { name: m?.[1] ?? text, email: m?.[2] ?? '' };
      }),
    webhookBindAddress: bind,
    webhookSecretFile: z.string().min(1).optional(),
    releasesApiUrl: z.string().transform((text, ctx) => {
      const url = checkReleasesBaseUrl(text);
      if (url instanceof Error) {
        ctx.addIssue({ code: 'custom', message: url.message });
        return z.NEVER;
      }
      return url;
    }),
    releasesTokenFile: z.string().min(1).optional(),
    notifyConfigFile: z.string().min(1).optional(),
    hooksNamespace: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: 'must be a namespace name (lowercase letters, digits, "-")' })
      .max(63),
    hookServiceAccounts: names('ServiceAccount'),
    hookPriorityClasses: names('PriorityClass'),
    hookImageRegistries: registries,
    alertmanagerUrl: z
      .string()
      .optional()
      .superRefine((text, ctx) => {
        const problem = text === undefined ? undefined : checkAlertmanagerUrl(text);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
    alertmanagerTokenFile: z.string().min(1).optional(),
    alertmanagerInterval: durationMs,
    reportMinInterval: durationMs,
    reportSigningKeyFile: z.string().min(1).optional(),
    promotionKeysDir: z.string().min(1).optional(),
  })
  .refine((c) => c.gitUrl === undefined || c.clusterName !== undefined, {
    path: ['clusterName'],
    error: 'is required with --git-url',
  })
  .refine((c) => c.alertmanagerTokenFile === undefined || c.alertmanagerUrl !== undefined, {
    path: ['alertmanagerTokenFile'],
    error: 'needs --alertmanager-url',
  })
  .refine(
    (c) => c.alertmanagerTokenFile === undefined || c.alertmanagerUrl === undefined || tokenMaySend(c.alertmanagerUrl),
    {
      path: ['alertmanagerTokenFile'],
      error: 'a token is sent only over https:// (or to a loopback host): change --alertmanager-url to https://',
    },
  )
  .refine((c) => c.webhookBindAddress === undefined || c.webhookSecretFile !== undefined, {
    path: ['webhookSecretFile'],
    error: 'is required with --webhook-bind-address',
  })
  .refine((c) => c.hooksNamespace !== c.namespace, {
    path: ['hooksNamespace'],
    error:
      "must not be the operator namespace: hooks run where none of the controller's Secrets are (e.g. kangal-patch-hooks)",
  })
  .refine((c) => c.leaderElectionRenewDeadline < c.leaderElectionLeaseDuration, {
    path: ['leaderElectionRenewDeadline'],
    error: 'must be shorter than --leader-election-lease-duration',
  });

/**
 * KANGAL_PATCH_DEBUG_CLOCK_OFFSET (milliseconds, environment only): shifts the controller's clock, so
 * a maintenance window can be rehearsed or tested without waiting for it. Not a flag on purpose.
 */
const debugClockOffset = z.coerce
  .number()
  .int()
  .min(-7 * 86_400_000, { error: 'must be within 7 days' })
  .max(7 * 86_400_000, { error: 'must be within 7 days' })
  .default(0);

export type RunConfig = z.output<typeof runConfigSchema> & {
  identity: string;
  /** What plans' hooks may be given: the --hook-* allowlists and the controller's own ServiceAccount ($POD_SERVICE_ACCOUNT). */
  hookPolicy: HookPolicy;
  debugClockOffsetMs: number;
  /** The receivers read from --notify-config-file at start (undefined: no notifications). */
  notify?: NotifyConfig | undefined;
  /** The key of --report-signing-key-file, read at start (undefined: reports are not signed). */
  reportSigningKey?: KeyObject | undefined;
  /** The keys of --promotion-keys-dir, read at start (undefined: autoUpdate.promotion has no evidence). */
  trustedKeys?: TrustedKeys | undefined;
};

type RunFlags = Partial<Record<RunFlagName, string | boolean | string[]>>;

/** Each setting's text before parsing: its flag, else its environment variable, else its default. */
function rawRunConfig(flags: RunFlags, env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  const raw: Record<string, string | undefined> = {};
  for (const [name, def] of Object.entries(RUN_FLAGS)) {
    const given = flags[name as RunFlagName];
    const text = Array.isArray(given) ? given.join(',') : given === true ? 'true' : given === false ? 'false' : given;
    raw[name] = text ?? env[envName(name)] ?? def.default;
  }
  raw.nodeName ??= env.NODE_NAME;
  return raw;
}

/** Flags over environment over defaults; errors name the flag and its environment variable. */
export function resolveRunConfig(flags: RunFlags, env: NodeJS.ProcessEnv): RunConfig | { errors: string[] } {
  const raw = rawRunConfig(flags, env);
  const parsed = runConfigSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      errors: parsed.error.issues.map((i) => {
        const name = String(i.path[0] ?? '');
        const flag = RUN_FLAGS[name as RunFlagName]?.flag.split(' ')[0] ?? name;
        return `${flag} (${envName(name)}): ${i.message}`;
      }),
    };
  }
  const offset = debugClockOffset.safeParse(env.KANGAL_PATCH_DEBUG_CLOCK_OFFSET);
  if (!offset.success)
    return {
      errors: [`KANGAL_PATCH_DEBUG_CLOCK_OFFSET: ${offset.error.issues[0]?.message ?? 'invalid'} (milliseconds)`],
    };
  const identity = `${env.POD_NAME ?? hostname()}_${randomBytes(4).toString('hex')}`;
  const hookPolicy = hookPolicyOf(parsed.data, env.POD_SERVICE_ACCOUNT);
  if (hookPolicy instanceof Error) return { errors: [hookPolicy.message] };
  return { ...parsed.data, identity, hookPolicy, debugClockOffsetMs: offset.data };
}

/** The hook allowlists; the controller's own ServiceAccount is never one a hook may run as. */
function hookPolicyOf(c: z.output<typeof runConfigSchema>, ownServiceAccount: string | undefined): HookPolicy | Error {
  const controllerServiceAccount =
    ownServiceAccount !== undefined && ownServiceAccount !== '' ? ownServiceAccount : CONTROLLER_SERVICE_ACCOUNT;
  const own = c.hookServiceAccounts.filter((n) => n === controllerServiceAccount || n === CONTROLLER_SERVICE_ACCOUNT);
  if (own.length > 0) {
    return new Error(
      `--hook-service-accounts (${envName('hookServiceAccounts')}): ${own.join(', ')} is the controller's own ServiceAccount name; hooks never run as it: give them a ServiceAccount of their own`,
    );
  }
  return {
    serviceAccounts: c.hookServiceAccounts,
    priorityClasses: c.hookPriorityClasses,
    imageRegistries: c.hookImageRegistries,
    controllerServiceAccount,
  };
}
