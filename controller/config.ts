// `kangal-patch run` settings: flags, each with a KANGAL_PATCH_<FLAG> environment fallback, checked
// at start with one clear message per bad value.
import { hostname } from 'node:os';
import { randomBytes, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { DEFAULT_OPERATOR_NAMESPACE } from '../schemas/api.js';
import { parseGoDuration } from '../schemas/duration.js';
import { parseMirrorFlag } from './registry/index.js';
import { LOG_LEVELS } from './telemetry/logger.js';
import { parseBindAddress, type BindAddress } from './telemetry/http.js';
import { checkGitUrl } from './gitops/git-url.js';
import { checkAlertmanagerUrl, tokenMaySend } from './alertmanager/url.js';
import { checkReleasesBaseUrl } from './forge/releases.js';
import type { NotifyConfig } from '../schemas/notify.js';
import type { TrustedKeys } from './gitops/promotion/signature.js';

/** Flag name → its default (as text, the way a user would type it). */
export const RUN_FLAGS = {
  kubeconfig: { flag: '--kubeconfig <path>', help: 'kubeconfig file (default: in-cluster, else $KUBECONFIG)', default: undefined },
  namespace: { flag: '--namespace <name>', help: 'operator namespace (Talos Secrets and Leases live here)', default: DEFAULT_OPERATOR_NAMESPACE },
  metricsBindAddress: { flag: '--metrics-bind-address <addr>', help: 'metrics endpoint, 0 disables', default: ':8080' },
  healthProbeBindAddress: { flag: '--health-probe-bind-address <addr>', help: '/healthz and /readyz endpoint, 0 disables', default: ':8081' },
  leaderElect: { flag: '--leader-elect [bool]', help: 'elect a leader among replicas with a Lease', default: 'false' },
  leaderElectionId: { flag: '--leader-election-id <name>', help: 'name of the leader election Lease', default: 'kangal-patch-leader' },
  leaderElectionLeaseDuration: { flag: '--leader-election-lease-duration <duration>', help: 'how long a leader lease is valid', default: '15s' },
  leaderElectionRenewDeadline: { flag: '--leader-election-renew-deadline <duration>', help: 'leader gives up when it cannot renew for this long', default: '10s' },
  leaderElectionRetryPeriod: { flag: '--leader-election-retry-period <duration>', help: 'how often to try to acquire or renew', default: '2s' },
  logLevel: { flag: '--log-level <level>', help: `log level (${LOG_LEVELS.join(', ')})`, default: 'info' },
  maxConcurrentReconciles: { flag: '--max-concurrent-reconciles <n>', help: 'PatchJobs worked on at the same time, the oldest first when more are due', default: '16' },
  registryMirror: { flag: '--registry-mirror <host=url...>', help: 'check images of a registry at a mirror, e.g. ghcr.io=http://127.0.0.1:5000 (repeatable; env: comma-separated)', default: undefined },
  preflightRetryPeriod: { flag: '--preflight-retry-period <duration>', help: 'how long a plan whose preflight failed waits before checking again', default: '1m' },
  nodeName: { flag: '--node-name <name>', help: 'the node this controller runs on (default $NODE_NAME): patched last in its group', default: undefined },
  gitUrl: { flag: '--git-url <url>', help: 'plans repository (HTTPS; plain HTTP only for loopback); unset: plans come from kubectl only', default: undefined },
  gitBranch: { flag: '--git-branch <name>', help: 'branch of the plans repository', default: 'main' },
  gitPath: { flag: '--git-path <dir>', help: 'folder of plan files (*.yaml, *.yml, recursively) in the repository', default: 'plans' },
  pollInterval: { flag: '--poll-interval <duration>', help: 'how often to ask the remote for the branch head (jittered ±10%)', default: '1m' },
  gitTokenFile: { flag: '--git-token-file <path>', help: 'file holding the read token (re-read on every poll, so rotation needs no restart)', default: undefined },
  gitWriteTokenFile: { flag: '--git-write-token-file <path>', help: 'file holding the token for pushes and the forge API (default: the read token)', default: undefined },
  gitCacheDir: { flag: '--git-cache-dir <dir>', help: 'where the shallow clone lives (default: a temporary directory)', default: undefined },
  forge: { flag: '--forge <kind>', help: 'pull requests and commit statuses through github, gitea or none', default: 'github' },
  forgeApiUrl: { flag: '--forge-api-url <url>', help: 'forge REST API base (GitHub Enterprise, Gitea/Forgejo); default from the git URL', default: undefined },
  clusterName: { flag: '--cluster-name <name>', help: 'this cluster in branch names, PR titles, report paths and commit-status contexts (required with --git-url)', default: undefined },
  gitAuthor: { flag: '--git-author <author>', help: 'author and committer of the controller commits, "Name <email>"', default: 'kangal-patch <kangal-patch@users.noreply.local>' },
  webhookBindAddress: { flag: '--webhook-bind-address <addr>', help: 'GitHub push webhook endpoint (POST any path), 0 disables', default: '0' },
  webhookSecretFile: { flag: '--webhook-secret-file <path>', help: 'file holding the webhook secret (X-Hub-Signature-256); required with --webhook-bind-address', default: undefined },
  releasesApiUrl: { flag: '--releases-api-url <url>', help: 'GitHub REST API that lists the siderolabs/talos releases for auto-update templates (GHES: https://host/api/v3)', default: 'https://api.github.com' },
  releasesTokenFile: { flag: '--releases-token-file <path>', help: 'file holding a token for the releases API (optional: anonymous has a lower rate limit)', default: undefined },
  alertmanagerUrl: { flag: '--alertmanager-url <url>', help: 'Alertmanager (API v2) for spec.alertGate and spec.silences, e.g. http://alertmanager-operated.monitoring:9093', default: undefined },
  alertmanagerTokenFile: { flag: '--alertmanager-token-file <path>', help: 'file holding a bearer token for Alertmanager (re-read on every call; needs an https:// or loopback URL)', default: undefined },
  alertmanagerInterval: { flag: '--alertmanager-interval <duration>', help: 'how often a closed alert gate asks Alertmanager again (it has no watch API)', default: '10s' },
  reportMinInterval: { flag: '--report-min-interval <duration>', help: 'least time between two commits to one rollout report (the last state is always written)', default: '30s' },
  reportSigningKeyFile: { flag: '--report-signing-key-file <path>', help: 'Ed25519 private key (PEM) that signs this cluster\'s rollout reports, so downstream clusters accept them as promotion evidence; read at start', default: undefined },
  promotionKeysDir: { flag: '--promotion-keys-dir <dir>', help: 'folder of <cluster>.pem Ed25519 public keys of upstream clusters: only reports they signed count for autoUpdate.promotion; read at start', default: undefined },
  notifyConfigFile: { flag: '--notify-config-file <path>', help: 'notification receivers (webhook, Slack, Teams, Discord), YAML from a mounted Secret; read at start', default: undefined },
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
const bool = z.string().transform((text, ctx) => {
  if (/^(true|1|yes)$/i.test(text)) return true;
  if (/^(false|0|no)$/i.test(text)) return false;
  ctx.addIssue({ code: 'custom', message: `"${text}" is not true or false` });
  return z.NEVER;
});

export const runConfigSchema = z
  .object({
    kubeconfig: z.string().min(1).optional(),
    namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: 'must be a namespace name (lowercase letters, digits, "-")' }).max(63),
    metricsBindAddress: bind,
    healthProbeBindAddress: bind,
    leaderElect: bool,
    leaderElectionId: z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { error: 'must be a Lease name' }),
    leaderElectionLeaseDuration: durationMs,
    leaderElectionRenewDeadline: durationMs,
    leaderElectionRetryPeriod: durationMs,
    logLevel: z.enum(LOG_LEVELS),
    maxConcurrentReconciles: z.coerce.number().int().min(1).max(1000),
    registryMirror: z.string().optional().transform((text, ctx) => {
      const mirrors: Record<string, string> = {};
      for (const part of (text ?? '').split(',').map((p) => p.trim()).filter((p) => p !== '')) {
        const m = parseMirrorFlag(part);
        if (m instanceof Error) ctx.addIssue({ code: 'custom', message: m.message });
        else mirrors[m.host] = m.url;
      }
      return mirrors;
    }),
    nodeName: z.string().min(1).optional(),
    preflightRetryPeriod: durationMs,
    gitUrl: z.string().optional().superRefine((text, ctx) => {
      const problem = text === undefined ? undefined : checkGitUrl(text);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    gitBranch: z.string().regex(/^(?!.*\.\.)(?!\/)(?!.*\/$)[A-Za-z0-9._/-]+$/, { error: 'must be a branch name such as "main"' }),
    gitPath: z.string().transform((text, ctx) => {
      const clean = text.replace(/^\/+|\/+$/g, '');
      if (clean.split('/').some((seg) => seg === '..' || seg === '.' || seg === '') && clean !== '') {
        ctx.addIssue({ code: 'custom', message: 'must be a folder inside the repository such as "plans" (no "..", ".", or empty segments)' });
        return z.NEVER;
      }
      return clean;
    }),
    pollInterval: durationMs,
    gitTokenFile: z.string().min(1).optional(),
    gitWriteTokenFile: z.string().min(1).optional(),
    gitCacheDir: z.string().min(1).optional(),
    forge: z.enum(['github', 'gitea', 'none']),
    forgeApiUrl: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
    clusterName: z.string().max(63).regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: 'must be a DNS label (lowercase letters, digits, "-", at most 63)' }).optional(),
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
    alertmanagerUrl: z.string().optional().superRefine((text, ctx) => {
      const problem = text === undefined ? undefined : checkAlertmanagerUrl(text);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
    alertmanagerTokenFile: z.string().min(1).optional(),
    alertmanagerInterval: durationMs,
    reportMinInterval: durationMs,
    reportSigningKeyFile: z.string().min(1).optional(),
    promotionKeysDir: z.string().min(1).optional(),
  })
  .refine((c) => c.gitUrl === undefined || c.clusterName !== undefined, { path: ['clusterName'], error: 'is required with --git-url' })
  .refine((c) => c.alertmanagerTokenFile === undefined || c.alertmanagerUrl !== undefined, { path: ['alertmanagerTokenFile'], error: 'needs --alertmanager-url' })
  .refine((c) => c.alertmanagerTokenFile === undefined || c.alertmanagerUrl === undefined || tokenMaySend(c.alertmanagerUrl), {
    path: ['alertmanagerTokenFile'],
    error: 'a token is sent only over https:// (or to a loopback host): change --alertmanager-url to https://',
  })
  .refine((c) => c.webhookBindAddress === undefined || c.webhookSecretFile !== undefined, { path: ['webhookSecretFile'], error: 'is required with --webhook-bind-address' })
  .refine((c) => c.leaderElectionRenewDeadline < c.leaderElectionLeaseDuration, {
    path: ['leaderElectionRenewDeadline'],
    error: 'must be shorter than --leader-election-lease-duration',
  });

/**
 * KANGAL_PATCH_DEBUG_CLOCK_OFFSET (milliseconds, environment only): shifts the controller's clock, so
 * a maintenance window can be rehearsed or tested without waiting for it. Not a flag on purpose.
 */
const debugClockOffset = z.coerce.number().int().min(-7 * 86_400_000, { error: 'must be within 7 days' }).max(7 * 86_400_000, { error: 'must be within 7 days' }).default(0);

export type RunConfig = z.output<typeof runConfigSchema> & {
  identity: string;
  debugClockOffsetMs: number;
  /** The receivers read from --notify-config-file at start (undefined: no notifications). */
  notify?: NotifyConfig | undefined;
  /** The key of --report-signing-key-file, read at start (undefined: reports are not signed). */
  reportSigningKey?: KeyObject | undefined;
  /** The keys of --promotion-keys-dir, read at start (undefined: autoUpdate.promotion has no evidence). */
  trustedKeys?: TrustedKeys | undefined;
};

/** Flags over environment over defaults; errors name the flag and its environment variable. */
export function resolveRunConfig(flags: Partial<Record<RunFlagName, string | boolean | string[]>>, env: NodeJS.ProcessEnv): RunConfig | { errors: string[] } {
  const raw: Record<string, string | undefined> = {};
  for (const [name, def] of Object.entries(RUN_FLAGS)) {
    const given = flags[name as RunFlagName];
    const text = Array.isArray(given) ? given.join(',') : given === true ? 'true' : given === false ? 'false' : given;
    raw[name] = text ?? env[envName(name)] ?? def.default;
  }
  raw.nodeName ??= env.NODE_NAME;
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
  if (!offset.success) return { errors: [`KANGAL_PATCH_DEBUG_CLOCK_OFFSET: ${offset.error.issues[0]?.message ?? 'invalid'} (milliseconds)`] };
  const identity = `${env.POD_NAME ?? hostname()}_${randomBytes(4).toString('hex')}`;
  return { ...parsed.data, identity, debugClockOffsetMs: offset.data };
}
