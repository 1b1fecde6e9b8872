// Table-driven: each invalid document must produce exactly the listed problems (path and message).
import assert from 'node:assert/strict';
import { loadPlanSources } from '../../../controller/gitops/load/index.js';
import { planYaml } from './plan-fixtures.js';

type Case = { name: string; yaml: string | Uint8Array; problems: [path: string, message: string][] };

const QUOTE = ': put the value in quotes in YAML';
const GO_DURATION = 'must be a Go duration such as "300s", "5m" or "1h30m" (units ns, us, ms, s, m, h)';
const K8S_NAME =
  'must be a valid Kubernetes name: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit';
const AT_LEAST_ONE_TARGET =
  'at least one of target.talosVersion, target.kubernetesVersion or an enabled target.autoUpdate must be set';
const OMIT_WITH_AUTO = 'must be omitted when target.autoUpdate is enabled (each release gets its own child plan)';
const HH_MM = 'must be a time "HH:MM" between 00:00 and 23:59 (in maintenance.timezone, UTC by default)';
const CREDENTIALS =
  'unknown field "caCert": inline credentials are not accepted in plan files; store ca.crt, tls.crt and tls.key in a Secret in the operator namespace and set talosConfig.secretRef';

const auto = { enabled: true };
/** A hook whose template has `over` (spec defaults to one busybox container). */
const hookWith = (over: Record<string, unknown>): Record<string, unknown> => ({
  template: { spec: { containers: [{ name: 'c', image: 'busybox:1.37' }] }, ...over },
});
const withGroups = (n: number) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`g${i}`, { selector: { matchLabels: { g: `${i}` } } }]));

const specCases: Case[] = [
  // versions
  {
    name: 'unquoted talosVersion',
    yaml: planYaml((d) => (d.spec.target.talosVersion = 1.1)),
    problems: [['spec.target.talosVersion', `must be a quoted string such as "v1.12.1", not the number 1.1${QUOTE}`]],
  },
  {
    name: 'talosVersion without v',
    yaml: planYaml((d) => (d.spec.target.talosVersion = '1.12.1')),
    problems: [['spec.target.talosVersion', 'must be a version such as "v1.12.1" (v, then major.minor.patch)']],
  },
  {
    name: 'talosVersion without patch',
    yaml: planYaml((d) => (d.spec.target.talosVersion = 'v1.12')),
    problems: [['spec.target.talosVersion', 'must be a version such as "v1.12.1" (v, then major.minor.patch)']],
  },
  {
    name: 'talosVersion with leading zero',
    yaml: planYaml((d) => (d.spec.target.talosVersion = 'v1.012.1')),
    problems: [['spec.target.talosVersion', 'must be a version such as "v1.12.1" (v, then major.minor.patch)']],
  },
  {
    name: 'unquoted kubernetesVersion',
    yaml: planYaml((d) => (d.spec.target.kubernetesVersion = 1.34)),
    problems: [
      ['spec.target.kubernetesVersion', `must be a quoted string such as "v1.34.1", not the number 1.34${QUOTE}`],
    ],
  },
  // target rules
  {
    name: 'no target version',
    yaml: planYaml((d) => (d.spec.target = {})),
    problems: [['spec.target', AT_LEAST_ONE_TARGET]],
  },
  {
    name: 'autoUpdate disabled and no version',
    yaml: planYaml((d) => (d.spec.target = { autoUpdate: { enabled: false } })),
    problems: [['spec.target', AT_LEAST_ONE_TARGET]],
  },
  {
    name: 'autoUpdate with talosVersion',
    yaml: planYaml((d) => (d.spec.target.autoUpdate = auto)),
    problems: [['spec.target.talosVersion', OMIT_WITH_AUTO]],
  },
  {
    name: 'autoUpdate with kubernetesVersion',
    yaml: planYaml((d) => (d.spec.target = { kubernetesVersion: 'v1.34.1', autoUpdate: auto })),
    problems: [['spec.target.kubernetesVersion', OMIT_WITH_AUTO]],
  },
  {
    name: 'autoUpdate with allowTalosDowngrade',
    yaml: planYaml((d) => (d.spec.target = { autoUpdate: auto, allowTalosDowngrade: true })),
    problems: [
      [
        'spec.target.allowTalosDowngrade',
        'must not be set when target.autoUpdate is enabled (auto-update never downgrades)',
      ],
    ],
  },
  {
    name: 'autoUpdate.enabled missing',
    yaml: planYaml((d) => (d.spec.target.autoUpdate = { allow: 'patch' })),
    problems: [['spec.target.autoUpdate.enabled', 'is required']],
  },
  {
    name: 'checkInterval below 1m',
    yaml: planYaml((d) => (d.spec.target = { autoUpdate: { enabled: true, checkInterval: '30s' } })),
    problems: [['spec.target.autoUpdate.checkInterval', 'must be at least 1m']],
  },
  {
    name: 'checkInterval in words',
    yaml: planYaml((d) => (d.spec.target = { autoUpdate: { enabled: true, checkInterval: '1 hour' } })),
    problems: [['spec.target.autoUpdate.checkInterval', GO_DURATION]],
  },
  {
    name: 'autoUpdate.allow unknown',
    yaml: planYaml((d) => (d.spec.target = { autoUpdate: { enabled: true, allow: 'major' } })),
    problems: [['spec.target.autoUpdate.allow', 'must be one of "patch", "minor", not the string "major"']],
  },
  {
    name: 'source misspelt',
    yaml: planYaml((d) => (d.spec.target.source = 'fatcory')),
    problems: [
      ['spec.target.source', 'must be one of "factory", "ghcr", not the string "fatcory" (did you mean "factory"?)'],
    ],
  },
  {
    name: 'installer with ghcr',
    yaml: planYaml((d) => (d.spec.target.installer = 'metal')),
    problems: [['spec.target.installer', 'is only used with target.source: factory']],
  },
  {
    name: 'secureBoot with ghcr',
    yaml: planYaml((d) => (d.spec.target.secureBoot = true)),
    problems: [['spec.target.secureBoot', 'is only available with target.source: factory']],
  },
  {
    name: 'schematicID not hex',
    yaml: planYaml((d) => Object.assign(d.spec.target, { source: 'factory', installer: 'metal', schematicID: 'abc' })),
    problems: [['spec.target.schematicID', 'must be an Image Factory schematic ID (64 lowercase hex characters)']],
  },
  {
    name: 'installer with upper case',
    yaml: planYaml((d) => Object.assign(d.spec.target, { source: 'factory', installer: 'NoCloud' })),
    problems: [['spec.target.installer', 'must be an installer type such as "metal", "nocloud" or "aws"']],
  },
  // groups and strategy
  {
    name: 'concurrency 0',
    yaml: planYaml((d) => (d.spec.groups = { workers: { concurrency: 0 } })),
    problems: [['spec.groups.workers.concurrency', 'must be at least 1']],
  },
  {
    name: 'concurrency fraction',
    yaml: planYaml((d) => (d.spec.groups = { workers: { concurrency: 1.5 } })),
    problems: [['spec.groups.workers.concurrency', 'must be a whole number']],
  },
  {
    name: 'concurrency as string',
    yaml: planYaml((d) => (d.spec.groups = { workers: { concurrency: '2' } })),
    problems: [['spec.groups.workers.concurrency', 'must be a whole number']],
  },
  {
    name: 'custom group without selector',
    yaml: planYaml((d) => (d.spec.groups = { db: { concurrency: 1 } })),
    problems: [
      [
        'spec.groups',
        'custom group "db" needs a selector (only the built-in groups controlPlane and workers select their nodes without one)',
      ],
    ],
  },
  {
    name: 'built-in group with selector',
    yaml: planYaml((d) => (d.spec.groups = { workers: { selector: { matchLabels: { a: 'b' } } } })),
    problems: [
      [
        'spec.groups.workers.selector',
        'is not allowed on the built-in group "workers"; declare a custom group to filter nodes',
      ],
    ],
  },
  {
    name: 'group name with a space',
    yaml: planYaml((d) => (d.spec.groups = { 'db team': { selector: { matchLabels: { a: 'b' } } } })),
    problems: [
      [
        'spec.groups["db team"]',
        'invalid key: group names must be letters, digits, "-", "_" and ".", starting and ending with a letter or digit',
      ],
    ],
  },
  {
    name: 'too many groups',
    yaml: planYaml((d) => (d.spec.groups = withGroups(33))),
    problems: [['spec.groups', 'must declare at most 32 groups']],
  },
  {
    name: 'order names unknown group',
    yaml: planYaml((d) => ((d.spec.groups = withGroups(0)), (d.spec.strategy = { order: ['wrokers'] }))),
    problems: [
      [
        'spec.strategy.order',
        'unknown group "wrokers": declare it under spec.groups or use a built-in group (controlPlane, workers) (did you mean "workers"?)',
      ],
    ],
  },
  {
    name: 'order names undeclared group',
    yaml: planYaml((d) => (d.spec.strategy = { order: ['database', 'workers'] })),
    problems: [
      [
        'spec.strategy.order',
        'unknown group "database": declare it under spec.groups or use a built-in group (controlPlane, workers)',
      ],
    ],
  },
  {
    name: 'order names two unknown groups',
    yaml: planYaml((d) => (d.spec.strategy = { order: ['database', 'workers', 'cache'] })),
    problems: [
      [
        'spec.strategy.order',
        'unknown groups, the first "database": declare them under spec.groups or use a built-in group (controlPlane, workers) (all unknown: "database", "cache")',
      ],
    ],
  },
  {
    name: 'Kubernetes target with workers first',
    yaml: planYaml(
      (d) => (
        (d.spec.target.kubernetesVersion = 'v1.34.1'),
        (d.spec.strategy = { order: ['workers', 'controlPlane'] })
      ),
    ),
    problems: [
      [
        'spec.strategy.order',
        'lists workers before controlPlane: with target.kubernetesVersion the control plane is upgraded first',
      ],
    ],
  },
  {
    name: 'order lists a group twice',
    yaml: planYaml((d) => (d.spec.strategy = { order: ['workers', 'controlPlane', 'workers'] })),
    problems: [['spec.strategy.order[2]', 'group "workers" is listed more than once']],
  },
  {
    name: 'order empty',
    yaml: planYaml((d) => (d.spec.strategy = { order: [] })),
    problems: [['spec.strategy.order', 'must list at least one group']],
  },
  {
    name: 'order is a string',
    yaml: planYaml((d) => (d.spec.strategy = { order: 'workers' })),
    problems: [['spec.strategy.order', 'must be a list, not the string "workers"']],
  },
  // failure policy, retention, durations, booleans
  {
    name: 'failurePolicy type lower case',
    yaml: planYaml((d) => (d.spec.failurePolicy = { type: 'halt' })),
    problems: [
      ['spec.failurePolicy.type', 'must be one of "Halt", "Pause", not the string "halt" (did you mean "Halt"?)'],
    ],
  },
  {
    name: 'maxFailures negative',
    yaml: planYaml((d) => (d.spec.failurePolicy = { maxFailures: -1 })),
    problems: [['spec.failurePolicy.maxFailures', 'must be at least 0']],
  },
  {
    name: 'retention in days',
    yaml: planYaml((d) => (d.spec.retention = { history: '7d' })),
    problems: [['spec.retention.history', GO_DURATION]],
  },
  {
    name: 'delayBetweenNodes unquoted number',
    yaml: planYaml((d) => (d.spec.delayBetweenNodes = 300)),
    problems: [['spec.delayBetweenNodes', `must be a quoted string such as "300s", not the number 300${QUOTE}`]],
  },
  {
    name: 'negative drainTimeout',
    yaml: planYaml((d) => (d.spec.drainTimeout = '-5m')),
    problems: [['spec.drainTimeout', GO_DURATION]],
  },
  {
    name: 'rebootTimeout with space',
    yaml: planYaml((d) => (d.spec.rebootTimeout = '10 m')),
    problems: [['spec.rebootTimeout', GO_DURATION]],
  },
  {
    name: 'empty kubernetesUpgradeTimeout',
    yaml: planYaml((d) => (d.spec.kubernetesUpgradeTimeout = '')),
    problems: [['spec.kubernetesUpgradeTimeout', GO_DURATION]],
  },
  {
    name: 'respectPDBs as yes',
    yaml: planYaml((d) => (d.spec.respectPDBs = 'yes')),
    problems: [['spec.respectPDBs', 'must be true or false, not the string "yes"']],
  },
  {
    name: 'paused as 1',
    yaml: planYaml((d) => (d.spec.paused = 1)),
    problems: [['spec.paused', 'must be true or false, not number 1']],
  },
  {
    name: 'cancelled empty',
    yaml: planYaml((d) => (d.spec.cancelled = null)),
    problems: [['spec.cancelled', 'must be true or false, not an empty value']],
  },
  // maintenance
  {
    name: 'window start 24:00',
    yaml: planYaml((d) => (d.spec.maintenance = { windows: [{ startTime: '24:00', endTime: '02:00' }] })),
    problems: [['spec.maintenance.windows[0].startTime', HH_MM]],
  },
  {
    name: 'window end without leading zero',
    yaml: planYaml((d) => (d.spec.maintenance = { windows: [{ startTime: '01:00', endTime: '5:00' }] })),
    problems: [['spec.maintenance.windows[0].endTime', HH_MM]],
  },
  {
    name: 'window of zero length',
    yaml: planYaml((d) => (d.spec.maintenance = { windows: [{ startTime: '01:00', endTime: '01:00' }] })),
    problems: [
      ['spec.maintenance.windows[0].endTime', 'must differ from startTime (a window of zero length never opens)'],
    ],
  },
  {
    name: 'window without startTime',
    yaml: planYaml((d) => (d.spec.maintenance = { windows: [{ endTime: '01:00' }] })),
    problems: [['spec.maintenance.windows[0].startTime', 'is required']],
  },
  {
    name: 'misspelt day',
    yaml: planYaml(
      (d) => (d.spec.maintenance = { windows: [{ days: ['Mon', 'Tuesdy'], startTime: '01:00', endTime: '02:00' }] }),
    ),
    problems: [
      [
        'spec.maintenance.windows[0].days[1]',
        'unknown day "Tuesdy": use a day name (Monday or Mon, any case) or Any (did you mean "Tuesday"?)',
      ],
    ],
  },
  {
    name: 'unknown day',
    yaml: planYaml(
      (d) => (d.spec.maintenance = { windows: [{ days: ['weekend'], startTime: '01:00', endTime: '02:00' }] }),
    ),
    problems: [
      ['spec.maintenance.windows[0].days[0]', 'unknown day "weekend": use a day name (Monday or Mon, any case) or Any'],
    ],
  },
  {
    name: 'impossible date',
    yaml: planYaml((d) => (d.spec.maintenance = { excludeDates: ['2026-02-29'] })),
    problems: [['spec.maintenance.excludeDates[0]', '"2026-02-29" is not a real date']],
  },
  {
    name: 'month 13',
    yaml: planYaml((d) => (d.spec.maintenance = { excludeDates: ['2026-13-01'] })),
    problems: [['spec.maintenance.excludeDates[0]', '"2026-13-01" is not a real date']],
  },
  {
    name: 'date in dotted form',
    yaml: planYaml((d) => (d.spec.maintenance = { excludeDates: ['24.12.2026'] })),
    problems: [['spec.maintenance.excludeDates[0]', 'must be a date "YYYY-MM-DD"']],
  },
  {
    name: 'date as number',
    yaml: planYaml((d) => (d.spec.maintenance = { excludeDates: [20261224] })),
    problems: [['spec.maintenance.excludeDates[0]', `must be a string, not number 20261224${QUOTE}`]],
  },
  {
    name: 'misspelt time zone',
    yaml: planYaml((d) => (d.spec.maintenance = { timezone: 'Europe/Berln' })),
    problems: [
      [
        'spec.maintenance.timezone',
        'unknown time zone "Europe/Berln": use an IANA name such as "Europe/Berlin" or "UTC" (did you mean "Europe/Berlin"?)',
      ],
    ],
  },
  {
    name: 'unknown time zone',
    yaml: planYaml((d) => (d.spec.maintenance = { timezone: 'Mars/Olympus' })),
    problems: [
      [
        'spec.maintenance.timezone',
        'unknown time zone "Mars/Olympus": use an IANA name such as "Europe/Berlin" or "UTC"',
      ],
    ],
  },
  {
    name: 'offset as time zone',
    yaml: planYaml((d) => (d.spec.maintenance = { timezone: '+01:00' })),
    problems: [
      ['spec.maintenance.timezone', 'must be an IANA time zone name such as "Europe/Berlin" or "UTC", not an offset'],
    ],
  },
  // talosConfig
  {
    name: 'talosConfig missing',
    yaml: planYaml((d) => delete (d.spec as Record<string, unknown>).talosConfig),
    problems: [['spec.talosConfig', 'is required']],
  },
  {
    name: 'secretRef missing',
    yaml: planYaml((d) => (d.spec.talosConfig = { endpoints: ['10.0.0.1:50000'] })),
    problems: [['spec.talosConfig.secretRef', 'is required']],
  },
  {
    name: 'secret in another namespace',
    yaml: planYaml((d) => (d.spec.talosConfig = { secretRef: { name: 'creds', namespace: 'default' } })),
    problems: [
      [
        'spec.talosConfig.secretRef.namespace',
        'must be the operator namespace "kangal-patch" (or omitted): the Talos credentials Secret is only read from there',
      ],
    ],
  },
  {
    name: 'secret name with underscore',
    yaml: planYaml((d) => (d.spec.talosConfig = { secretRef: { name: 'talos_creds' } })),
    problems: [['spec.talosConfig.secretRef.name', K8S_NAME]],
  },
  {
    name: 'endpoint with scheme',
    yaml: planYaml((d) => (d.spec.talosConfig.endpoints = ['https://10.0.0.1:50000'])),
    problems: [['spec.talosConfig.endpoints[0]', 'must be "host" or "host:port", such as "10.0.0.10:50000"']],
  },
  {
    name: 'empty endpoints',
    yaml: planYaml((d) => (d.spec.talosConfig.endpoints = [])),
    problems: [['spec.talosConfig.endpoints', 'must list at least one endpoint when given']],
  },
  {
    name: 'inline credentials',
    yaml: planYaml((d) => (d.spec.talosConfig.caCert = 'LS0t')),
    problems: [['spec.talosConfig.caCert', CREDENTIALS]],
  },
  // node selector
  {
    name: 'In without values',
    yaml: planYaml((d) => (d.spec.nodeSelector = { matchExpressions: [{ key: 'zone', operator: 'In' }] })),
    problems: [['spec.nodeSelector.matchExpressions[0].values', 'must list at least one value for operator In']],
  },
  {
    name: 'Exists with values',
    yaml: planYaml(
      (d) => (d.spec.nodeSelector = { matchExpressions: [{ key: 'zone', operator: 'Exists', values: ['a'] }] }),
    ),
    problems: [['spec.nodeSelector.matchExpressions[0].values', 'must be empty for operator Exists']],
  },
  {
    name: 'unknown operator',
    yaml: planYaml(
      (d) => (d.spec.nodeSelector = { matchExpressions: [{ key: 'zone', operator: 'in', values: ['a'] }] }),
    ),
    problems: [
      [
        'spec.nodeSelector.matchExpressions[0].operator',
        'must be one of "In", "NotIn", "Exists", "DoesNotExist", not the string "in" (did you mean "In"?)',
      ],
    ],
  },
  {
    name: 'boolean label value',
    yaml: planYaml((d) => (d.spec.nodeSelector = { matchLabels: { gpu: true } })),
    problems: [['spec.nodeSelector.matchLabels.gpu', `must be a string, not boolean true${QUOTE}`]],
  },
  {
    name: 'old map-style nodeSelector',
    yaml: planYaml((d) => (d.spec.nodeSelector = { environment: 'production' })),
    problems: [['spec.nodeSelector.environment', 'unknown field "environment"']],
  },
  // hooks: what a plan may never choose
  {
    name: 'hook label posing as the app',
    yaml: planYaml(
      (d) =>
        (d.spec.hooks = { preNode: hookWith({ metadata: { labels: { 'app.kubernetes.io/name': 'kangal-patch' } } }) }),
    ),
    problems: [
      [
        'spec.hooks.preNode.template.metadata.labels["app.kubernetes.io/name"]',
        'label "app.kubernetes.io/name" is refused: app.kubernetes.io/ labels are the controller\'s and its objects\' own, a hook may not carry them',
      ],
    ],
  },
  {
    name: 'hook label of the controller',
    yaml: planYaml(
      (d) =>
        (d.spec.hooks = {
          postPlan: hookWith({ metadata: { labels: { 'kangalpatch.ozalp.dk/patchplan': 'other' } } }),
        }),
    ),
    problems: [
      [
        'spec.hooks.postPlan.template.metadata.labels["kangalpatch.ozalp.dk/patchplan"]',
        'label "kangalpatch.ozalp.dk/patchplan" is refused: kangalpatch.ozalp.dk/ labels are the controller\'s and its objects\' own, a hook may not carry them',
      ],
    ],
  },
  {
    name: 'hook AppArmor annotation',
    yaml: planYaml(
      (d) =>
        (d.spec.hooks = {
          preNode: hookWith({
            metadata: { annotations: { 'container.apparmor.security.beta.kubernetes.io/hook': 'unconfined' } },
          }),
        }),
    ),
    problems: [
      [
        'spec.hooks.preNode.template.metadata.annotations["container.apparmor.security.beta.kubernetes.io/hook"]',
        'annotation "container.apparmor.security.beta.kubernetes.io/hook" is refused: it changes how the pod is secured, and the controller sets that (a restricted securityContext)',
      ],
    ],
  },
  {
    name: 'hook seccomp annotation',
    yaml: planYaml(
      (d) =>
        (d.spec.hooks = {
          postNode: hookWith({
            metadata: { annotations: { 'seccomp.security.alpha.kubernetes.io/pod': 'unconfined' } },
          }),
        }),
    ),
    problems: [
      [
        'spec.hooks.postNode.template.metadata.annotations["seccomp.security.alpha.kubernetes.io/pod"]',
        'annotation "seccomp.security.alpha.kubernetes.io/pod" is refused: it changes how the pod is secured, and the controller sets that (a restricted securityContext)',
      ],
    ],
  },
  {
    name: 'hook timeout over 6h',
    yaml: planYaml((d) => (d.spec.hooks = { prePlan: { ...hookWith({}), timeout: '720h' } })),
    problems: [['spec.hooks.prePlan.timeout', 'must be at most 6h (a hook holds its node or plan while it runs)']],
  },
  {
    name: 'hook running as root',
    yaml: planYaml(
      (d) =>
        (d.spec.hooks = {
          preNode: hookWith({
            spec: { securityContext: { runAsUser: 0 }, containers: [{ name: 'c', image: 'busybox:1.37' }] },
          }),
        }),
    ),
    problems: [
      ['spec.hooks.preNode.template.spec.securityContext.runAsUser', 'must be a non-root user ID (at least 1)'],
    ],
  },
  {
    name: 'hook with a privileged container',
    yaml: planYaml(
      (d) =>
        (d.spec.hooks = {
          preNode: hookWith({
            spec: { containers: [{ name: 'c', image: 'busybox:1.37', securityContext: { privileged: true } }] },
          }),
        }),
    ),
    problems: [['spec.hooks.preNode.template.spec.containers[0].securityContext', 'unknown field "securityContext"']],
  },
  {
    name: 'hook mounting a hostPath',
    yaml: planYaml(
      (d) =>
        (d.spec.hooks = {
          preNode: hookWith({
            spec: {
              volumes: [{ name: 'root', hostPath: { path: '/' } }],
              containers: [{ name: 'c', image: 'busybox:1.37' }],
            },
          }),
        }),
    ),
    problems: [['spec.hooks.preNode.template.spec.volumes', 'unknown field "volumes"']],
  },
  // metadata and unknown fields
  {
    name: 'name with capitals',
    yaml: planYaml((d) => (d.metadata.name = 'Upgrade_1')),
    problems: [['metadata.name', K8S_NAME]],
  },
  {
    name: 'name too long',
    yaml: planYaml((d) => (d.metadata.name = 'a'.repeat(64))),
    problems: [['metadata.name', 'must be at most 63 characters (the plan name is used as a label value)']],
  },
  { name: 'name missing', yaml: planYaml((d) => (d.metadata = {})), problems: [['metadata.name', 'is required']] },
  {
    name: 'namespace on a cluster-scoped kind',
    yaml: planYaml((d) => (d.metadata.namespace = 'kangal-patch')),
    problems: [
      ['metadata.namespace', 'unknown field "namespace": PatchPlan is cluster-scoped; remove metadata.namespace'],
    ],
  },
  {
    name: 'status in a plan file',
    yaml: planYaml((d) => (d.status = { phase: 'Completed' })),
    problems: [['status', 'unknown field "status": status is written by the controller; remove it from the plan file']],
  },
  {
    name: 'old target.version field',
    yaml: planYaml((d) => (d.spec.target = { version: 'v1.12.1', talosVersion: 'v1.12.1' })),
    problems: [['spec.target.version', 'unknown field "version": the Talos version field is spec.target.talosVersion']],
  },
  {
    name: 'old maxConcurrency field',
    yaml: planYaml((d) => (d.spec.maxConcurrency = 2)),
    problems: [
      [
        'spec.maxConcurrency',
        'unknown field "maxConcurrency": concurrency is set per group: spec.groups.<group>.concurrency',
      ],
    ],
  },
  {
    name: 'misspelt respectPDBs',
    yaml: planYaml((d) => (d.spec.respectPDB = true)),
    problems: [['spec.respectPDB', 'unknown field "respectPDB" (did you mean "respectPDBs"?)']],
  },
  {
    name: 'wrong case talosversion',
    yaml: planYaml((d) => (d.spec.target = { talosversion: 'v1.12.1', kubernetesVersion: 'v1.34.1' })),
    problems: [['spec.target.talosversion', 'unknown field "talosversion" (did you mean "talosVersion"?)']],
  },
  {
    name: 'misspelt concurrency',
    yaml: planYaml((d) => (d.spec.groups = { workers: { concurency: 2 } })),
    problems: [['spec.groups.workers.concurency', 'unknown field "concurency" (did you mean "concurrency"?)']],
  },
  {
    name: 'spec missing',
    yaml: planYaml((d) => delete (d as Record<string, unknown>).spec),
    problems: [['spec', 'is required']],
  },
  // document routing
  {
    name: 'PatchPlan of another version',
    yaml: planYaml((d) => (d.apiVersion = 'kangalpatch.ozalp.dk/v1')),
    problems: [['apiVersion', 'must be "kangalpatch.ozalp.dk/v1alpha1" for kind PatchPlan']],
  },
  {
    name: 'PatchJob in a plans repository',
    yaml: planYaml((d) => (d.kind = 'PatchJob')),
    problems: [
      ['kind', 'PatchJob objects are created by the controller; only PatchPlan documents belong in a plans repository'],
    ],
  },
  {
    name: 'misspelt kind',
    yaml: planYaml((d) => (d.kind = 'Patchplan')),
    problems: [['kind', 'must be "PatchPlan" for kangalpatch.ozalp.dk (did you mean "PatchPlan"?)']],
  },
  {
    name: 'document is a list',
    yaml: '- a\n- b\n',
    problems: [['', 'document must be a mapping with apiVersion, kind, metadata and spec']],
  },
  {
    name: 'no apiVersion or kind',
    yaml: 'metadata:\n  name: x\n',
    problems: [['', 'not a Kubernetes object: apiVersion and kind are missing']],
  },
];

const laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
  .concat('bcdefghi'.split('').map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`))
  .join('\n');
const blockDepth = Array.from({ length: 40 }, (_, i) => `${'  '.repeat(i)}k${i}:`).join('\n') + ' x\n';
const valid = planYaml(() => undefined);

const hostileCases: Case[] = [
  { name: 'billion laughs alias bomb', yaml: laughs, problems: [['', 'more than 16 YAML aliases in one document']] },
  {
    name: 'file over the byte cap',
    yaml: valid + `# ${'x'.repeat(70_000)}\n`,
    problems: [['', `file is ${Buffer.byteLength(valid) + 70_003} bytes, more than the limit of 65536 bytes`]],
  },
  {
    name: 'deep flow nesting that would exhaust the parser',
    yaml: `a: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`,
    problems: [['', 'YAML nesting is deeper than 32 levels']],
  },
  {
    name: 'deep compact sequences',
    yaml: `${'- '.repeat(100)}x\n`,
    problems: [['', 'YAML nesting is deeper than 32 levels']],
  },
  { name: 'deep block mappings', yaml: blockDepth, problems: [['', 'YAML nesting is deeper than 32 levels']] },
  {
    name: 'custom tag',
    yaml: valid.replace('name: p', 'name: !shell p'),
    problems: [['', 'YAML warning: Unresolved tag: !shell']],
  },
  {
    name: 'binary tag',
    yaml: valid.replace('name: p', 'name: !!binary cA=='),
    problems: [['', 'YAML tags are not allowed (found tag:yaml.org,2002:binary); write plain values']],
  },
  {
    name: 'explicit str tag',
    yaml: valid.replace('"v1.12.1"', '!!str v1.12.1').replace('v1.12.1\n', '!!str v1.12.1\n'),
    problems: [['', 'YAML tags are not allowed (found tag:yaml.org,2002:str); write plain values']],
  },
  {
    name: 'binary content with NUL bytes',
    yaml: new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0x00]),
    problems: [['', 'file is binary (contains NUL bytes), not YAML text']],
  },
  {
    name: 'invalid UTF-8',
    yaml: new Uint8Array([0x61, 0x3a, 0x20, 0xff, 0xfe, 0x0a]),
    problems: [['', 'file is not valid UTF-8 text']],
  },
  {
    name: 'duplicate keys',
    yaml: valid.replace('name: p', 'name: p\n  name: q'),
    problems: [['', 'duplicate key "name": each key may appear once in a mapping']],
  },
  {
    name: 'duplicate keys that differ only in quoting',
    yaml: valid.replace('kind: PatchPlan', 'kind: PatchPlan\n"kind": PatchPlan'),
    problems: [['', 'duplicate key "kind": each key may appear once in a mapping']],
  },
  {
    name: 'a number and a string key that become the same field',
    yaml: valid.replace('spec:\n', 'spec:\n  1: a\n  "1": b\n'),
    problems: [['', 'duplicate key "1": each key may appear once in a mapping']],
  },
  {
    name: 'a complex key',
    yaml: valid.replace('spec:\n', 'spec:\n  ? [a, b]\n  : c\n'),
    problems: [['', 'YAML keys must be plain values, not lists, mappings or aliases']],
  },
  {
    name: 'unterminated quote',
    yaml: 'apiVersion: "kangalpatch.ozalp.dk/v1alpha1\nkind: PatchPlan\n',
    problems: [['', 'YAML error: Missing closing "quote']],
  },
  {
    name: 'merge key is not merged',
    yaml: valid.replace('spec:\n', 'base: &b {paused: true}\nspec:\n  <<: *b\n'),
    problems: [
      ['base', 'unknown field "base"'],
      ['spec["<<"]', 'unknown field "<<"'],
    ],
  },
  {
    name: 'too many documents',
    yaml: Array(65).fill('a: 1').join('\n---\n'),
    problems: [['', 'file has 65 YAML documents, more than the limit of 64']],
  },
];

function run(c: Case): [string, string][] {
  const result = loadPlanSources([{ file: 'plan.yaml', content: c.yaml }]);
  return result.problems.map((p) => [p.path, p.message]);
}

describe('schemas: invalid PatchPlan documents', function () {
  it('has at least 60 cases', function () {
    assert.ok(specCases.length + hostileCases.length >= 60, `${specCases.length + hostileCases.length} cases`);
  });
  for (const c of specCases) {
    it(`rejects: ${c.name}`, function () {
      assert.deepEqual(run(c), c.problems);
    });
  }
  for (const c of hostileCases) {
    it(`rejects hostile YAML: ${c.name}`, function () {
      assert.deepEqual(run(c), c.problems);
    });
  }
  it('rejects a second plan with the same name', function () {
    const result = loadPlanSources([
      { file: 'a.yaml', content: valid },
      { file: 'b.yaml', content: valid },
    ]);
    assert.deepEqual(
      result.problems.map((p) => [p.file, p.path, p.message]),
      [['b.yaml', 'metadata.name', 'duplicate PatchPlan name "p" (also defined at a.yaml:1)']],
    );
    assert.equal(result.plans.length, 1);
  });
});
