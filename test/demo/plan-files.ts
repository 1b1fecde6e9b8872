// The plan files the demo pushes: the examples the docs show, edited only where the lab differs from
// a real cluster (versions, the Talos endpoint, delays), comments kept so the file stays readable.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseDocument, Scalar, type Document } from 'yaml';

const examples = fileURLToPath(new URL('../../examples/', import.meta.url));

export const TALOS_TARGET = 'v1.13.2';
const KUBERNETES_TARGET = 'v1.36.3';

export interface LabPlace {
  talosEndpoint: string;
  /** delayBetweenNodes for the lab (the examples' minutes would make the demo wait for nothing). */
  delay: string;
}

const HEADER =
  "# Pushed by `npm run demo`: adapted from examples/ to the lab (versions, the lab's Talos endpoint, delays).\n";
const text = (doc: Document): string => HEADER + doc.toString();

function example(file: string): Document {
  return parseDocument(readFileSync(`${examples}${file}`, 'utf8'));
}

function forLab(doc: Document, name: string, place: LabPlace): Document {
  doc.setIn(['metadata', 'name'], name);
  doc.setIn(['spec', 'delayBetweenNodes'], place.delay);
  doc.setIn(['spec', 'talosConfig', 'endpoints'], doc.createNode([place.talosEndpoint], { flow: false }));
  return doc;
}

/** examples/custom-groups.yaml: Talos and Kubernetes together, the lab's versions. */
export function customGroups(
  place: LabPlace,
  name = 'custom-groups',
  opts: { kubernetes?: boolean; rollback?: boolean } = {},
): string {
  const doc = forLab(example('custom-groups.yaml'), name, place);
  doc.setIn(['spec', 'target', 'talosVersion'], TALOS_TARGET);
  if (opts.kubernetes === false) doc.deleteIn(['spec', 'target', 'kubernetesVersion']);
  else doc.setIn(['spec', 'target', 'kubernetesVersion'], KUBERNETES_TARGET);
  if (opts.rollback) {
    // A node that does not come back Ready on the target within rebootTimeout is rolled back to the version it ran.
    doc.setIn(['spec', 'rollback'], doc.createNode({ onFailure: true }));
    const timeout = Object.assign(new Scalar('20s'), { comment: ' the lab reboots in seconds; the default is 10m' });
    doc.setIn(['spec', 'rebootTimeout'], timeout);
  }
  return text(doc);
}

/** examples/maintenance-window.yaml with one window opening at `opensAt` (UTC, whole minutes) for 30 minutes. */
export function maintenanceWindow(place: LabPlace, opensAt: Date): string {
  const doc = forLab(example('maintenance-window.yaml'), 'maintenance-window', place);
  doc.setIn(['spec', 'target', 'talosVersion'], TALOS_TARGET);
  doc.setIn(['spec', 'nodeSelector'], doc.createNode({ matchLabels: { environment: 'production' } }));
  doc.setIn(['spec', 'groups', 'workers', 'concurrency'], 3);
  const hhmm = (d: Date): Scalar =>
    Object.assign(new Scalar(d.toISOString().slice(11, 16)), { type: Scalar.QUOTE_DOUBLE });
  const window = doc.createNode({ startTime: hhmm(opensAt), endTime: hhmm(new Date(opensAt.getTime() + 30 * 60_000)) });
  window.commentBefore = ' the demo opens a window in a minute or so: no days, so every day';
  doc.setIn(['spec', 'maintenance', 'windows'], doc.createNode([window]));
  doc.deleteIn(['spec', 'maintenance', 'excludeDates']);
  return text(doc);
}

/** A Kubernetes-only plan (the Talos version stays): control plane first, then kube-proxy, then the workers. */
export function kubernetesUpgrade(place: LabPlace): string {
  const doc = forLab(example('custom-groups.yaml'), 'kubernetes-upgrade', place);
  doc.deleteIn(['spec', 'target', 'talosVersion']);
  doc.deleteIn(['spec', 'target', 'source']);
  doc.deleteIn(['spec', 'target', 'installer']);
  doc.setIn(['spec', 'target', 'kubernetesVersion'], KUBERNETES_TARGET);
  doc.setIn(['spec', 'groups'], doc.createNode({ workers: { concurrency: 3 } }));
  doc.setIn(['spec', 'strategy', 'order'], doc.createNode(['controlPlane', 'workers'], { flow: true }));
  return text(doc);
}

/**
 * examples/auto-update.yaml for the lab: the production nodes (worker-9, staging, stays out), a
 * release is taken as soon as it is out, checked every minute; no Secure Boot (the lab's nodes boot without).
 */
export function autoUpdateTemplate(place: LabPlace, name: string): string {
  const doc = forLab(example('auto-update.yaml'), name, place);
  const commented = (value: string, comment: string): Scalar =>
    Object.assign(new Scalar(value), { comment: ` ${comment}` });
  doc.setIn(
    ['spec', 'target', 'autoUpdate', 'checkInterval'],
    commented('1m', 'the minimum: the demo waits at most a minute for the next check'),
  );
  doc.setIn(
    ['spec', 'target', 'autoUpdate', 'minReleaseAge'],
    commented('0s', 'the demo takes a release at once (the example lets it age three days)'),
  );
  doc.deleteIn(['spec', 'target', 'secureBoot']);
  doc.setIn(['spec', 'nodeSelector'], doc.createNode({ matchLabels: { environment: 'production' } }));
  doc.setIn(['spec', 'groups'], doc.createNode({ workers: { concurrency: 3 } }));
  return text(doc);
}

/**
 * examples/fleet/clusters/<cluster>/nodes.yaml for the lab: checked every minute (the demo asks for
 * a check at once anyway), a release taken as soon as it is out, production's soak shortened to `soak`.
 */
export function fleetTemplate(place: LabPlace, cluster: 'staging' | 'production', soak: string): string {
  const doc = example(`fleet/clusters/${cluster}/nodes.yaml`);
  doc.setIn(['spec', 'delayBetweenNodes'], place.delay);
  doc.setIn(['spec', 'talosConfig', 'endpoints'], doc.createNode([place.talosEndpoint], { flow: false }));
  const commented = (value: string, comment: string): Scalar =>
    Object.assign(new Scalar(value), { comment: ` ${comment}` });
  doc.setIn(['spec', 'target', 'autoUpdate', 'checkInterval'], commented('1m', 'the minimum'));
  if (cluster === 'staging')
    doc.setIn(
      ['spec', 'target', 'autoUpdate', 'minReleaseAge'],
      commented('0s', 'the demo takes a release at once (the example lets it age a day)'),
    );
  else
    doc.setIn(
      ['spec', 'target', 'autoUpdate', 'promotion', 'soak'],
      commented(soak, "the demo soaks seconds, not the example's 72h"),
    );
  doc.setIn(['spec', 'groups'], doc.createNode({ workers: { concurrency: 2 } }));
  return text(doc);
}
