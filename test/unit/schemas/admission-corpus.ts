// Invalid PatchPlans whose only problems are cross-field rules (schemas/rules.ts), so both judges can
// rule on them: `validate` (zod) and the apiserver (the CRD's CEL). Shared by the unit test that the
// corpus covers every rule and by the lab test that the apiserver refuses each with the same messages.
import type { Doc } from './plan-fixtures.js';

export interface CorpusCase {
  name: string;
  edit: (d: Doc) => void;
  /** Ids of the rules the document breaks (schemas/rules.ts). */
  breaks: string[];
}

const auto = { enabled: true };
const sel = { matchLabels: { role: 'db' } };

export const ADMISSION_CORPUS: CorpusCase[] = [
  { name: 'no target', edit: (d) => (d.spec.target = {}), breaks: ['target.versionOrAutoUpdate'] },
  {
    name: 'health check with objectName and labelSelector',
    edit: (d) =>
      (d.spec.healthChecks = [
        {
          name: 'v',
          apiVersion: 'longhorn.io/v1beta2',
          kind: 'Volume',
          objectName: 'pvc-1',
          labelSelector: sel,
          expr: 'true',
        },
      ]),
    breaks: ['healthCheck.objectNameOrSelector'],
  },
  {
    name: 'health check on a Secret',
    edit: (d) =>
      (d.spec.healthChecks = [
        {
          name: 's',
          apiVersion: 'v1',
          kind: 'Secret',
          namespace: 'kangal-patch',
          objectName: 'talos-credentials',
          expr: 'true',
        },
      ]),
    breaks: ['healthCheck.noSecrets'],
  },
  {
    name: 'auto-update disabled and no version',
    edit: (d) => (d.spec.target = { autoUpdate: { enabled: false } }),
    breaks: ['target.versionOrAutoUpdate'],
  },
  {
    name: 'auto-update with talosVersion',
    edit: (d) => (d.spec.target.autoUpdate = auto),
    breaks: ['target.talosVersion.omittedWithAutoUpdate'],
  },
  {
    name: 'auto-update with kubernetesVersion',
    edit: (d) => (d.spec.target = { kubernetesVersion: 'v1.34.1', autoUpdate: auto }),
    breaks: ['target.kubernetesVersion.omittedWithAutoUpdate'],
  },
  {
    name: 'auto-update with a downgrade allowed',
    edit: (d) => (d.spec.target = { autoUpdate: auto, allowTalosDowngrade: true }),
    breaks: ['target.allowTalosDowngrade.notWithAutoUpdate'],
  },
  {
    name: 'installer with ghcr',
    edit: (d) => (d.spec.target.installer = 'metal'),
    breaks: ['target.installer.factoryOnly'],
  },
  {
    name: 'schematicID with ghcr',
    edit: (d) => (d.spec.target.schematicID = 'a'.repeat(64)),
    breaks: ['target.schematicID.factoryOnly'],
  },
  {
    name: 'stepwise path with allowTalosDowngrade',
    edit: (d) => Object.assign(d.spec.target, { path: 'stepwise', allowTalosDowngrade: true }),
    breaks: ['target.path.stepwiseNeverDown'],
  },
  {
    name: 'secureBoot with ghcr',
    edit: (d) => (d.spec.target.secureBoot = true),
    breaks: ['target.secureBoot.factoryOnly'],
  },
  {
    name: 'ghcr for Talos 1.14',
    edit: (d) => (d.spec.target.talosVersion = 'v1.14.0'),
    breaks: ['target.source.factoryFrom114'],
  },
  {
    name: 'ghcr (the default) for Talos 1.15',
    edit: (d) => (d.spec.target = { talosVersion: 'v1.15.3' }),
    breaks: ['target.source.factoryFrom114'],
  },
  {
    name: 'ghcr for Talos 2.0',
    edit: (d) => (d.spec.target = { talosVersion: 'v2.0.0', source: 'ghcr' }),
    breaks: ['target.source.factoryFrom114'],
  },
  {
    name: 'drain.skipPods that selects every pod',
    edit: (d) => (d.spec.drain = { skipPods: {} }),
    breaks: ['drain.skipPods.selectsSomething'],
  },
  {
    name: 'drain.skipPods with empty lists',
    edit: (d) => (d.spec.drain = { skipPods: { matchLabels: {}, matchExpressions: [] } }),
    breaks: ['drain.skipPods.selectsSomething'],
  },
  {
    name: 'selector on controlPlane',
    edit: (d) => (d.spec.groups = { controlPlane: { selector: sel } }),
    breaks: ['groups.controlPlane.noSelector'],
  },
  {
    name: 'selector on workers',
    edit: (d) => (d.spec.groups = { workers: { selector: sel, concurrency: 2 } }),
    breaks: ['groups.workers.noSelector'],
  },
  {
    name: 'custom group without selector',
    edit: (d) => (d.spec.groups = { db: { concurrency: 2 } }),
    breaks: ['groups.custom.selectorRequired'],
  },
  {
    name: 'two custom groups without selector',
    edit: (d) => (d.spec.groups = { db: {}, cache: { concurrency: 1 }, gpu: { selector: sel } }),
    breaks: ['groups.custom.selectorRequired'],
  },
  {
    name: 'order names an undeclared group',
    edit: (d) => (d.spec.strategy = { order: ['controlPlane', 'database'] }),
    breaks: ['strategy.order.knownGroups'],
  },
  {
    name: 'order names a misspelt group',
    edit: (d) => (d.spec.strategy = { order: ['controlPlane', 'wrokers'] }),
    breaks: ['strategy.order.knownGroups'],
  },
  {
    name: 'order names two unknown groups',
    edit: (d) => (
      (d.spec.groups = { db: { selector: sel } }),
      (d.spec.strategy = { order: ['db', 'cache', 'workers', 'gpu'] })
    ),
    breaks: ['strategy.order.knownGroups'],
  },
  {
    name: 'Kubernetes target with workers before controlPlane',
    edit: (d) => (
      (d.spec.target = { kubernetesVersion: 'v1.34.1' }),
      (d.spec.strategy = { order: ['workers', 'controlPlane'] })
    ),
    breaks: ['strategy.order.controlPlaneFirst'],
  },
  {
    name: 'window of zero length',
    edit: (d) =>
      (d.spec.maintenance = {
        windows: [
          { startTime: '22:00', endTime: '23:00' },
          { days: ['Sat'], startTime: '01:00', endTime: '01:00' },
        ],
      }),
    breaks: ['maintenance.window.nonEmpty'],
  },
  {
    name: 'In without values',
    edit: (d) => (d.spec.nodeSelector = { matchExpressions: [{ key: 'zone', operator: 'In' }] }),
    breaks: ['selector.values.required'],
  },
  {
    name: 'NotIn with empty values in a group selector',
    edit: (d) =>
      (d.spec.groups = { db: { selector: { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: [] }] } } }),
    breaks: ['selector.values.required'],
  },
  {
    name: 'Exists with values',
    edit: (d) => (d.spec.nodeSelector = { matchExpressions: [{ key: 'zone', operator: 'Exists', values: ['a'] }] }),
    breaks: ['selector.values.forbidden'],
  },
  {
    name: 'DoesNotExist with values in a group selector',
    edit: (d) =>
      (d.spec.groups = {
        db: { selector: { matchExpressions: [{ key: 'gpu', operator: 'DoesNotExist', values: ['x'] }] } },
      }),
    breaks: ['selector.values.forbidden'],
  },
  {
    name: 'many rules at once',
    edit: (d) => {
      d.spec.target = { kubernetesVersion: 'v1.34.1', installer: 'metal', autoUpdate: auto, allowTalosDowngrade: true };
      d.spec.groups = { db: { concurrency: 1 }, workers: { selector: sel } };
      d.spec.strategy = { order: ['workers', 'controlPlane', 'dbx'] };
      d.spec.nodeSelector = { matchExpressions: [{ key: 'zone', operator: 'In' }] };
      d.spec.maintenance = { windows: [{ startTime: '01:00', endTime: '01:00' }] };
    },
    breaks: [
      'target.kubernetesVersion.omittedWithAutoUpdate',
      'target.allowTalosDowngrade.notWithAutoUpdate',
      'target.installer.factoryOnly',
      'groups.workers.noSelector',
      'groups.custom.selectorRequired',
      'strategy.order.knownGroups',
      'strategy.order.controlPlaneFirst',
      'selector.values.required',
      'maintenance.window.nonEmpty',
    ],
  },
];
