// The Helm chart's values (charts/kangal-patch): the one source of values.schema.json, the commented
// values.yaml and the values table of docs/install.md (schemas/chart.ts renders all three). Defaults here are
// the chart's defaults; they mirror kustomize/manager where both exist.
import { z } from 'zod';
import { DEFAULT_HOOKS_NAMESPACE } from './api.js';

const text = (def: string, description: string) => z.string().default(def).describe(description);
const flag = (def: boolean, description: string) => z.boolean().default(def).describe(description);
/** A Go duration as the controller's flags take it ("30s", "1m", "1h30m"). */
const goDuration = (def: string, description: string) =>
  z
    .string()
    .regex(/^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/, { error: 'must be a duration such as "30s" or "1m"' })
    .default(def)
    .describe(description);
const port = (def: number, description: string) =>
  z.number().int().min(1).max(65535).default(def).describe(description);
/** Free-form Kubernetes fields passed through as given (the apiserver checks them). */
const object = (description: string, def: Record<string, unknown> = {}) =>
  z.record(z.string(), z.unknown()).default(def).describe(description);
const objects = (description: string) => z.array(z.record(z.string(), z.unknown())).default([]).describe(description);
const stringMap = (description: string) => z.record(z.string(), z.string()).default({}).describe(description);
const dnsLabel = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$/;
const httpUrl = /^https?:\/\/[^\s/@]+(\/\S*)?$/;
/** `re` or the empty string (an unset optional value). */
const optional = (re: RegExp): RegExp => new RegExp(`^(${re.source.slice(1, -1)})?$`);

/** The controller's log levels (controller/telemetry/logger.ts LOG_LEVELS; a unit test keeps them equal). */
export const CHART_LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
/** The controller's --forge kinds (controller/config.ts; a unit test keeps them equal). */
export const CHART_FORGES = ['github', 'gitea', 'none'] as const;

export const chartValues = z
  .strictObject({
    nameOverride: text('', 'Replaces the chart name in object names and the app.kubernetes.io/name label.'),
    fullnameOverride: text(
      '',
      'Replaces the whole name prefix of every object (default: the release name, with "-kangal-patch" unless it contains it).',
    ),
    image: z
      .strictObject({
        repository: text('ghcr.io/ozalp/kangal-patch', 'Controller image repository.'),
        tag: text('', "Image tag; empty: the chart's appVersion."),
        digest: z
          .string()
          .regex(/^(sha256:[0-9a-f]{64})?$/, { error: 'must be empty or "sha256:" and 64 hex digits' })
          .default('')
          .describe('Image digest (sha256:...); when set, the image is pulled by digest.'),
        pullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).default('IfNotPresent').describe('Image pull policy.'),
        pullSecrets: z
          .array(z.string().min(1))
          .default([])
          .describe('Names of image pull Secrets in the release namespace.'),
      })
      .prefault({})
      .describe('The controller image.'),
    replicas: z
      .number()
      .int()
      .min(1)
      .default(2)
      .describe('Controller replicas; more than one needs leaderElection.enabled.'),
    leaderElection: z
      .strictObject({
        enabled: flag(true, 'Elect one active replica with a Lease (--leader-elect); the others stand by.'),
        id: z
          .string()
          .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { error: 'must be a Lease name' })
          .default('kangal-patch-leader')
          .describe('Name of the leader Lease (--leader-election-id).'),
        leaseDuration: goDuration('15s', 'How long a leader Lease is valid (--leader-election-lease-duration).'),
        renewDeadline: goDuration(
          '10s',
          'The leader gives up when it cannot renew for this long (--leader-election-renew-deadline).',
        ),
        retryPeriod: goDuration('2s', 'How often to try to acquire or renew (--leader-election-retry-period).'),
      })
      .prefault({})
      .describe('Leader election among the replicas.'),
    resources: object('Container resources.', {
      requests: { cpu: '50m', memory: '128Mi' },
      limits: { memory: '512Mi' },
    }),
    heapPercentOfMemoryLimit: z
      .number()
      .int()
      .min(5)
      .max(75)
      .default(25)
      .describe(
        'The controller\'s V8 heap (old space) as a percentage of resources.limits.memory, in NODE_OPTIONS (--max-old-space-size-percentage): raising the limit raises the heap. docs/install.md "Sizing the controller pod".',
      ),
    nodeSelector: stringMap('Pod nodeSelector.'),
    tolerations: objects('Pod tolerations.'),
    affinity: object(
      'Pod affinity; empty: spread the replicas over nodes (preferred pod anti-affinity on kubernetes.io/hostname).',
    ),
    priorityClassName: text('', 'Pod priorityClassName.'),
    podSecurityContext: object('Pod securityContext (Pod Security "restricted").', {
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      fsGroup: 65532,
      seccompProfile: { type: 'RuntimeDefault' },
    }),
    securityContext: object('Container securityContext (read-only root filesystem, no capabilities).', {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    }),
    terminationGracePeriodSeconds: z
      .number()
      .int()
      .min(0)
      .default(30)
      .describe(
        'SIGTERM abandons the current step (resumable from status), so a drain never waits long for the controller.',
      ),
    logLevel: z.enum(CHART_LOG_LEVELS).default('info').describe('Log level (--log-level).'),
    maxConcurrentReconciles: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(16)
      .describe(
        'PatchJobs worked on at the same time, the oldest first when more are due (--max-concurrent-reconciles).',
      ),
    preflightRetryPeriod: goDuration(
      '1m',
      'How long a plan whose preflight failed waits before checking again (--preflight-retry-period).',
    ),
    registryMirrors: z
      .array(
        z.strictObject({
          host: z
            .string()
            .regex(/^[A-Za-z0-9.-]+(:[0-9]+)?$/, { error: 'must be a registry host such as "ghcr.io"' })
            .describe('Registry host.'),
          url: z.string().regex(httpUrl, { error: 'must be an http(s) URL' }).describe('Mirror URL.'),
        }),
      )
      .default([])
      .describe(
        'Check installer images of a registry at a mirror (--registry-mirror host=url), e.g. [{host: ghcr.io, url: https://mirror.example}].',
      ),
    clusterName: z
      .string()
      .max(63)
      .regex(dnsLabel, { error: 'must be empty or a DNS label (lowercase letters, digits, "-")' })
      .default('')
      .describe(
        'This cluster in branch names, PR titles, labels and report paths (--cluster-name); required with git.url.',
      ),
    git: z
      .strictObject({
        url: z
          .string()
          .regex(optional(httpUrl), { error: 'must be empty or an http(s) URL without credentials' })
          .default('')
          .describe('Plans repository (--git-url, HTTPS); empty: plans come from kubectl only.'),
        branch: text('main', 'Branch of the plan files (--git-branch).'),
        path: text('plans', 'Folder of the plan files in the repository (--git-path).'),
        pollInterval: goDuration('1m', 'How often the branch head is asked for (--poll-interval).'),
        author: z
          .string()
          .regex(/^([^<>]+ <[^<>@\s]+@[^<>\s]+>)?$/, { error: 'must be empty or look like "Name <email>"' })
          .default('')
          .describe(
            'Author of the controller\'s commits, "Name <email>" (--git-author); empty: the controller\'s default.',
          ),
        cacheSizeLimit: text('1Gi', 'Size limit of the emptyDir holding the shallow clone.'),
      })
      .prefault({})
      .describe('The plans repository.'),
    forge: z
      .strictObject({
        type: z.enum(CHART_FORGES).default('github').describe('Where pull requests and commit statuses go (--forge).'),
        apiUrl: z
          .string()
          .regex(optional(httpUrl), { error: 'must be empty or an http(s) URL' })
          .default('')
          .describe('Forge REST API base (--forge-api-url); empty: derived from git.url.'),
      })
      .prefault({})
      .describe('The forge (pull requests, commit statuses).'),
    releases: z
      .strictObject({
        apiUrl: z
          .string()
          .regex(httpUrl, { error: 'must be an http(s) URL' })
          .default('https://api.github.com')
          .describe(
            'GitHub REST API listing the siderolabs/talos releases for auto-update templates (--releases-api-url).',
          ),
      })
      .prefault({})
      .describe('Upstream Talos releases (auto-update).'),
    gitCredentials: z
      .strictObject({
        existingSecret: text(
          '',
          'A Secret you manage with the keys token, write-token, webhook-secret, releases-token; empty: the chart creates one from the values below.',
        ),
        existingSecretKeys: z
          .array(z.enum(['token', 'write-token', 'webhook-secret', 'releases-token']))
          .default(['token', 'write-token'])
          .describe('The keys existingSecret holds (each becomes the matching *-file flag).'),
        token: text('', 'Read token of the plans repository (created Secret, key token).'),
        writeToken: text('', 'Token for pushes and pull requests (key write-token); empty: the read token.'),
        webhookSecret: z
          .string()
          .regex(/^([\s\S]{16,})?$/, {
            error: 'must be empty or at least 16 characters (generate one with `openssl rand -hex 32`)',
          })
          .default('')
          .describe(
            'HMAC secret of the push webhook (key webhook-secret): at least 16 bytes, e.g. from `openssl rand -hex 32`; the controller refuses a shorter one at start.',
          ),
        releasesToken: text('', 'Token for the releases API, for a higher rate limit (key releases-token).'),
      })
      .prefault({})
      .describe(
        'Git, forge, webhook and releases tokens: mounted as files under /etc/kangal-patch/git, never environment variables.',
      ),
    webhook: z
      .strictObject({
        enabled: flag(false, 'Serve the GitHub push webhook (--webhook-bind-address); needs a webhook-secret.'),
        port: port(9443, 'Webhook port (container and Service).'),
      })
      .prefault({})
      .describe('Push webhook that triggers an immediate poll.'),
    notify: z
      .strictObject({
        existingSecret: text(
          '',
          'A Secret with the key config.yaml holding the notification receivers (--notify-config-file).',
        ),
        config: object(
          'The receivers (docs/notifications.md); the chart puts them into a Secret when existingSecret is empty. Empty: no notifications.',
        ),
      })
      .prefault({})
      .describe('Notifications (webhook, Slack, Teams, Discord).'),
    alertmanager: z
      .strictObject({
        url: text(
          '',
          'Alertmanager for spec.alertGate and spec.silences (--alertmanager-url), e.g. http://alertmanager-operated.monitoring:9093; empty: none.',
        ),
        interval: goDuration('10s', 'How often a closed alert gate asks Alertmanager again (--alertmanager-interval).'),
        tokenSecret: z
          .strictObject({
            name: text(
              '',
              'A Secret holding a bearer token for Alertmanager (--alertmanager-token-file, needs an https:// url); empty: no token.',
            ),
            key: text('token', "The Secret's key holding the token."),
          })
          .prefault({})
          .describe('Bearer token for Alertmanager, mounted as a file under /etc/kangal-patch/alertmanager.'),
      })
      .prefault({})
      .describe('Alertmanager: the alert gate and silences of the plans.'),
    reports: z
      .strictObject({
        minInterval: goDuration(
          '30s',
          'Least time between two commits to one rollout report (--report-min-interval); the final state is always written.',
        ),
        signingKeySecret: z
          .strictObject({
            name: text(
              '',
              "A Secret holding this cluster's Ed25519 private key (PEM) that signs its rollout reports (--report-signing-key-file); empty: reports unsigned, so no downstream cluster takes them as promotion evidence.",
            ),
            key: text('signing-key.pem', "The Secret's key holding the PEM."),
          })
          .prefault({})
          .describe('Report signing key, mounted as a file under /etc/kangal-patch/report-signing.'),
      })
      .prefault({})
      .describe('Rollout reports written to Git.'),
    promotion: z
      .strictObject({
        keysConfigMap: text(
          '',
          'A ConfigMap of <cluster>.pem Ed25519 public keys of the upstream clusters whose signed reports count for autoUpdate.promotion (--promotion-keys-dir, mounted under /etc/kangal-patch/promotion-keys); empty: no promotion.',
        ),
      })
      .prefault({})
      .describe('Promotion across clusters (docs/auto-update-and-promotion.md "Promoting across clusters").'),
    healthProbe: z
      .strictObject({ port: port(8081, '/healthz and /readyz port (--health-probe-bind-address).') })
      .prefault({})
      .describe('Health probes.'),
    metrics: z
      .strictObject({
        port: port(8080, 'Prometheus /metrics port (--metrics-bind-address).'),
        service: z
          .strictObject({ enabled: flag(true, 'A Service for the metrics port.') })
          .prefault({})
          .describe('The metrics Service.'),
        serviceMonitor: z
          .strictObject({
            enabled: flag(false, 'A ServiceMonitor (needs the Prometheus Operator CRDs).'),
            interval: goDuration('30s', 'Scrape interval.'),
            labels: stringMap('Extra labels, e.g. to match your Prometheus serviceMonitorSelector.'),
          })
          .prefault({})
          .describe('Prometheus Operator ServiceMonitor.'),
        prometheusRule: z
          .strictObject({
            enabled: flag(
              false,
              'A PrometheusRule with the alerts of kustomize/monitoring (needs the Prometheus Operator CRDs).',
            ),
            labels: stringMap('Extra labels, e.g. to match your Prometheus ruleSelector.'),
          })
          .prefault({})
          .describe('Alerts.'),
        dashboard: z
          .strictObject({
            enabled: flag(false, 'A ConfigMap with the Grafana dashboard, labelled for the Grafana sidecar.'),
            labels: z
              .record(z.string(), z.string())
              .default({ grafana_dashboard: '1' })
              .describe('Labels the Grafana sidecar selects dashboards by.'),
          })
          .prefault({})
          .describe('Grafana dashboard.'),
      })
      .prefault({})
      .describe('Metrics and monitoring.'),
    talos: z
      .strictObject({
        secretNames: z
          .array(
            z
              .string()
              .max(253)
              .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { error: 'must be a Secret name' }),
          )
          .min(1)
          .default(['talos-credentials'])
          .describe(
            "The Talos credentials Secrets of the release namespace the controller may read (RBAC resourceNames): a plan's talosConfig.secretRef may name these and no other Secret.",
          ),
      })
      .prefault({})
      .describe('Talos credentials.'),
    hooks: z
      .strictObject({
        namespace: z
          .string()
          .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, { error: 'must be a namespace name' })
          .max(63)
          .default(DEFAULT_HOOKS_NAMESPACE)
          .describe(
            "Namespace the plans' hook Jobs run in (--hooks-namespace); never the release namespace, where the controller's Secrets are.",
          ),
        createNamespace: flag(
          true,
          'Create that namespace, with Pod Security "restricted" enforced; false: you create it (label it pod-security.kubernetes.io/enforce: restricted).',
        ),
        serviceAccounts: z
          .array(
            z
              .string()
              .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/)
              .max(253),
          )
          .default([])
          .describe(
            'ServiceAccounts of the hooks namespace a hook may run as, with their token (--hook-service-accounts); empty: only default, without a token. You create them and their RBAC.',
          ),
        priorityClasses: z
          .array(
            z
              .string()
              .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/)
              .max(253),
          )
          .default([])
          .describe('PriorityClasses a hook may ask for (--hook-priority-classes); empty: none.'),
        imageRegistries: z
          .array(
            z.string().regex(/^[A-Za-z0-9.-]+(:[0-9]+)?(\/[a-z0-9._-]+)*$/, {
              error: 'must be a registry host, optionally with a path, e.g. ghcr.io/acme',
            }),
          )
          .default([])
          .describe(
            'Registries hook images must come from, e.g. [ghcr.io/acme, registry.example.com] (--hook-image-registries); empty: any.',
          ),
      })
      .prefault({})
      .describe('Hooks: where their Jobs run and what plans may give them (docs/hooks.md).'),
    healthChecks: z
      .strictObject({
        read: z
          .array(
            z.strictObject({
              apiGroup: z
                .string()
                .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$/)
                .describe('API group of the checked kind, e.g. longhorn.io ("" for the core group).'),
              resources: z
                .array(z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/))
                .min(1)
                .describe('Plural resource names, e.g. volumes (never a wildcard).'),
              namespace: z
                .string()
                .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
                .max(63)
                .optional()
                .describe('Grant in this namespace only (a Role); omitted: in every namespace (a ClusterRole).'),
            }),
          )
          .default([])
          .describe(
            "get, list and watch on each kind the plans' spec.healthChecks read, granted to the health-check ServiceAccount <release>-health that the controller impersonates for every check (never to the controller); never secrets. The preflight check HealthCheckAccess names what is missing.",
          ),
      })
      .prefault({})
      .describe('Read access for health checks.'),
    viewerClusterRole: z
      .strictObject({
        enabled: flag(
          true,
          'kangal-patch-viewer: read PatchPlans and PatchJobs, aggregated to the built-in view role.',
        ),
      })
      .prefault({})
      .describe('The viewer ClusterRole.'),
    installCRDs: flag(
      true,
      'Install and upgrade the PatchPlan and PatchJob CRDs with the release; they are kept on helm uninstall (resource policy keep).',
    ),
    commonLabels: stringMap('Labels added to every object.'),
    commonAnnotations: stringMap('Annotations added to every object.'),
    podLabels: stringMap('Extra pod labels.'),
    podAnnotations: stringMap('Extra pod annotations.'),
    extraEnv: objects('Extra container environment variables (EnvVar objects).'),
    extraVolumes: objects('Extra pod volumes.'),
    extraVolumeMounts: objects('Extra container volume mounts.'),
    global: z.record(z.string(), z.unknown()).optional().describe('Helm global values (unused by this chart).'),
  })
  .describe('KangalPatch Helm chart values');
